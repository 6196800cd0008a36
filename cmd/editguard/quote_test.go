package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestQuoteName: a name is left as it is when it holds nothing that can act
// on a terminal, else quoted with C escapes that read back (as a Go string
// literal) to its exact bytes; a cut never splits an escape.
func TestQuoteName(t *testing.T) {
	for name, want := range map[string]string{
		"a.go":                    "a.go",
		"with space.txt":          "with space.txt",
		"café/日本.md":              "café/日本.md",
		"-dash":                   "-dash",
		"new\nline":               `"new\nline"`,
		"tab\there":               `"tab\there"`,
		"\x1b]52;c;SGk=\a":        `"\033]52;c;SGk=\a"`,
		"\x1b[2J":                 `"\033[2J"`,
		"bad\xe9":                 `"bad\351"`,
		"del\x7f":                 `"del\177"`,
		"c1\u009b2J":              `"c1\302\2332J"`,
		"bidi\u202etxt.exe":       `"bidi\342\200\256txt.exe"`,
		`quote"back\slash`:        `"quote\"back\\slash"`,
		"zero\u200bwidth":         `"zero\342\200\213width"`,
		"line\u2028separator":     `"line\342\200\250separator"`,
		"nul\x00":                 `"nul\000"`,
		"\r\v\f\b":                `"\r\v\f\b"`,
		"truncated utf8 \xe6\x97": `"truncated utf8 \346\227"`,
	} {
		got := quoteName(name)
		if got != want {
			t.Errorf("quoteName(%q) = %s, want %s", name, got, want)
		}
		if got != name {
			back, err := strconv.Unquote(got)
			if err != nil || back != name {
				t.Errorf("quoteName(%q) = %s reads back as %q (%v)", name, got, back, err)
			}
		}
		checkTerminalSafe(t, "quoteName", got)
	}
	// Every byte alone, and after a printable prefix, reads back.
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "x" + string([]byte{byte(c)}) + "é"} {
			q := quoteName(s)
			checkTerminalSafe(t, "quoteName", q)
			if q == s {
				continue
			}
			if back, err := strconv.Unquote(q); err != nil || back != s {
				t.Errorf("quoteName(%q) = %s reads back as %q (%v)", s, q, back, err)
			}
		}
	}
	// A cut ends between two escapes: what is left, closed, reads back to
	// a prefix of the name.
	long := strings.Repeat("ab\x1b[2J\xe9日", 20)
	for n := 4; n < 80; n++ {
		c := quoteNameCut(long, n)
		if len(c) > n || !strings.HasSuffix(c, "...") {
			t.Fatalf("quoteNameCut(.., %d) = %q: longer than %d or without ...", n, c, n)
		}
		body := strings.TrimSuffix(c, "...")
		if body == "" {
			continue
		}
		back, err := strconv.Unquote(body + `"`)
		if err != nil || !strings.HasPrefix(long, back) {
			t.Errorf("quoteNameCut(.., %d) = %q cuts an escape: %q, %v", n, c, back, err)
		}
	}
	if got := quoteNameCut("short", 60); got != "short" {
		t.Errorf("quoteNameCut of a short name = %q", got)
	}
	// A shell quote of such a name is safe to print and pastes back.
	if got, want := shellQuote("it's\x1b[2J\xe9"), `$'it\'s\033[2J\351'`; got != want {
		t.Errorf("shellQuote = %s, want %s", got, want)
	}
}

// checkTerminalSafe fails t if out holds anything that could act on a
// terminal: a control character but the newline, DEL, a C1 control, a
// format or separator character, or invalid UTF-8.
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not valid UTF-8: %q", what, out)
	}
	for i, r := range out {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) {
			t.Errorf("%s: output holds %U at byte %d: %q", what, r, i, out)
			return
		}
	}
}

// hostileNames are file names that would act on a terminal, forge lines,
// shift columns or hide characters if printed raw, and two that are only
// awkward (a leading dash, 255 bytes).
var hostileNames = []string{
	"osc\x1b]52;c;SGVsbG8=\a.txt",
	"clear\x1b[2J.txt",
	"new\nline.txt",
	"tab\there.txt",
	"bad\xe9.txt",
	"-dash.txt",
	strings.Repeat("n", 251) + ".txt",
	"del\x7f.txt",
	"c1\u009b31m.txt",
	"bidi\u202egnp.exe",
	"quote\"back\\slash.txt",
	"café.txt",
}

// TestHostileNamesOnTheTerminal runs the commands that print names over
// files named to forge a terminal's output: exec changes them all (its
// summary names them), then log, tree, find, history, search, rewind and
// an error. No output holds a control character but the newline, and each
// name, quoted or not, reads back to its exact bytes; find -z and tree -z
// give the exact bytes.
func TestHostileNamesOnTheTerminal(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, n := range hostileNames {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := cliRun(t, dir, args...)
		checkTerminalSafe(t, strings.Join(args[:1], " ")+" (stdout)", out)
		checkTerminalSafe(t, strings.Join(args[:1], " ")+" (stderr)", errs)
		return code, out, errs
	}
	script := `for f in "$@"; do printf 'changed\n' > "$f"; done`
	code, _, errs := run(append([]string{"exec", "--", "sh", "-c", script, "sh"}, hostileNames...)...)
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s", code, errs)
	}
	for _, n := range hostileNames {
		if !strings.Contains(errs, " changed "+quoteName(n)+";") {
			t.Errorf("exec's summary does not name %q as %s:\n%s", n, quoteName(n), errs)
		}
	}

	// find: one name a line, each reading back to a file's name.
	code, out, errs := run("find", "*")
	if code != 0 {
		t.Fatalf("find: exit %d\n%s", code, errs)
	}
	if got := unquoteLines(t, out); !sameNames(got, hostileNames) {
		t.Errorf("find printed names that read back as %q, want %q", got, hostileNames)
	}
	// find -z and tree -z: the exact bytes.
	var raw bytes.Buffer
	var errb bytes.Buffer
	if code := run2(dir, &raw, &errb, "find", "-z", "*"); code != 0 {
		t.Fatalf("find -z: exit %d\n%s", code, errb.String())
	}
	if got := nulList(raw.String()); !sameNames(got, hostileNames) {
		t.Errorf("find -z = %q, want %q", got, hostileNames)
	}
	raw.Reset()
	if code := run2(dir, &raw, &errb, "tree", "-z"); code != 0 {
		t.Fatalf("tree -z: exit %d\n%s", code, errb.String())
	}
	var treeNames []string
	for _, p := range nulList(raw.String()) {
		treeNames = append(treeNames, strings.TrimPrefix(p, "./"))
	}
	if !sameNames(treeNames, hostileNames) {
		t.Errorf("tree -z = %q, want %q", treeNames, hostileNames)
	}
	// tree: the root line, then one name a line, indented.
	code, out, errs = run("tree")
	if code != 0 {
		t.Fatalf("tree: exit %d\n%s", code, errs)
	}
	first, rest, _ := strings.Cut(out, "\n")
	if first != "./" {
		t.Errorf("tree's first line is %q", first)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(rest, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	if got := unquoteLines(t, strings.Join(lines, "\n")+"\n"); !sameNames(got, hostileNames) {
		t.Errorf("tree printed names that read back as %q, want %q", got, hostileNames)
	}

	// search: "path:line:text" with the path quoted.
	code, out, errs = run("search", "changed")
	if code != 0 {
		t.Fatalf("search: exit %d\n%s", code, errs)
	}
	for _, n := range hostileNames {
		if !strings.Contains(out, quoteName(n)+":1:changed\n") {
			t.Errorf("search does not print %s:1:changed:\n%s", quoteName(n), out)
		}
	}

	// log: each name in the PATH column, exactly (the ledger keeps a
	// name that is not UTF-8 byte for byte); the command escaped and cut.
	code, out, errs = run("log")
	if code != 0 {
		t.Fatalf("log: exit %d\n%s", code, errs)
	}
	for _, n := range hostileNames {
		if !strings.Contains(out, " "+quoteName(n)+" ") {
			t.Errorf("log does not name %s:\n%s", quoteName(n), out)
		}
	}
	if !strings.Contains(out, "  sh -c 'for f in") {
		t.Errorf("log does not show the command:\n%s", out)
	}
	if got := strings.Count(out, "\n"); got != len(hostileNames)+1 {
		t.Errorf("log printed %d lines, want a heading and %d records:\n%s", got, len(hostileNames), out)
	}

	// history, by the raw name after "--", whatever its bytes. And an
	// error that names a path.
	for _, n := range hostileNames {
		code, out, errs = run("history", "--", n)
		if code != 0 || strings.Count(out, "\n") != 2 {
			t.Errorf("history %q: exit %d, want a heading and one version\n%s%s", n, code, out, errs)
		}
	}
	missing := "gone\x1b]52;c;SGk=\a\n.txt"
	code, _, errs = run("read", missing)
	if code == 0 || !strings.Contains(errs, quoteName(missing)) {
		t.Errorf("read of a missing hostile name: exit %d, want the name quoted as %s:\n%s", code, quoteName(missing), errs)
	}

	// rewind names each file it puts back, whatever its bytes.
	code, out, errs = run("rewind", "--session", defaultSession, "--yes")
	if code != 0 {
		t.Fatalf("rewind: exit %d\n%s%s", code, out, errs)
	}
	for _, n := range hostileNames {
		if !strings.Contains(out, "rewound "+quoteName(n)+" to ") {
			t.Errorf("rewind does not name %s:\n%s", quoteName(n), out)
		}
		if b, err := os.ReadFile(filepath.Join(dir, n)); err != nil || string(b) != "before\n" {
			t.Errorf("after rewind %q holds %q (%v)", n, b, err)
		}
	}
	// A restore hint for a name with a dash reads as a path, not a flag.
	code, out, errs = run("history", "./-dash.txt")
	if code != 0 || strings.Count(out, "\n") != 3 {
		t.Errorf("history ./-dash.txt: exit %d, want a heading and two versions\n%s%s", code, out, errs)
	}
}

// run2 runs the command line in-process with its own output buffers.
func run2(dir string, out, errb *bytes.Buffer, args ...string) int {
	out.Reset()
	errb.Reset()
	return run(context.Background(), append([]string{"--root", dir}, args...), strings.NewReader(""), out, errb)
}

// unquoteLines reads back one name a line, quoted or not.
func unquoteLines(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if strings.HasPrefix(l, `"`) {
			n, err := strconv.Unquote(l)
			if err != nil {
				t.Errorf("line %q does not read back: %v", l, err)
			}
			l = n
		}
		names = append(names, l)
	}
	return names
}

// nulList splits NUL-terminated names.
func nulList(s string) []string {
	if !strings.HasSuffix(s, "\x00") {
		return []string{fmt.Sprintf("(not NUL-terminated: %q)", s)}
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

// sameNames reports whether a and b hold the same names in any order.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
