package ui

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

func TestUICheckAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.1:8080", "[::1]:0", "localhost:0", "127.1.2.3:9"} {
		if err := CheckAddr(addr); err != nil {
			t.Errorf("CheckAddr(%q) = %v, want nil", addr, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:0", ":8080", "192.168.1.10:80", "[::]:0", "example.com:80", "127.0.0.1"} {
		if err := CheckAddr(addr); err == nil {
			t.Errorf("CheckAddr(%q) = nil, want a refusal", addr)
		}
	}
}

func TestUITokenRequired(t *testing.T) {
	f := newFixture(t)
	write(t, f.w.NewSession("agent"), "a.txt", "alpha\n")
	base := f.hs.URL
	plain := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range []string{"/", "/events", "/change/1", "/file?path=a.txt", "/session?name=agent", "/static/app.js", "/?t=wrong" + f.srv.Token()[:4]} {
		if code, _ := get(t, plain, base, p); code != http.StatusForbidden {
			t.Errorf("GET %s without the token: %d, want 403", p, code)
		}
	}
	// A forged cookie does not pass either.
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.AddCookie(&http.Cookie{Name: f.srv.cookie, Value: strings.Repeat("0", len(f.srv.Token()))})
	resp, err := plain.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET / with a wrong cookie: %d, want 403", resp.StatusCode)
	}
	// The URL token sets the cookie and redirects to the address without it.
	resp, err = plain.Get(f.srv.URL(f.hs.Listener.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("GET /?t=TOKEN: %d to %q, want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	c := f.client(t)
	for _, p := range []string{"/", "/change/" + strconv.FormatUint(lastSeq(t, f.w), 10), "/file?path=a.txt", "/session?name=agent", "/static/app.js"} {
		if code, body := get(t, c, base, p); code != http.StatusOK {
			t.Errorf("GET %s with the cookie: %d %s", p, code, body)
		}
	}
}

func TestUIHostChecked(t *testing.T) {
	f := newFixture(t)
	c := f.client(t)
	req, _ := http.NewRequest(http.MethodGet, f.hs.URL+"/", nil)
	req.Host = "attacker.example:80"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET / with Host attacker.example: %d, want 403", resp.StatusCode)
	}
}

func TestUICrossOriginPostRefused(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	write(t, agent, "a.txt", "one\n")
	write(t, agent, "a.txt", "two\n")
	v := versionWith(t, f.w, "a.txt", "one\n")
	c := f.client(t)
	form := url.Values{"path": {"a.txt"}, "version": {v}, "expect": {sum("two\n")}}
	for name, hdr := range map[string]map[string]string{
		"other origin":        {"Origin": "http://evil.example"},
		"other port":          {"Origin": "http://127.0.0.1:1"},
		"cross-site fetch":    {"Sec-Fetch-Site": "cross-site"},
		"same-site fetch":     {"Sec-Fetch-Site": "same-site"},
		"no origin, no fetch": {},
		"null origin":         {"Origin": "null"},
		"null origin, cross":  {"Origin": "null", "Sec-Fetch-Site": "cross-site"},
	} {
		req, _ := http.NewRequest(http.MethodPost, f.hs.URL+"/restore", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: POST /restore: %d, want 403", name, resp.StatusCode)
		}
		if got := readDisk(t, f.dir, "a.txt"); got != "two\n" {
			t.Fatalf("%s: the refused restore changed the file to %q", name, got)
		}
	}
	// A POST with the same origin but without the token is refused too.
	jar, _ := cookiejar.New(nil)
	if code, _ := post(t, &http.Client{Jar: jar}, f.hs.URL, "/restore", form); code != http.StatusForbidden {
		t.Errorf("same-origin POST without the token: %d, want 403", code)
	}
	// A GET cannot restore.
	if code, _ := get(t, c, f.hs.URL, "/restore?"+form.Encode()); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /restore: %d, want 405", code)
	}
	if code, body := post(t, c, f.hs.URL, "/restore", form); code != http.StatusOK || !strings.Contains(body, `id="restored"`) {
		t.Fatalf("same-origin POST with the token: %d\n%s", code, body)
	}
	if got := readDisk(t, f.dir, "a.txt"); got != "one\n" {
		t.Fatalf("after the restore the file holds %q, want %q", got, "one\n")
	}
}

func TestUISecurityHeaders(t *testing.T) {
	f := newFixture(t)
	write(t, f.w.NewSession("agent"), "a.txt", "alpha\n")
	c := f.client(t)
	resp, err := c.Get(f.hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := resp.Header
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"} {
		if !strings.Contains(h.Get("Content-Security-Policy"), want) {
			t.Errorf("Content-Security-Policy %q lacks %q", h.Get("Content-Security-Policy"), want)
		}
	}
	if strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") {
		t.Errorf("Content-Security-Policy allows inline code: %q", h.Get("Content-Security-Policy"))
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("headers: nosniff %q, referrer %q", h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
	}
	for _, p := range []string{"/", "/file?path=a.txt", "/change/" + strconv.FormatUint(lastSeq(t, f.w), 10)} {
		_, body := get(t, c, f.hs.URL, p)
		scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1)
		if len(scripts) != 1 || scripts[0] != `<script src="/static/app.js" defer>` {
			t.Errorf("%s: scripts %q, want only the page's own file", p, scripts)
		}
		if regexp.MustCompile(`(?i)\son[a-z]+=|style=|https?://`).MatchString(body) {
			t.Errorf("%s: inline handler, inline style or absolute URL in the page", p)
		}
	}
}

// hostile is a file name and content that would run script if a page
// used them as HTML.
const (
	hostileName    = `<img src=x onerror=alert(1)>.txt`
	hostileContent = "<script>alert(2)</script>\n<img src=x onerror=\"window.__pwned=1\">\n"
)

func TestUIEscapesNamesAndContents(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession(`agent"><b>x</b>`)
	write(t, agent, hostileName, "plain\n")
	write(t, agent, hostileName, hostileContent)
	c := f.client(t)
	seq := strconv.FormatUint(lastSeq(t, f.w), 10)
	for _, p := range []string{"/", "/change/" + seq, "/change/" + seq + "?view=split", "/file?path=" + url.QueryEscape(hostileName),
		"/session?name=" + url.QueryEscape(`agent"><b>x</b>`)} {
		code, body := get(t, c, f.hs.URL, p)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", p, code, body)
		}
		for _, bad := range []string{"<img src=x", "<script>alert", `"><b>x</b>`} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: the page holds %q unescaped", p, bad)
			}
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;.txt") {
			t.Errorf("GET %s: the file's name is not shown as text", p)
		}
	}
	_, body := get(t, c, f.hs.URL, "/change/"+seq)
	// The links carry the names, escaped once: following them finds the
	// file and the session.
	for _, link := range []struct{ re, want string }{
		{`href="(/file\?path=[^"]+)"`, `<span id="path">&lt;img src=x onerror=alert(1)&gt;.txt</span>`},
		{`href="(/session\?name=[^"]+)"`, `<span id="session-name">agent&#34;&gt;&lt;b&gt;x&lt;/b&gt;</span>`},
	} {
		m := regexp.MustCompile(link.re).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("the change view has no link %s", link.re)
		}
		if _, page := get(t, c, f.hs.URL, strings.ReplaceAll(m[1], "&amp;", "&")); !strings.Contains(page, link.want) {
			t.Errorf("the link %s does not lead to %s", m[1], link.want)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(2)&lt;/script&gt;") {
		t.Errorf("the change view does not show the content as text:\n%s", body)
	}
}

func TestUIRestoreRefusedWhenStale(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	write(t, agent, "s.txt", "one\n")
	write(t, agent, "s.txt", "two\n")
	c := f.client(t)
	_, page := get(t, c, f.hs.URL, "/file?path=s.txt")
	shown := regexp.MustCompile(`name="expect" value="([0-9a-f]{64})"`).FindStringSubmatch(page)
	if shown == nil || shown[1] != sum("two\n") {
		t.Fatalf("the file view does not carry the shown hash as the precondition: %v", shown)
	}
	write(t, f.w.NewSession("other"), "s.txt", "three\n")
	code, body := post(t, c, f.hs.URL, "/restore", url.Values{"path": {"s.txt"}, "version": {versionWith(t, f.w, "s.txt", "one\n")}, "expect": {shown[1]}})
	if code != http.StatusConflict || !strings.Contains(body, "STALE_FILE") {
		t.Fatalf("restore over a changed file: %d\n%s", code, body)
	}
	if got := readDisk(t, f.dir, "s.txt"); got != "three\n" {
		t.Fatalf("the refused restore left %q, want %q", got, "three\n")
	}
}

func TestUIRewindAndUndo(t *testing.T) {
	f := newFixture(t)
	setup, agent := f.w.NewSession("setup"), f.w.NewSession("agent")
	write(t, setup, "r1.txt", "r1 before\n")
	write(t, setup, "r2.txt", "r2 before\n")
	write(t, agent, "r1.txt", "r1 after\n")
	write(t, agent, "r2.txt", "r2 after\n")
	write(t, agent, "r3.txt", "r3 by the agent\n")
	write(t, setup, "r3.txt", "r3 changed since\n")
	c := f.client(t)
	code, body := post(t, c, f.hs.URL, "/rewind", url.Values{"session": {"agent"}, "dry": {"1"}})
	if code != http.StatusConflict || !strings.Contains(body, "would rewind 2 files; 0 unchanged, 1 refused") || !strings.Contains(body, "r1.txt") || !strings.Contains(body, "r2.txt") ||
		!strings.Contains(body, `<span class="refused-path">r3.txt</span>: <strong class="code">STALE_FILE</strong>`) {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	if readDisk(t, f.dir, "r1.txt") != "r1 after\n" {
		t.Fatal("the dry run changed r1.txt")
	}
	code, body = post(t, c, f.hs.URL, "/rewind", url.Values{"session": {"agent"}, "dry": {"0"}})
	if code != http.StatusConflict || !strings.Contains(body, "rewound 2 files; 0 unchanged, 1 refused") {
		t.Fatalf("rewind: %d\n%s", code, body)
	}
	for p, want := range map[string]string{"r1.txt": "r1 before\n", "r2.txt": "r2 before\n", "r3.txt": "r3 changed since\n"} {
		if got := readDisk(t, f.dir, p); got != want {
			t.Errorf("%s after the rewind: %q, want %q", p, got, want)
		}
	}
	// Undo of a patch transaction, from the session view.
	if _, err := agent.Read(context.Background(), "r1.txt", nil); err != nil {
		t.Fatal(err)
	}
	res, err := agent.ApplyPatch(context.Background(), "*** Begin Patch\n*** Update File: r1.txt\n@@\n-r1 before\n+r1 patched\n*** Add File: p.txt\n+new\n*** End Patch\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, sess := get(t, c, f.hs.URL, "/session?name=agent")
	if !strings.Contains(sess, "transaction "+res.TxID) {
		t.Fatalf("the session view does not offer the patch %s:\n%s", res.TxID, sess)
	}
	_, timeline := get(t, c, f.hs.URL, "/")
	if !strings.Contains(timeline, "patch "+res.TxID+": 2 files") {
		t.Errorf("the timeline does not show the patch as one row of 2 files")
	}
	code, body = post(t, c, f.hs.URL, "/undo", url.Values{"tx": {res.TxID}, "dry": {"0"}})
	if code != http.StatusOK || !strings.Contains(body, "undone as transaction") {
		t.Fatalf("undo: %d\n%s", code, body)
	}
	if got := readDisk(t, f.dir, "r1.txt"); got != "r1 before\n" {
		t.Errorf("r1.txt after the undo: %q", got)
	}
}

func TestUIChangeViewDiffs(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	write(t, agent, "crlf.txt", "one\r\ntwo\r\nthree\r\n")
	write(t, agent, "crlf.txt", "one\r\nTWO\r\nthree\r\n")
	c := f.client(t)
	seq := strconv.FormatUint(lastSeq(t, f.w), 10)
	_, inline := get(t, c, f.hs.URL, "/change/"+seq)
	for _, want := range []string{`<tr class="del"><td class="no">2</td><td class="no"></td><td class="code">-two</td></tr>`,
		`<tr class="add"><td class="no"></td><td class="no">2</td><td class="code">&#43;TWO</td></tr>`, "line endings crlf, unchanged"} {
		if !strings.Contains(inline, want) {
			t.Errorf("inline change view lacks %q", want)
		}
	}
	_, split := get(t, c, f.hs.URL, "/change/"+seq+"?view=split")
	if !strings.Contains(split, `<td class="no">2</td><td class="code del">two</td><td class="no">2</td><td class="code add">TWO</td>`) {
		t.Errorf("side-by-side view does not pair the lines:\n%s", split)
	}
	_, timeline := get(t, c, f.hs.URL, "/")
	if !strings.Contains(timeline, `<span class="add">+1</span> <span class="del">-1</span>`) {
		t.Errorf("the timeline does not count +1 -1")
	}
}

func TestUILargeDiffCut(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	var a, b strings.Builder
	for i := range 100_000 {
		a.WriteString("old line " + strconv.Itoa(i) + " of a large file, long enough to weigh\n")
		b.WriteString("new line " + strconv.Itoa(i) + " of a large file, long enough to weigh\n")
	}
	write(t, agent, "big.txt", a.String())
	write(t, agent, "big.txt", b.String())
	c := f.client(t)
	seq := strconv.FormatUint(lastSeq(t, f.w), 10)
	start := time.Now()
	code, page := get(t, c, f.hs.URL, "/change/"+seq)
	t.Logf("change view of a %d-byte change: %d bytes in %v", a.Len()+b.Len(), len(page), time.Since(start))
	if code != http.StatusOK || !strings.Contains(page, `id="show-all"`) {
		t.Fatalf("change view: %d, no show-all link", code)
	}
	if len(page) > 4*shownDiffBytes {
		t.Errorf("the change view is %d bytes: the diff was not cut", len(page))
	}
	_, full := get(t, c, f.hs.URL, "/change/"+seq+"/diff")
	if !strings.Contains(full, "-old line 99999 ") || !strings.Contains(full, "+new line 99999 ") || len(full) < a.Len()+b.Len() {
		t.Errorf("the whole diff is %d bytes and lacks the last lines", len(full))
	}
}

// TestUILiveUpdates: /updates answers at once with the rows of the
// records after since that the filters match, and the newest seq to ask
// from next.
func TestUILiveUpdates(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	write(t, agent, "a.txt", "one\n")
	c := f.client(t)
	since := lastSeq(t, f.w)
	ask := func(since uint64) update {
		t.Helper()
		code, body := get(t, c, f.hs.URL, "/updates?session=agent&since="+strconv.FormatUint(since, 10))
		if code != http.StatusOK {
			t.Fatalf("GET /updates: %d %s", code, body)
		}
		var u update
		if err := json.Unmarshal([]byte(body), &u); err != nil {
			t.Fatalf("GET /updates: %v in %s", err, body)
		}
		return u
	}
	if u := ask(since); u.Rows != "" || u.Newest != since {
		t.Fatalf("nothing new: %+v, want no rows and newest %d", u, since)
	}
	write(t, f.w.NewSession("someone-else"), "other.txt", "x\n")
	write(t, agent, "live.txt", "live\n")
	u := ask(since)
	if strings.Contains(u.Rows, "other.txt") {
		t.Fatalf("the session filter let another session's record through:\n%s", u.Rows)
	}
	if !strings.Contains(u.Rows, "live.txt") || strings.Contains(u.Rows, ">a.txt<") {
		t.Fatalf("the rows after %d are not live.txt alone:\n%s", since, u.Rows)
	}
	if u.Newest != lastSeq(t, f.w) {
		t.Errorf("newest %d, want the newest seq %d", u.Newest, lastSeq(t, f.w))
	}
	if u := ask(u.Newest); u.Rows != "" {
		t.Errorf("asked from the newest seq, got rows again:\n%s", u.Rows)
	}
}

// TestUITurns: a session's begin_turn marks divide its changes into turns
// on the timeline, and open the session.
func TestUITurns(t *testing.T) {
	f := newFixture(t)
	s := f.w.NewSession("agent")
	write(t, s, "a.txt", "one\n")
	if err := s.BeginTurn(); err != nil {
		t.Fatal(err)
	}
	write(t, s, "b.txt", "two\n")
	c := f.client(t)
	code, body := get(t, c, f.hs.URL, "/?session=agent")
	if code != 200 {
		t.Fatalf("GET /?session=agent: %d", code)
	}
	turn := strings.Index(body, `class="row turn`)
	a, b := strings.Index(body, ">a.txt<"), strings.Index(body, ">b.txt<")
	if turn < 0 || a < 0 || b < 0 || !(b < turn && turn < a) {
		t.Fatalf("the turn mark is not between the two turns' changes (b %d, turn %d, a %d):\n%s", b, turn, a, body)
	}
	if !strings.Contains(body[turn:], `data-href="/session?name=agent"`) {
		t.Error("the turn row does not open its session")
	}
}

// A file whose name is not UTF-8 is shown, compared and restored: the
// page is UTF-8, so its forms carry the name's exact bytes in path_hex
// beside the readable form a browser sends back.
func TestUIRestoreNonUTF8Name(t *testing.T) {
	f := newFixture(t)
	name := "caf\xe9.txt"
	agent := f.w.NewSession("agent")
	write(t, agent, name, "one\n")
	write(t, agent, name, "two\n")
	c := f.client(t)
	code, page := get(t, c, f.hs.URL, "/file?path="+url.QueryEscape(name))
	if code != http.StatusOK {
		t.Fatalf("GET the file view: %d\n%s", code, page)
	}
	wantHex := hex.EncodeToString([]byte(name))
	if !strings.Contains(page, `name="path_hex" value="`+wantHex+`"`) {
		t.Fatalf("the file view's forms do not carry path_hex %s:\n%s", wantHex, page)
	}
	// The compare form, sent with GET as a browser sends it.
	if code, page := get(t, c, f.hs.URL, "/file?path="+url.QueryEscape("caf\uFFFD.txt")+"&path_hex="+wantHex+"&from=current&to=current"); code != http.StatusOK || !strings.Contains(page, `id="current-sha">`+sum("two\n")) {
		t.Fatalf("compare with path_hex: %d\n%s", code, page)
	}
	form := url.Values{"path": {"caf\uFFFD.txt"}, "path_hex": {wantHex}, "version": {versionWith(t, f.w, name, "one\n")}, "expect": {sum("two\n")}}
	if code, body := post(t, c, f.hs.URL, "/restore", form); code != http.StatusOK {
		t.Fatalf("restore: %d\n%s", code, body)
	}
	if got := readDisk(t, f.dir, name); got != "one\n" {
		t.Fatalf("after the restore the file holds %q, want %q", got, "one\n")
	}
	if _, err := os.Lstat(filepath.Join(f.dir, "caf\uFFFD.txt")); err == nil {
		t.Fatal("the restore made a look-alike file named with U+FFFD")
	}
	if _, err := f.w.VerifyLedger(); err != nil {
		t.Fatal(err)
	}
	// Hex that names another path than the readable form is refused.
	form.Set("path_hex", hex.EncodeToString([]byte("caf\xea.txt")))
	form.Set("path", "other\uFFFD")
	if code, body := post(t, c, f.hs.URL, "/restore", form); code != http.StatusBadRequest {
		t.Fatalf("restore with a mismatched path_hex: %d\n%s", code, body)
	}
}

// A change's view says how long it took and where the time went.
func TestUIChangeShowsTiming(t *testing.T) {
	f := newFixture(t)
	agent := f.w.NewSession("agent")
	write(t, agent, "t.txt", "one\n")
	c := f.client(t)
	code, body := get(t, c, f.hs.URL, "/change/"+strconv.FormatUint(lastSeq(t, f.w), 10))
	if code != http.StatusOK || !regexp.MustCompile(`<td id="timing">\d+\.\d ms: lock wait \d+\.\d, check \d+\.\d, durable \d+\.\d</td>`).MatchString(body) {
		t.Fatalf("the change view does not show the timing: %d\n%s", code, body)
	}
}

// TestUIRewindWriterUnknown: a dry run of a session whose shell command
// changed a file while its writer was unknown refuses that file and
// offers to check again with force; that dry run would rewind it, and the
// rewind it leads to does.
func TestUIRewindWriterUnknown(t *testing.T) {
	f := newFixture(t)
	setup, agent := f.w.NewSession("setup"), f.w.NewSession("agent")
	write(t, setup, "u.txt", "before\n")
	cmd, err := agent.BeginCommand(context.Background(), "echo after > u.txt", &editguard.CommandOptions{Tool: "Bash", WriterUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "u.txt"), []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := f.client(t)
	code, body := post(t, c, f.hs.URL, "/rewind", url.Values{"session": {"agent"}, "dry": {"1"}})
	if code != http.StatusConflict || !strings.Contains(body, `<span class="refused-path">u.txt</span>: <strong class="code">STALE_FILE</strong>`) ||
		!strings.Contains(body, `id="rewind-force-dry"`) || strings.Contains(body, `id="rewind-go"`) {
		t.Fatalf("dry run: %d, want u.txt refused and a forced check offered\n%s", code, body)
	}
	code, body = post(t, c, f.hs.URL, "/rewind", url.Values{"session": {"agent"}, "dry": {"1"}, "force": {"1"}})
	if code != http.StatusOK || !strings.Contains(body, "would rewind 1 files") || !strings.Contains(body, `<input type="hidden" name="force" value="1"><button type="submit" id="rewind-go">`) {
		t.Fatalf("forced dry run: %d\n%s", code, body)
	}
	code, body = post(t, c, f.hs.URL, "/rewind", url.Values{"session": {"agent"}, "dry": {"0"}, "force": {"1"}})
	if code != http.StatusOK || readDisk(t, f.dir, "u.txt") != "before\n" {
		t.Fatalf("forced rewind: %d, u.txt %q\n%s", code, readDisk(t, f.dir, "u.txt"), body)
	}
}
