package ui

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestUIBrowserAudit: the page in Chromium as a person auditing an
// agent's work reads it.
func TestUIBrowserAudit(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t)
	host := f.hs.Listener.Addr().String()
	base := "http://" + host
	b.run(t, "enter with the token", chromedp.Navigate(f.srv.URL(host)))

	t.Run("refusal diff colours", func(t *testing.T) {
		agent, other := f.w.NewSession("agent-c"), f.w.NewSession("other-c")
		write(t, other, "r.txt", tenLines)
		readFile(t, agent, "r.txt")
		write(t, other, "r.txt", strings.Replace(tenLines, "five\n", "FIVE\n", 1))
		staleWrite(t, agent, "r.txt", "mine\n")
		b.run(t, "open the refusal", chromedp.Navigate(base+"/change/"+strconv.FormatUint(lastSeq(t, f.w), 10)))
		b.waitFor(t, "the refusal's diff", `document.querySelector('#error table.diff tr.ctx') !== null`)
		style := func(sel, prop string) []string {
			return eval[[]string](t, b, `Array.from(document.querySelectorAll(`+strconv.Quote(sel)+`)).map(e => getComputedStyle(e)[`+strconv.Quote(prop)+`])`)
		}
		red := "rgb(179, 20, 27)"
		body := eval[string](t, b, `getComputedStyle(document.body).color`)
		ctx := style("#error table.diff tr.ctx td.code", "color")
		if len(ctx) == 0 {
			t.Fatal("the refusal's diff has no context lines")
		}
		for _, c := range ctx {
			if c != body {
				t.Errorf("a context line's colour is %s, want the text's own %s", c, body)
			}
		}
		if c := style("#error table.diff tr.add td.code", "color"); len(c) != 1 || c[0] != "rgb(20, 115, 27)" {
			t.Errorf("the added line's colour %v, want green", c)
		}
		if c := style("#error table.diff tr.del td.code", "color"); len(c) != 1 || c[0] != red {
			t.Errorf("the removed line's colour %v, want red", c)
		}
		if bg := style("#error table.diff tr.del td.code", "backgroundColor"); len(bg) != 1 || bg[0] != "rgb(255, 235, 233)" {
			t.Errorf("removed lines' background %v, want the red of removed lines", bg)
		}
		if bg := style("#error table.diff tr.add td.code", "backgroundColor"); len(bg) != 1 || bg[0] != "rgb(230, 255, 236)" {
			t.Errorf("added lines' background %v, want the green of added lines", bg)
		}
		for _, bg := range style("#error table.diff tr.ctx td.code", "backgroundColor") {
			if bg != "rgba(0, 0, 0, 0)" {
				t.Errorf("a context line's background is %s, want none (the diff's white)", bg)
			}
		}
		if c := style("#error-code", "color"); len(c) != 1 || c[0] != red {
			t.Errorf("the error code's colour %v, want red", c)
		}
	})

	t.Run("merged edit", func(t *testing.T) {
		theirs := mergedEdit(t, f.w.NewSession("agent-m"), f.w.NewSession("other-m"), "m.txt")
		seq := strconv.FormatUint(lastSeq(t, f.w), 10)
		b.run(t, "open the timeline", chromedp.Navigate(base+"/"))
		b.waitFor(t, "the merged row", `document.querySelector('tr.row[data-seq="`+seq+`"]') !== null`)
		cell := b.texts(t, `tr.row[data-seq="`+seq+`"] td.outcome-cell`)
		want := "merged over record " + strconv.FormatUint(theirs, 10) + " (other-m)"
		if len(cell) != 1 || cell[0] != want {
			t.Errorf("the merged edit's outcome reads %q, want %q", cell, want)
		}
		b.run(t, "open the change", chromedp.Navigate(base+"/change/"+seq))
		b.waitFor(t, "the change view", `document.querySelector('#over') !== null`)
		if over := b.texts(t, "#over"); len(over) != 1 || !strings.HasPrefix(over[0], "merged over") || !strings.Contains(over[0], "record "+strconv.FormatUint(theirs, 10)) {
			t.Errorf("the change view says %q", over)
		}
	})

	t.Run("rewind unchanged folded", func(t *testing.T) {
		agent, setup := f.w.NewSession("agent-r"), f.w.NewSession("setup-r")
		write(t, setup, "rc.txt", "before\n")
		write(t, agent, "rc.txt", "after\n")
		for _, p := range []string{"ru1.txt", "ru2.txt", "ru3.txt"} {
			write(t, setup, p, "x\n")
			write(t, agent, p, "y\n")
			write(t, agent, p, "x\n")
		}
		b.run(t, "open the session view", chromedp.Navigate(base+"/session?name=agent-r"))
		b.trigger(t, "dry run", chromedp.Click(chromedp.CSS("#rewind-dry")))
		b.waitFor(t, "the dry run", `document.querySelector('#rewind-summary') !== null`)
		if open := eval[bool](t, b, `document.querySelector('#unchanged').open`); open {
			t.Error("the dry run's unchanged files are not folded")
		}
		if s := b.texts(t, "#unchanged > summary"); len(s) != 1 || !strings.HasPrefix(s[0], "3 unchanged") {
			t.Errorf("the fold reads %q, want 3 unchanged", s)
		}
		if vis := eval[int](t, b, `Array.from(document.querySelectorAll('.unchanged-path')).filter(e => e.checkVisibility()).length`); vis != 0 {
			t.Errorf("%d unchanged files shown before the fold is opened", vis)
		}
		b.trigger(t, "rewind", chromedp.Click(chromedp.CSS("#rewind-go")))
		b.waitFor(t, "the rewind", `document.querySelector('#rewind-summary') !== null && document.querySelector('#rewind-go') === null`)
		b.run(t, "open the timeline", chromedp.Navigate(base+"/?session=ui-test&tool=rewind"))
		b.waitFor(t, "the rewind's row", `document.querySelector('tr.row') !== null`)
		row := `tr.row:first-child `
		if n := eval[int](t, b, `document.querySelectorAll('`+row+`.outcome.refused').length`); n != 0 {
			t.Errorf("the rewind's row shows %d red refusals", n)
		}
		if s := b.texts(t, row+"details.unchanged > summary"); len(s) != 1 || s[0] != "3 unchanged" {
			t.Fatalf("the rewind's row folds %q, want 3 unchanged", s)
		}
		b.run(t, "open the row's files", chromedp.Click(chromedp.CSS(row+"td.files > details > summary")))
		if vis := eval[int](t, b, `Array.from(document.querySelectorAll('`+row+`details.unchanged li')).filter(e => e.checkVisibility()).length`); vis != 0 {
			t.Errorf("%d unchanged files shown with their fold closed", vis)
		}
		b.run(t, "open the fold", chromedp.Click(chromedp.CSS(row+"details.unchanged > summary")))
		if vis := eval[int](t, b, `Array.from(document.querySelectorAll('`+row+`details.unchanged li')).filter(e => e.checkVisibility()).length`); vis != 3 {
			t.Errorf("%d unchanged files shown with their fold open, want 3", vis)
		}
		badges := b.texts(t, row+"details.unchanged .outcome.other")
		if len(badges) != 3 || badges[0] != "unchanged" {
			t.Errorf("the unchanged files' badges: %q, want three neutral unchanged", badges)
		}
		if c := eval[string](t, b, `getComputedStyle(document.querySelector('`+row+`details.unchanged .outcome')).backgroundColor`); c != "rgba(0, 0, 0, 0)" {
			t.Errorf("an unchanged badge has the background %s, want none", c)
		}
	})

	t.Run("live, snapshot and offline", func(t *testing.T) {
		b.run(t, "open the timeline", chromedp.Navigate(base+"/"))
		b.waitFor(t, "live", `document.querySelector('#live[data-state="open"]') !== null`)
		if s := b.texts(t, "#live"); len(s) != 1 || s[0] != "live" {
			t.Errorf("the status reads %q, want live", s)
		}
		b.run(t, "open a snapshot", chromedp.Navigate(base+"/?snapshot=1"))
		b.waitFor(t, "the page", `document.readyState === "complete"`)
		if s := b.texts(t, `#live[data-state="snapshot"]`); len(s) != 1 || !strings.HasPrefix(s[0], "snapshot of ") {
			t.Errorf("the snapshot's status reads %q", s)
		}
		// A page whose server stops says it is offline.
		g := newFixture(t)
		gb := newBrowser(t)
		gb.run(t, "enter with the token", chromedp.Navigate(g.srv.URL(g.hs.Listener.Addr().String())))
		gb.waitFor(t, "live", `document.querySelector('#live[data-state="open"]') !== null`)
		g.hs.CloseClientConnections()
		g.hs.Close()
		gb.waitFor(t, "offline", `document.querySelector('#live[data-state="offline"]') !== null`)
		if s := gb.texts(t, "#live"); len(s) != 1 || !strings.HasPrefix(s[0], "offline: the server does not answer; the page is as of ") {
			t.Errorf("the status of a page whose server stopped reads %q", s)
		}
	})

	t.Run("summary first", func(t *testing.T) {
		b.run(t, "open the timeline", chromedp.Navigate(base+"/"))
		b.waitFor(t, "the summary", `document.querySelector('#summary') !== null`)
		first := eval[string](t, b, `document.querySelector('main').firstElementChild.id`)
		if first != "summary" {
			t.Errorf("the page begins with #%s, not the summary", first)
		}
		if c := b.texts(t, `#summary tr[data-session="agent-c"] td.conflicts`); len(c) != 1 || c[0] != "1" {
			t.Errorf("agent-c's conflicts prevented: %q, want 1", c)
		}
		if c := b.texts(t, `#summary tr[data-session="agent-m"] td.caught`); len(c) != 1 || c[0] != "1" {
			t.Errorf("agent-m's lost updates caught: %q, want 1", c)
		}
	})

	b.checkLoopbackOnly(t, host)
}

// TestUIHeadlessDumpDOM: chromium --headless --virtual-time-budget
// --dump-dom finishes the page and prints the timeline. The page's live
// updates must let virtual time run on: a request the page keeps open
// would hold its clock, and the browser would never finish. The deadline
// only bounds the wait for such a hang; nothing is timed.
func TestUIHeadlessDumpDOM(t *testing.T) {
	path := chromium()
	if path == "" {
		t.Skip("no chromium binary found (chromium, chromium-browser, google-chrome, headless-shell): the browser tests need one")
	}
	f := newFixture(t)
	write(t, f.w.NewSession("agent-d"), "dumped.txt", "one\n")
	seq := strconv.FormatUint(lastSeq(t, f.w), 10)
	profile := t.TempDir()
	t.Cleanup(func() { checkNoBrowserLeft(t, profile) })
	args := []string{"--headless", "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
		"--virtual-time-budget=5000", "--dump-dom", f.srv.URL(f.hs.Listener.Addr().String())}
	if os.Geteuid() == 0 {
		args = append([]string{"--no-sandbox"}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium did not finish the page with --virtual-time-budget: killed at the deadline\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := out.String()
	for _, want := range []string{`id="timeline"`, `data-seq="` + seq + `"`, ">dumped.txt<", `id="summary"`, `data-state="open"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the dumped DOM lacks %s:\n%s", want, dom)
		}
	}
}
