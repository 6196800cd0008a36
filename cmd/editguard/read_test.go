package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/editguard/editguard/toolset"
)

// TestReadBounded: the command line's read prints at most cliReadBytes at
// a time and cuts long lines, whatever the file and the arguments, and
// says on stderr how to go on; --full prints the lines whole.
func TestReadBounded(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("x", 3<<20) + "\nsecond\n"
	writeFile(t, root, "long.txt", long)
	var b strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&b, "line %05d of a file of many lines\n", i)
	}
	many := b.String()
	writeFile(t, root, "many.txt", many)

	for _, args := range [][]string{{"read", "long.txt"}, {"read", "long.txt", "--offset", "1", "--limit", "1"}} {
		code, out, errs := cliRun(t, root, args...)
		if code != 0 || len(out) > 4000 || !strings.HasPrefix(out, strings.Repeat("x", 1000)) || !strings.Contains(errs, "--full prints them whole") {
			t.Errorf("%q: exit %d, %d bytes out, stderr %q; want the line cut and said so", args, code, len(out), errs)
		}
	}
	if code, out, _ := cliRun(t, root, "read", "long.txt", "--full"); code != 0 || out != long {
		t.Errorf("read --full: exit %d, %d bytes, want the file whole (%d)", code, len(out), len(long))
	}

	// A file of many lines comes in pieces that add up to it.
	var got strings.Builder
	offset, calls := "1", 0
	for ; offset != "" && calls < 10; calls++ {
		code, out, errs := cliRun(t, root, "read", "many.txt", "--offset", offset)
		if code != 0 || len(out) > cliReadBytes+toolset.MaxLineBytes+100 { // the last line may end past the cap
			t.Fatalf("read --offset %s: exit %d, %d bytes", offset, code, len(out))
		}
		got.WriteString(out)
		offset = ""
		if i := strings.Index(errs, "go on with --offset "); i >= 0 {
			offset = strings.Fields(errs[i+len("go on with --offset "):])[0]
			offset = strings.TrimSuffix(offset, ",")
		}
	}
	if got.String() != many || calls < 2 {
		t.Errorf("%d reads gave %d bytes, want the file's %d in pieces", calls, got.Len(), len(many))
	}
}

// TestEditMergesOnTheCommandLine: an edit over someone else's change to
// another line merges, and says so, with that change on stderr.
func TestEditMergesOnTheCommandLine(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "f.txt", "one\ntwo\nthree\n")
	if code, _, errs := cliRun(t, root, "--session", "me", "read", "f.txt"); code != 0 {
		t.Fatalf("read: %d %s", code, errs)
	}
	writeFile(t, root, "f.txt", "one\ntwo\nthree\nfour, by someone else\n")
	code, out, errs := cliRun(t, root, "--session", "me", "edit", "f.txt", "--old", "one\n", "--new", "ONE\n")
	if code != 0 || !strings.Contains(out, "merged over a change made since your read") || !strings.Contains(errs, "+four, by someone else") {
		t.Fatalf("edit: exit %d\n%s%s", code, out, errs)
	}
	if got := readFile(t, root, "f.txt"); got != "ONE\ntwo\nthree\nfour, by someone else\n" {
		t.Fatalf("f.txt = %q", got)
	}
}

// TestEditNoMergeOnTheCommandLine: --no-merge refuses the edit a merge
// would apply, with the conflict exit code.
func TestEditNoMergeOnTheCommandLine(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "f.txt", "one\ntwo\nthree\n")
	cliRun(t, root, "--session", "me", "read", "f.txt")
	writeFile(t, root, "f.txt", "one\ntwo\nthree\nfour\n")
	if code, _, errs := cliRun(t, root, "--session", "me", "edit", "f.txt", "--old", "one\n", "--new", "ONE\n", "--no-merge"); code != exitConflict || !strings.Contains(errs, "STALE_FILE") {
		t.Fatalf("edit --no-merge: exit %d, stderr %q; want %d and STALE_FILE", code, errs, exitConflict)
	}
	if got := readFile(t, root, "f.txt"); got != "one\ntwo\nthree\nfour\n" {
		t.Fatalf("f.txt = %q", got)
	}
}

// TestReadBoundedAtTheLimit: a 64 MiB line and a file of 65 MiB, read from
// the command line, print a bounded page; --full prints the line whole,
// and the file up to the size limit (64 MiB: where to go on is said), or
// whole with --max-file-size raised past it.
func TestReadBoundedAtTheLimit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes and reads 130 MiB")
	}
	root := t.TempDir()
	line := strings.Repeat("y", 64<<20-1) + "\n"
	writeFile(t, root, "line.txt", line)
	var b strings.Builder
	for b.Len() < 65<<20 {
		b.WriteString("a line of a file of sixty-five mebibytes, to be read in pages\n")
	}
	big := b.String()
	writeFile(t, root, "big.txt", big)

	for _, args := range [][]string{{"read", "line.txt", "--offset", "1", "--limit", "1"}, {"read", "line.txt"}} {
		code, out, errs := cliRun(t, root, args...)
		if code != 0 || len(out) > 4000 || !strings.Contains(errs, "--full prints them whole") {
			t.Errorf("%q: exit %d, %d bytes, stderr %q; want the line cut", args, code, len(out), errs)
		}
	}
	if code, out, errs := cliRun(t, root, "read", "line.txt", "--full"); code != 0 || len(out) != len(line) {
		t.Errorf("read line.txt --full: exit %d, %d bytes (want %d), %s", code, len(out), len(line), errs)
	}
	code, out, errs := cliRun(t, root, "read", "big.txt")
	if code != 0 || len(out) > cliReadBytes+100 || !strings.Contains(errs, "go on with --offset") {
		t.Errorf("read big.txt: exit %d, %d bytes, stderr %q; want one bounded page", code, len(out), errs)
	}
	code, out, errs = cliRun(t, root, "read", "big.txt", "--full")
	if code != 0 || len(out) > 64<<20+200 || len(out) < 63<<20 || !strings.HasPrefix(big, out) || !strings.Contains(errs, "stopped at the file size limit") {
		t.Errorf("read big.txt --full: exit %d, %d bytes, stderr %q; want the lines up to the 64 MiB limit and where to go on", code, len(out), errs)
	}
	if code, out, _ := cliRun(t, root, "--max-file-size", "66MiB", "read", "big.txt", "--full"); code != 0 || out != big {
		t.Errorf("read big.txt --full --max-file-size 66MiB: exit %d, %d bytes, want the whole %d", code, len(out), len(big))
	}
}
