package ui

import (
	"context"
	"errors"
	"flag"
	"iter"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/editguard/editguard"
)

// screenshots, when set, is the directory the browser test saves its
// screenshots of the timeline and of a change view in (ui-timeline.png,
// ui-change.png).
var screenshots = flag.String("ui.screenshots", "", "save screenshots of the timeline and a change view in `DIR`")

// browserWait bounds each wait for the page: generous, for a busy machine.
const browserWait = 20 * time.Second

// chromium returns the path of a Chromium or Chrome binary, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser drives one headless Chromium for a test: it records every URL
// the pages request and every JavaScript dialog they open.
type browser struct {
	ctx     context.Context
	mu      sync.Mutex
	urls    []string
	dialogs []string
}

// newBrowser starts Chromium, or skips the test when there is none. The
// browser and all its processes end with the test.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("no chromium binary found (chromium, chromium-browser, google-chrome, headless-shell): the browser tests need one")
	}
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 860), chromedp.Flag("disable-gpu", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &browser{ctx: ctx}
	t.Cleanup(func() {
		cancel()
		acancel()
		checkNoBrowserLeft(t, profile)
	})
	start := time.Now()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go b.record(requests, dialogs)
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: "window.__alerts = []; window.alert = function (m) { window.__alerts.push(String(m)); };"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s started in %v", path, time.Since(start))
	return b
}

// record keeps every request's URL and closes and keeps every dialog,
// until the browser's context ends.
func (b *browser) record(requests iter.Seq2[network.EventRequestWillBeSent, error], dialogs iter.Seq2[page.EventJavascriptDialogOpening, error]) {
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(b.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	for ev, err := range requests {
		if err != nil {
			return
		}
		b.mu.Lock()
		b.urls = append(b.urls, ev.Request.URL)
		b.mu.Unlock()
	}
}

// checkNoBrowserLeft fails the test if a process of the browser that used
// profile is still running a few seconds after the browser was closed.
func checkNoBrowserLeft(t *testing.T, profile string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesWith(profile)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("chromium processes left running: %v", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesWith returns the pids whose command line names s.
func processesWith(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), s) {
			out = append(out, e.Name())
		}
	}
	return out
}

// run runs actions with a deadline.
func (b *browser) run(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// trigger runs an action that navigates away (a click that submits a
// form, Enter on a link): the protocol may report the navigation as an
// error of the action itself, so an error is only logged, and the caller
// waits for the page that follows.
func (b *browser) trigger(t *testing.T, what string, action chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, action); err != nil {
		t.Logf("%s: %v (waiting for the page that follows)", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds, and returns how
// long that took. A page that is navigating meanwhile is polled again.
func (b *browser) waitFor(t *testing.T, what, cond string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(browserWait)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+cond+")"))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	where, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("location.href + '\\n' + document.body.innerText.slice(0, 2000)"))
	t.Fatalf("wait for %s: not within %v (last error: %v); the page: %s", what, browserWait, last, where)
	return 0
}

// texts returns the text of every element selector matches.
func (b *browser) texts(t *testing.T, selector string) []string {
	t.Helper()
	return eval[[]string](t, b, `Array.from(document.querySelectorAll(`+strconv.Quote(selector)+`)).map(e => e.textContent)`)
}

func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkLoopbackOnly fails the test if any request the browser made went
// anywhere but the page's server on 127.0.0.1.
func (b *browser) checkLoopbackOnly(t *testing.T, host string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.urls) == 0 {
		t.Fatal("the browser recorded no request at all")
	}
	for _, u := range b.urls {
		p, err := url.Parse(u)
		if err != nil || p.Hostname() != "127.0.0.1" || p.Host != host {
			t.Errorf("request to %q, not to the page's server %s", u, host)
		}
	}
}

func TestUIBrowser(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t)
	setup, agent := f.w.NewSession("setup"), f.w.NewSession("agent-1")
	write(t, setup, "notes.txt", "alpha\nbeta\ndelta\n")
	write(t, agent, "notes.txt", "alpha\nbeta\ndelta\nepsilon\n")
	host := f.hs.Listener.Addr().String()
	base := "http://" + host
	b.run(t, "enter with the token", chromedp.Navigate(f.srv.URL(host)))

	t.Run("timeline is live", func(t *testing.T) {
		b.run(t, "open the page", chromedp.Navigate(f.srv.URL(host)))
		b.waitFor(t, "the live stream", `document.querySelector('#live[data-state="open"]') !== null`)
		eval[chromedp.Void](t, b, `window.__samePage = "yes"`)
		res := write(t, agent, "notes.txt", "alpha\ngamma\ndelta\nepsilon\n")
		seq := lastSeq(t, f.w)
		took := b.waitFor(t, "the new row", `document.querySelector('tr.row.live[data-seq="`+strconv.FormatUint(seq, 10)+`"]') !== null`)
		t.Logf("the edit (%s) appeared in the timeline after %v", res.SHA256[:12], took)
		if same := eval[string](t, b, `window.__samePage || "reloaded"`); same != "yes" {
			t.Fatal("the page was reloaded: the row did not come over the live stream")
		}
		row := b.texts(t, `tr.row[data-seq="`+strconv.FormatUint(seq, 10)+`"]`)
		if len(row) != 1 || !strings.Contains(row[0], "notes.txt") || !strings.Contains(row[0], "+1 -1") || !strings.Contains(row[0], "agent-1") {
			t.Fatalf("the new row reads %q", row)
		}
	})

	t.Run("change view shows the diff", func(t *testing.T) {
		// j selects the newest row, Enter opens it.
		b.run(t, "select with j", chromedp.KeyEvent("j"))
		b.waitFor(t, "the selection", `document.querySelector('tr.row.selected') === document.querySelector('tr.row')`)
		b.trigger(t, "open with Enter", chromedp.KeyEvent("\r"))
		b.waitFor(t, "the change view", `document.querySelector('#diff') !== null`)
		dels, adds := b.texts(t, "#diff tr.del td.code"), b.texts(t, "#diff tr.add td.code")
		if strings.Join(dels, "|") != "-beta" || strings.Join(adds, "|") != "+gamma" {
			t.Fatalf("diff removes %q and adds %q, want -beta and +gamma", dels, adds)
		}
		b.trigger(t, "side by side", chromedp.Click(chromedp.CSS("#split-link")))
		b.waitFor(t, "the side-by-side view", `document.querySelector('table.diff.split') !== null`)
		left, right := b.texts(t, "table.split td.code.del"), b.texts(t, "table.split td.code.add")
		if strings.Join(left, "|") != "beta" || strings.Join(right, "|") != "gamma" {
			t.Fatalf("side by side: %q | %q", left, right)
		}
	})

	t.Run("restore", func(t *testing.T) { testBrowserRestore(t, b, f, base) })
	t.Run("rewind", func(t *testing.T) { testBrowserRewind(t, b, f, base) })
	t.Run("hostile names run no script", func(t *testing.T) { testBrowserHostile(t, b, f, base) })

	b.checkLoopbackOnly(t, host)
}

// restoreVersion opens the file view of p, lets before run (after the page
// showed the file), and clicks restore on the version holding content.
func restoreVersion(t *testing.T, b *browser, f *fixture, base, p, content string, before func()) {
	t.Helper()
	v := versionWith(t, f.w, p, content)
	b.run(t, "open the file view", chromedp.Navigate(base+"/file?path="+url.QueryEscape(p)))
	b.waitFor(t, "the versions", `document.querySelector('#versions') !== null`)
	before()
	b.trigger(t, "restore "+v, chromedp.Click(chromedp.CSS(`button.restore[data-version="`+v+`"]`)))
	b.waitFor(t, "the restore's answer", `document.querySelector('#restored, #error-code') !== null`)
}

func testBrowserRestore(t *testing.T, b *browser, f *fixture, base string) {
	agent := f.w.NewSession("agent-2")
	write(t, agent, "r.txt", "first\n")
	write(t, agent, "r.txt", "second\n")
	restoreVersion(t, b, f, base, "r.txt", "first\n", func() {})
	if got := b.texts(t, "#restored"); len(got) != 1 {
		t.Fatalf("no restore confirmation; error %q", b.texts(t, "#error"))
	}
	if got := readDisk(t, f.dir, "r.txt"); got != "first\n" {
		t.Fatalf("after the restore r.txt holds %q, want %q", got, "first\n")
	}

	write(t, agent, "s.txt", "one\n")
	write(t, agent, "s.txt", "two\n")
	restoreVersion(t, b, f, base, "s.txt", "one\n", func() {
		write(t, f.w.NewSession("someone-else"), "s.txt", "three\n")
	})
	if code := b.texts(t, "#error-code"); len(code) != 1 || code[0] != "STALE_FILE" {
		t.Fatalf("restore over a changed file shows %q, want STALE_FILE", code)
	}
	if got := readDisk(t, f.dir, "s.txt"); got != "three\n" {
		t.Fatalf("the refused restore left s.txt as %q, want %q", got, "three\n")
	}
}

func testBrowserRewind(t *testing.T, b *browser, f *fixture, base string) {
	setup, agent := f.w.NewSession("setup-3"), f.w.NewSession("agent-3")
	write(t, setup, "w1.txt", "w1 before\n")
	write(t, setup, "w2.txt", "w2 before\n")
	write(t, agent, "w1.txt", "w1 after\n")
	write(t, agent, "w2.txt", "w2 after\n")
	b.run(t, "open the session view", chromedp.Navigate(base+"/session?name=agent-3"))
	b.trigger(t, "dry run", chromedp.Click(chromedp.CSS("#rewind-dry")))
	b.waitFor(t, "the dry run", `document.querySelector('#rewind-summary') !== null`)
	paths := b.texts(t, ".rewound-path")
	if strings.Join(paths, " ") != "w1.txt w2.txt" && strings.Join(paths, " ") != "w2.txt w1.txt" {
		t.Fatalf("the dry run lists %q, want w1.txt and w2.txt", paths)
	}
	if readDisk(t, f.dir, "w1.txt") != "w1 after\n" {
		t.Fatal("the dry run changed w1.txt")
	}
	b.trigger(t, "rewind", chromedp.Click(chromedp.CSS("#rewind-go")))
	b.waitFor(t, "the rewind", `document.querySelector('#rewind-summary') !== null && document.querySelector('#rewind-go') === null`)
	if s := b.texts(t, "#rewind-summary"); len(s) != 1 || !strings.HasPrefix(s[0], "rewound 2 files") {
		t.Fatalf("rewind summary %q", s)
	}
	for p, want := range map[string]string{"w1.txt": "w1 before\n", "w2.txt": "w2 before\n"} {
		if got := readDisk(t, f.dir, p); got != want {
			t.Errorf("%s after the rewind: %q, want %q", p, got, want)
		}
	}
}

func testBrowserHostile(t *testing.T, b *browser, f *fixture, base string) {
	b.run(t, "open the timeline", chromedp.Navigate(base+"/"))
	b.waitFor(t, "the live stream", `document.querySelector('#live[data-state="open"]') !== null`)
	agent := f.w.NewSession("agent-4")
	write(t, agent, hostileName, "plain\n")
	write(t, agent, hostileName, hostileContent)
	seq := strconv.FormatUint(lastSeq(t, f.w), 10)
	b.waitFor(t, "the hostile row", `document.querySelector('tr.row[data-seq="`+seq+`"]') !== null`)
	checkInert(t, b, "timeline")
	if row := b.texts(t, `tr.row[data-seq="`+seq+`"] td.files`); len(row) != 1 || row[0] != hostileName {
		t.Fatalf("the row shows the file as %q, want %q", row, hostileName)
	}
	b.run(t, "open the change", chromedp.Navigate(base+"/change/"+seq))
	b.waitFor(t, "the change view", `document.querySelector('#diff') !== null`)
	checkInert(t, b, "change view")
	if adds := b.texts(t, "#diff tr.add td.code"); len(adds) != 2 || adds[0] != "+<script>alert(2)</script>" {
		t.Fatalf("the diff adds %q, want the content as text", adds)
	}
	b.run(t, "open the file", chromedp.Navigate(base+"/file?path="+url.QueryEscape(hostileName)))
	b.waitFor(t, "the file view", `document.querySelector('#path') !== null`)
	checkInert(t, b, "file view")
	if p := b.texts(t, "#path"); len(p) != 1 || p[0] != hostileName {
		t.Fatalf("the file view names %q", p)
	}
}

// checkInert fails the test if the page holds an element the hostile name
// or content would make, or if any script of theirs ran.
func checkInert(t *testing.T, b *browser, where string) {
	t.Helper()
	imgs := eval[int](t, b, `document.querySelectorAll('img').length`)
	scripts := eval[int](t, b, `document.querySelectorAll('script:not([src="/static/app.js"])').length`)
	pwned := eval[string](t, b, `String(window.__pwned)`)
	alerts := eval[string](t, b, `JSON.stringify(window.__alerts)`)
	if imgs != 0 || scripts != 0 || pwned != "undefined" || alerts != "[]" {
		t.Errorf("%s: %d img, %d foreign script elements, __pwned %s, alerts %s", where, imgs, scripts, pwned, alerts)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.dialogs) != 0 {
		t.Errorf("%s: dialogs opened: %q", where, b.dialogs)
	}
}

// TestUIScreenshots saves the screenshots of the documentation, with
// -ui.screenshots DIR: the timeline of a workspace where a hook's agent,
// an MCP agent and the CLI worked, and the change view of an edit.
func TestUIScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("screenshots are taken with -ui.screenshots DIR")
	}
	b := newBrowser(t)
	f := newFixture(t)
	ctx := context.Background()
	hook, mcp, cli := f.w.NewSession("claude-7f3a21"), f.w.NewSession("mcp-1b2c3d4e"), f.w.NewSession("cli-uid1000")
	server := "package server\n\nimport \"net/http\"\n\nfunc Handler() http.Handler {\n\tmux := http.NewServeMux()\n\tmux.HandleFunc(\"/\", index)\n\treturn mux\n}\n"
	write(t, hook, "src/server.go", server)
	write(t, hook, "src/server.go", strings.Replace(server, "\tmux.HandleFunc(\"/\", index)\n", "\tmux.HandleFunc(\"GET /{$}\", index)\n\tmux.HandleFunc(\"GET /health\", health)\n", 1))
	write(t, cli, "README.md", "# demo\n\nRun it with go run ./cmd/demo.\n")
	write(t, cli, "src/util.go", "package server\n\nfunc clamp(x, lo, hi int) int { return max(lo, min(x, hi)) }\n")
	for _, p := range []string{"README.md", "src/util.go"} {
		if _, err := mcp.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mcp.ApplyPatch(ctx, "*** Begin Patch\n*** Update File: README.md\n@@\n-Run it with go run ./cmd/demo.\n+Run it with go run ./cmd/demo -addr :8080.\n*** Update File: src/util.go\n@@\n-func clamp(x, lo, hi int) int { return max(lo, min(x, hi)) }\n+// clamp returns x within [lo, hi].\n+func clamp(x, lo, hi int) int { return max(lo, min(x, hi)) }\n*** End Patch\n", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Read(ctx, "README.md", nil); err != nil {
		t.Fatal(err)
	}
	write(t, hook, "README.md", "# demo\n\nRun it with go run ./cmd/demo -addr :9090.\n")
	if _, err := cli.Write(ctx, "README.md", "# Demo\n", nil); !errors.Is(err, editguard.ErrStaleFile) {
		t.Fatalf("the edit over a changed file: %v, want STALE_FILE", err)
	}
	// The MCP agent's edit of server.go merges over the hook agent's
	// change of its first line, made after the MCP agent read it.
	if _, err := mcp.Read(ctx, "src/server.go", nil); err != nil {
		t.Fatal(err)
	}
	now := readDisk(t, f.dir, "src/server.go")
	write(t, hook, "src/server.go", strings.Replace(now, "package server\n", "// Package server serves the demo.\npackage server\n", 1))
	if res, err := mcp.Edit(ctx, "src/server.go", []editguard.Edit{{OldString: "\treturn mux\n", NewString: "\treturn withLog(mux)\n"}}, nil); err != nil || !res.Merged {
		t.Fatalf("the edit over the hook's change: %v (merged: %v), want merged", err, res != nil && res.Merged)
	}
	b.run(t, "open the page", chromedp.Navigate(f.srv.URL(f.hs.Listener.Addr().String())))
	b.waitFor(t, "the verified chain", `document.querySelector('#live[data-state="open"]') !== null && document.querySelector('[data-trust="ok"]') !== null && /ledger ok: [1-9]/.test(document.querySelector('#trust').textContent)`)
	b.run(t, "open the patch", chromedp.Click(chromedp.CSS("details summary")))
	b.screenshot(t, "ui-timeline.png")
	b.run(t, "open the edit", chromedp.Navigate("http://"+f.hs.Listener.Addr().String()+"/change/"+strconv.FormatUint(seqOf(t, f.w, "src/server.go"), 10)+"?view=split"))
	b.waitFor(t, "the diff", `document.querySelector('#diff') !== null`)
	b.screenshot(t, "ui-change.png")
}

// seqOf returns the seq of the last record of p.
func seqOf(t *testing.T, w *editguard.Workspace, p string) uint64 {
	t.Helper()
	var seq uint64
	if err := w.Log(editguard.LogFilter{Path: p, Last: 1}, func(r *editguard.LedgerRecord) error {
		seq = r.Seq
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return seq
}
