// editguard ui: the live timeline (server-sent events), the filters and
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

  function setLive(state, text) {
    var el = document.getElementById("live");
    if (!el) return;
    el.setAttribute("data-state", state);
    el.textContent = "live: " + text;
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

  function live() {
    var table = document.getElementById("timeline");
    if (!table || typeof EventSource === "undefined") return;
    var body = document.getElementById("rows");
    var src = new EventSource(table.getAttribute("data-events"));
    src.onopen = function () { setLive("open", "on"); };
    src.onerror = function () { setLive("retrying", "reconnecting"); };
    src.addEventListener("rows", function (ev) {
      var empty = document.getElementById("empty");
      if (empty) empty.remove();
      var f = fragment(ev.data);
      Array.prototype.slice.call(f.children).forEach(function (n) {
        var seq = n.getAttribute && n.getAttribute("data-seq");
        if (seq && body.querySelector('tr.row[data-seq="' + seq + '"]')) f.removeChild(n);
      });
      var added = f.children.length;
      body.insertBefore(f, body.firstChild);
      if (selected >= 0) selected += added;
    });
    src.addEventListener("trust", function (ev) {
      var el = document.getElementById("trust");
      if (el) el.innerHTML = ev.data;
    });
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
