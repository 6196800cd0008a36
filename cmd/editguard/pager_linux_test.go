package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPagerOnTerminal checks the pager: on a terminal, log goes through
// $EDITGUARD_PAGER; --no-pager, --json, PAGER=cat and output that is not
// a terminal bypass it; a pager quit early ends the command quietly.
func TestPagerOnTerminal(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.txt", "one\n")
	for range 3 {
		cliRun(t, root, "read", "a.txt")
		if code, _, errs := cliRun(t, root, "edit", "a.txt", "--old", "one", "--new", "two"); code != 0 {
			t.Fatal(errs)
		}
		cliRun(t, root, "read", "a.txt")
		cliRun(t, root, "edit", "a.txt", "--old", "two", "--new", "one")
	}
	paged := filepath.Join(t.TempDir(), "paged")
	t.Setenv("EDITGUARD_PAGER", "cat > "+paged+"; echo PAGER-DONE >> "+paged)
	master, slave := openPTY(t)
	var screen syncBuffer
	go io.Copy(&screen, master)

	runOnTTY := func(args ...string) int {
		t.Helper()
		os.Remove(paged)
		return run(context.Background(), append([]string{"--root", root}, args...), strings.NewReader(""), slave, slave)
	}
	if code := runOnTTY("log"); code != 0 {
		t.Fatalf("log on a terminal: exit %d", code)
	}
	got, err := os.ReadFile(paged)
	if err != nil || !strings.Contains(string(got), "SEQ") || !strings.HasSuffix(string(got), "PAGER-DONE\n") {
		t.Fatalf("the pager got %q, %v; want the log, then to finish", got, err)
	}
	for _, args := range [][]string{{"log", "--no-pager"}, {"--no-pager", "history", "a.txt"}, {"log", "--json"}} {
		if code := runOnTTY(args...); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if _, err := os.Stat(paged); err == nil {
			t.Errorf("%v went through the pager", args)
		}
	}
	t.Setenv("EDITGUARD_PAGER", "cat")
	if code := runOnTTY("log"); code != 0 {
		t.Fatal("log with the pager cat failed")
	}
	if _, err := os.Stat(paged); err == nil {
		t.Error("EDITGUARD_PAGER=cat still paged")
	}

	// Off a terminal there is no pager.
	t.Setenv("EDITGUARD_PAGER", "cat > "+paged)
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--root", root, "log"}, strings.NewReader(""), &out, &out); code != 0 || !strings.Contains(out.String(), "SEQ") {
		t.Fatalf("log to a buffer: exit %d\n%s", code, out.String())
	}
	if _, err := os.Stat(paged); err == nil {
		t.Error("log to a buffer went through the pager")
	}

	// A pager that stops reading (a person quitting less) ends the
	// command quietly.
	t.Setenv("EDITGUARD_PAGER", "head -c 1 >/dev/null")
	var errs bytes.Buffer
	if code := run(context.Background(), []string{"--root", root, "log"}, strings.NewReader(""), slave, &errs); code != 0 || errs.Len() > 0 {
		t.Errorf("log into a pager quit early: exit %d, stderr %q", code, errs.String())
	}
}

func TestPagerCommand(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
		ok   bool
	}{
		{map[string]string{}, "less", true},
		{map[string]string{"PAGER": "more"}, "more", true},
		{map[string]string{"PAGER": "more", "EDITGUARD_PAGER": "bat -p"}, "bat -p", true},
		{map[string]string{"PAGER": ""}, "", false},
		{map[string]string{"EDITGUARD_PAGER": "cat"}, "cat", false},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Setenv("PAGER", "x")
			t.Setenv("EDITGUARD_PAGER", "x")
			os.Unsetenv("PAGER")
			os.Unsetenv("EDITGUARD_PAGER")
			for k, v := range tc.env {
				os.Setenv(k, v)
			}
			if got, ok := pagerCommand(os.Getenv); got != tc.want || ok != tc.ok {
				t.Errorf("pagerCommand with %v = %q, %v; want %q, %v", tc.env, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestColorFlag checks --color against NO_COLOR and the terminal.
func TestColorFlag(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	var out bytes.Buffer
	for _, tc := range []struct {
		mode colorMode
		want bool
	}{{"always", true}, {"never", false}, {"", false}, {"auto", false}} {
		e := &env{stdout: &out, stderr: &out, color: tc.mode}
		if got := useColor(e); got != tc.want {
			t.Errorf("useColor with --color %q and NO_COLOR = %v, want %v", tc.mode, got, tc.want)
		}
	}
	root := t.TempDir()
	writeFile(t, root, "a.txt", "one\n")
	writeFile(t, root, "b.txt", "two\n")
	code, got, _ := cliRun(t, root, "diff", "a.txt", "--against", "b.txt", "--color", "always")
	if code != 0 || !strings.Contains(got, "\x1b[") {
		t.Errorf("diff --color always: exit %d, no colour in %q", code, got)
	}
	if code, got, _ := cliRun(t, root, "--color", "never", "diff", "a.txt", "--against", "b.txt"); code != 0 || strings.Contains(got, "\x1b[") {
		t.Errorf("diff --color never: exit %d, colour in %q", code, got)
	}
	if code, _, errs := cliRun(t, root, "--color", "sometimes", "log"); code != exitUsage || !strings.Contains(errs, "auto, always or never") {
		t.Errorf("--color sometimes: exit %d, %s", code, errs)
	}
}

// TestQuietPipe checks that output into a pager that has quit is dropped
// without an error, and that other errors still surface.
func TestQuietPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	q := &quietPipe{w: w}
	if n, err := q.Write([]byte("lost\n")); n != 5 || err != nil || !q.broken {
		t.Fatalf("Write into a closed pager = %d, %v (broken %v); want 5, nil, broken", n, err, q.broken)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("the pipe did not break: the test checks nothing")
	}
	w.Close()
	if n, err := (&quietPipe{w: failWriter{}}).Write([]byte("x")); n != 0 || err == nil {
		t.Errorf("Write with another error = %d, %v; want the error", n, err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

// TestApplyTellsItWaits checks that apply, reading its patch from a
// terminal, says so, and takes the patch typed there up to Ctrl-D.
func TestApplyTellsItWaits(t *testing.T) {
	root := t.TempDir()
	master, slave := openPTY(t)
	var echo syncBuffer
	go io.Copy(&echo, master)
	patch := "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** End Patch\n"
	go func() {
		master.Write([]byte(patch))
		master.Write([]byte{4}) // Ctrl-D: end of input in canonical mode
	}()
	var out, errs bytes.Buffer
	code := run(context.Background(), []string{"--root", root, "apply", "--dry-run"}, slave, &out, &errs)
	if code != 0 || !strings.Contains(errs.String(), "reading the patch from the terminal") || !strings.Contains(out.String(), "new.txt") {
		t.Fatalf("apply from a terminal: exit %d\nstdout %s\nstderr %s", code, out.String(), errs.String())
	}
	// From a pipe it says nothing.
	errs.Reset()
	if code := run(context.Background(), []string{"--root", root, "apply", "--dry-run"}, strings.NewReader(patch), &out, &errs); code != 0 || strings.Contains(errs.String(), "terminal") {
		t.Errorf("apply from a pipe: exit %d, stderr %q", code, errs.String())
	}
}

// TestProgressLine: a long operation on a terminal shows a progress line
// that it keeps up to date and erases at the end; off a terminal it shows
// nothing.
func TestProgressLine(t *testing.T) {
	defer func(a, e time.Duration) { progressAfter, progressEvery = a, e }(progressAfter, progressEvery)
	progressAfter, progressEvery = 20*time.Millisecond, 20*time.Millisecond
	var buf syncBuffer
	done := startProgress(&buf, "verifying the ledger")
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(buf.String(), "editguard: verifying the ledger... ") < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	done()
	done() // a second call is harmless
	out := buf.String()
	if strings.Count(out, "\r\x1b[Keditguard: verifying the ledger... ") < 2 || !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("progress output %q: want the line drawn again and erased at the end", out)
	}
	// A quick operation draws nothing.
	progressAfter = time.Hour
	buf2 := &syncBuffer{}
	startProgress(buf2, "quick")()
	if buf2.String() != "" {
		t.Errorf("a quick operation drew %q", buf2.String())
	}
	// Off a terminal, nothing.
	var plain bytes.Buffer
	(&env{stderr: &plain}).progress("x")()
	if plain.Len() != 0 {
		t.Errorf("off a terminal: %q", plain.String())
	}
	// On a terminal, verify of a workspace runs with it and leaves the
	// screen clean.
	progressAfter = 0
	root := t.TempDir()
	writeFile(t, root, "a.txt", "one\n")
	cliRun(t, root, "read", "a.txt")
	cliRun(t, root, "edit", "a.txt", "--old", "one", "--new", "two")
	master, slave := openPTY(t)
	var screen syncBuffer
	go io.Copy(&screen, master)
	var out2 bytes.Buffer
	if code := run(context.Background(), []string{"--root", root, "verify"}, strings.NewReader(""), &out2, slave); code != 0 || !strings.Contains(out2.String(), "ledger ok") {
		t.Fatalf("verify with a terminal on stderr: exit %d, %q", code, out2.String())
	}
}
