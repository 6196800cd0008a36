// editguard ui: the live timeline (polled), the filters and
// keyboard navigation. It inserts only HTML the server rendered with
// html/template, and runs no code it receives.
"use strict";

(function () {
  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("tr.row"));
  }

  var selected = -1;

  function select(i) {
    var all = rows();
    if (all.length === 0) return;
    i = Math.max(0, Math.min(all.length - 1, i));
    if (selected >= 0 && all[selected]) all[selected].classList.remove("selected");
    selected = i;
    all[i].classList.add("selected");
    all[i].scrollIntoView({block: "nearest"});
  }

  function open() {
    var all = rows();
    if (selected < 0 || !all[selected]) return;
    var href = all[selected].getAttribute("data-href");
    if (href) window.location.assign(href);
  }

  document.addEventListener("keydown", function (ev) {
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.key === "j") { select(selected + 1); ev.preventDefault(); }
    else if (ev.key === "k") { select(selected - 1); ev.preventDefault(); }
    else if (ev.key === "Enter" && selected >= 0) { open(); ev.preventDefault(); }
  });

  // setLive says what the timeline shows: "snapshot" (the page as the
  // server made it, not followed), "open" (live) or "offline" (the
  // server does not answer; the page is as of its last answer).
  function setLive(state, text) {
    var el = document.getElementById("live");
    if (!el) return;
    el.setAttribute("data-state", state);
    el.textContent = text;
  }

  // fragment parses server-rendered rows into a fragment of table rows.
  function fragment(html) {
    var t = document.createElement("template");
    t.innerHTML = "<table><tbody>" + html + "</tbody></table>";
    var f = document.createDocumentFragment();
    var body = t.content.querySelector("tbody");
    while (body && body.firstChild) f.appendChild(body.firstChild);
    return f;
  }

  function addRows(body, html) {
    var empty = document.getElementById("empty");
    if (empty) empty.remove();
    var f = fragment(html);
    Array.prototype.slice.call(f.children).forEach(function (n) {
      var seq = n.getAttribute && n.getAttribute("data-seq");
      if (seq && body.querySelector('tr.row[data-seq="' + seq + '"]')) f.removeChild(n);
    });
    var added = f.children.length;
    body.insertBefore(f, body.firstChild);
    if (selected >= 0) selected += added;
  }

  // livePeriod is the time between two polls of the live timeline, and
  // offlinePeriod the time between two tries while the server does not
  // answer.
  var livePeriod = 1000, offlinePeriod = 3000;

  // live polls the server for the rows after the newest it has shown. Each
  // request is answered at once and the next is made a moment later, so
  // no request stays open: a headless browser on virtual time
  // (--virtual-time-budget) finishes the page. A page that is not served
  // (a saved copy opened from a file) or that the server made as a
  // snapshot (?snapshot=1, no data-updates) says it is a snapshot.
  function live() {
    var table = document.getElementById("timeline");
    var status = document.getElementById("live");
    if (!table || !status) return;
    var snapshot = status.getAttribute("data-snapshot") || "snapshot";
    var url = table.getAttribute("data-updates");
    if (!url || !/^https?:$/.test(window.location.protocol) || typeof window.fetch !== "function") {
      setLive("snapshot", snapshot);
      return;
    }
    var body = document.getElementById("rows");
    var since = table.getAttribute("data-since") || "";
    var trust = null;
    // asOf is when the page last showed the ledger: when the server made
    // it, then each answer's time.
    var asOf = snapshot.replace(/^snapshot of /, "");
    function poll() {
      var u = url + (url.indexOf("?") < 0 ? "?" : "&") + "since=" + encodeURIComponent(since);
      window.fetch(u, {credentials: "same-origin", cache: "no-store"}).then(function (resp) {
        if (!resp.ok) throw new Error("HTTP " + resp.status);
        return resp.json();
      }).then(function (up) {
        setLive("open", "live");
        asOf = new Date().toLocaleString();
        if (up.rows) addRows(body, up.rows);
        if (up.newest) since = String(up.newest);
        if (up.trust && up.trust !== trust) {
          trust = up.trust;
          var el = document.getElementById("trust");
          if (el) el.innerHTML = up.trust;
        }
        window.setTimeout(poll, livePeriod);
      }).catch(function () {
        setLive("offline", "offline: the server does not answer; the page is as of " + asOf);
        window.setTimeout(poll, offlinePeriod);
      });
    }
    poll();
  }

  function filters() {
    var form = document.getElementById("filters");
    if (!form) return;
    Array.prototype.forEach.call(form.querySelectorAll("select"), function (s) {
      s.addEventListener("change", function () { form.submit(); });
    });
  }

  function rowClicks() {
    document.addEventListener("click", function (ev) {
      var tr = ev.target.closest ? ev.target.closest("tr.row") : null;
      if (!tr || ev.target.closest("a, summary, details, button, form")) return;
      var href = tr.getAttribute("data-href");
      if (href) window.location.assign(href);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    live();
    filters();
    rowClicks();
  });
})();
