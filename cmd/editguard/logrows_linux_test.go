package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// logFixture makes a workspace whose ledger holds n edits of a.txt, each
// with a long command-free row, and returns its root.
func logFixture(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "a.txt", "0\n")
	for i := range n {
		cliRun(t, root, "read", "a.txt")
		old, new := string(rune('0'+i%10)), string(rune('0'+(i+1)%10))
		if code, _, errs := cliRun(t, root, "edit", "a.txt", "--old", old, "--new", new); code != 0 {
			t.Fatal(errs)
		}
	}
	return root
}

// TestLogRowsOnTerminal checks that log's rows do not fold on a terminal:
// less is started with LESS=FRSX (unless LESS is set), other output that
// pages keeps LESS=FRX, and rows written straight to the terminal are cut
// to its width.
func TestLogRowsOnTerminal(t *testing.T) {
	root := logFixture(t, 2)
	bin := t.TempDir()
	got := filepath.Join(t.TempDir(), "less-env")
	// A "less" that notes the LESS it was given and reads what it pages.
	script := "#!/bin/sh\nprintf '%s\\n' \"${LESS-unset}\" >> " + got + "\ncat >/dev/null\n"
	if err := os.WriteFile(filepath.Join(bin, "less"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("EDITGUARD_PAGER", "")
	t.Setenv("PAGER", "")
	os.Unsetenv("EDITGUARD_PAGER")
	os.Unsetenv("PAGER")
	t.Setenv("LESS", "")
	os.Unsetenv("LESS")
	master, slave := openPTY(t)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := master.Read(buf); err != nil {
				return
			}
		}
	}()
	for _, args := range [][]string{{"log"}, {"history", "a.txt"}, {"diff", "a.txt", "v000001"}} {
		if code := run(context.Background(), append([]string{"--root", root}, args...), strings.NewReader(""), slave, slave); code != 0 {
			t.Fatalf("%v on a terminal: exit %d", args, code)
		}
	}
	t.Setenv("LESS", "-i")
	if code := run(context.Background(), []string{"--root", root, "log"}, strings.NewReader(""), slave, slave); code != 0 {
		t.Fatalf("log with LESS set: exit %d", code)
	}
	b, err := os.ReadFile(got)
	if want := "FRSX\nFRSX\nFRX\n-i\n"; err != nil || string(b) != want {
		t.Errorf("less was given LESS=%q (log, history, diff, then log with LESS=-i), %v; want %q", b, err, want)
	}
}

// TestLogRowsCutToWidth runs log without a pager on a terminal 40 columns
// wide: each row is cut to 40 columns, the same rows as off the terminal.
func TestLogRowsCutToWidth(t *testing.T) {
	root := logFixture(t, 2)
	master, slave := openPTY(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 40}); err != nil {
		t.Skipf("cannot size the terminal: %v", err)
	}
	const end = "END-OF-LOG"
	done := make(chan int, 1)
	go func() {
		code := run(context.Background(), []string{"--root", root, "--no-pager", "log"}, strings.NewReader(""), slave, slave)
		slave.WriteString(end + "\n")
		done <- code
	}()
	var rows []string
	sc := bufio.NewScanner(master)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == end {
			break
		}
		rows = append(rows, line)
	}
	if code := <-done; code != 0 {
		t.Fatalf("log: exit %d\n%s", code, strings.Join(rows, "\n"))
	}
	_, full, _ := cliRun(t, root, "log")
	want := strings.Split(strings.TrimSuffix(full, "\n"), "\n")
	if len(rows) != len(want) {
		t.Fatalf("log on a 40-column terminal printed %d rows, want %d:\n%s", len(rows), len(want), strings.Join(rows, "\n"))
	}
	for i, row := range rows {
		if n := utf8.RuneCountInString(row); n > 40 {
			t.Errorf("row %d is %d columns wide, over 40: %q", i, n, row)
		}
		if w := want[i][:min(40, len(want[i]))]; row != w {
			t.Errorf("row %d = %q, want %q cut to the width", i, row, w)
		}
	}
}

// TestCutWriter checks the cutting itself: wide characters take two
// columns, a character split between two writes is kept whole, and each
// line starts again at column zero.
func TestCutWriter(t *testing.T) {
	var b strings.Builder
	c := &cutWriter{w: &b, width: 5}
	for _, s := range []string{"abcdefgh\n", "日本語", "\n", "é"[:1], "é"[1:] + "xyzw\nshort\n"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "abcde\n日本\néxyzw\nshort\n"; b.String() != want {
		t.Errorf("cut output %q, want %q", b.String(), want)
	}
}

// TestLogNewestFirstAcrossPages lists the ledger newest first when it
// takes several pages to read, with and without -n, and --reverse.
func TestLogNewestFirstAcrossPages(t *testing.T) {
	root := logFixture(t, 5)
	defer func(n int) { logPage = n }(logPage)
	logPage = 2
	seqs := func(args ...string) string {
		t.Helper()
		code, out, errs := cliRun(t, root, append([]string{"log", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("log %v: exit %d\n%s", args, code, errs)
		}
		var got []string
		for _, line := range logLines(t, out) {
			_, rest, _ := strings.Cut(line, `"seq":`)
			n, _, _ := strings.Cut(rest, ",")
			got = append(got, n)
		}
		return strings.Join(got, " ")
	}
	all := seqs("--reverse")
	f := strings.Fields(all)
	if len(f) < 5 {
		t.Fatalf("log --reverse lists %q, want at least 5 records", all)
	}
	var newest []string
	for i := len(f) - 1; i >= 0; i-- {
		newest = append(newest, f[i])
	}
	if got := seqs(); got != strings.Join(newest, " ") {
		t.Errorf("log lists %q, want %q (newest first)", got, strings.Join(newest, " "))
	}
	if got := seqs("-n", "3"); got != strings.Join(newest[:3], " ") {
		t.Errorf("log -n 3 lists %q, want %q", got, strings.Join(newest[:3], " "))
	}
	if got := seqs("-n", "3", "--reverse"); got != strings.Join(f[len(f)-3:], " ") {
		t.Errorf("log -n 3 --reverse lists %q, want %q", got, strings.Join(f[len(f)-3:], " "))
	}
}
