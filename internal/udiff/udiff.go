// Package udiff produces unified diffs of text cheaply enough to run on every
// change of a large file. It trims the lines both texts share at the start
// and end (for an edit, nearly all of the file) before diffing the rest, and
// gives up on line matching, not on correctness, when the changed middle is
// too large: it then emits one hunk that removes the old middle and adds the
// new one, which is still a valid diff.
package udiff

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
)

// Context is the number of unchanged lines shown around each change.
const Context = 3

// maxMatchLines bounds the middle region handed to the line matcher.
const maxMatchLines = 20000

// Unified returns the unified diff from oldText to newText, labelled with
// oldName and newName, or "" if they are equal.
func Unified(oldName, oldText, newName, newText string) string {
	if oldText == newText {
		return ""
	}
	// Common prefix and suffix, found byte-wise and snapped to whole lines,
	// so an edit of a large file splits only the few lines around it.
	p := CommonPrefix(oldText, newText)
	p = strings.LastIndexByte(oldText[:p], '\n') + 1
	sfx := CommonSuffix(oldText[p:], newText[p:])
	// Snap the suffix to start just after a newline inside it, which is a
	// line start in both texts (or make it empty).
	if sfx > 0 {
		i := strings.IndexByte(oldText[len(oldText)-sfx:], '\n')
		if i < 0 {
			sfx = 0
		} else {
			sfx -= i + 1
		}
	}
	// Widen both sides by the context lines.
	lo := p
	for range Context {
		if lo == 0 {
			break
		}
		lo = strings.LastIndexByte(oldText[:lo-1], '\n') + 1
	}
	hiOld, hiNew := len(oldText)-sfx, len(newText)-sfx
	for range Context {
		if hiOld == len(oldText) {
			break
		}
		i := strings.IndexByte(oldText[hiOld:], '\n')
		if i < 0 {
			hiOld, hiNew = len(oldText), len(newText)
			break
		}
		hiOld += i + 1
		hiNew += i + 1
	}
	pre := strings.Count(oldText[:lo], "\n")
	midA, midB := splitLines(oldText[lo:hiOld]), splitLines(newText[lo:hiNew])
	size := hiOld - lo + hiNew - lo + 2*(len(midA)+len(midB)) + 256
	lo = pre
	var out strings.Builder
	out.Grow(size)
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// One side empty (a file created or deleted): every line is added or
	// removed, in one hunk, with nothing to match.
	if len(midA) == 0 || len(midB) == 0 || len(midA) > maxMatchLines || len(midB) > maxMatchLines {
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(lo, len(midA)), hunkRange(lo, len(midB)))
		for _, l := range midA {
			writeLine(&out, '-', l)
		}
		for _, l := range midB {
			writeLine(&out, '+', l)
		}
		return out.String()
	}
	d := diff.Diff("a", []byte(strings.Join(midA, "")), "b", []byte(strings.Join(midB, "")))
	// Skip diff's own header ("diff a b", "--- a", "+++ b") and shift hunk
	// line numbers by the trimmed prefix.
	for _, line := range bytes.SplitAfter(d, []byte("\n")) {
		switch {
		case len(line) == 0, bytes.HasPrefix(line, []byte("diff ")),
			bytes.HasPrefix(line, []byte("--- ")), bytes.HasPrefix(line, []byte("+++ ")):
			continue
		case bytes.HasPrefix(line, []byte("@@ ")):
			var oa, ob, na, nb int
			if n, _ := fmt.Sscanf(string(line), "@@ -%d,%d +%d,%d @@", &oa, &ob, &na, &nb); n == 4 {
				fmt.Fprintf(&out, "@@ -%s +%s @@\n", shift(oa, ob, lo), shift(na, nb, lo))
				continue
			}
			out.Write(line)
		default:
			out.Write(line)
		}
	}
	return out.String()
}

// shift renders a hunk range start,count whose start is relative to a
// region beginning after offset lines.
func shift(start, count, offset int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start+offset)
	}
	return fmt.Sprintf("%d,%d", start+offset, count)
}

func hunkRange(lo, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", lo)
	}
	return fmt.Sprintf("%d,%d", lo+1, n)
}

func writeLine(out *strings.Builder, op byte, l string) {
	out.WriteByte(op)
	out.WriteString(l)
	if !strings.HasSuffix(l, "\n") {
		out.WriteString("\n\\ No newline at end of file\n")
	}
}

// splitLines splits s after each "\n", keeping the newlines.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// block is the stride of the prefix and suffix scans: comparing strings of
// this length runs at memory speed, and only the last block is compared
// byte by byte.
const block = 4096

// CommonPrefix returns the length in bytes of the longest common prefix of
// a and b.
func CommonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && a[i:i+block] == b[i:i+block] {
		i += block
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// CommonSuffix returns the length in bytes of the longest common suffix of
// a and b.
func CommonSuffix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+block <= n && a[len(a)-i-block:len(a)-i] == b[len(b)-i-block:len(b)-i] {
		i += block
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// File returns the unified diff of the file p from oldText to newText,
// labelled a/p and b/p, with /dev/null for the old side of a file created
// and the new side of one deleted.
func File(p, oldText, newText string, created, deleted bool) string {
	oldName, newName := "a/"+p, "b/"+p
	if created {
		oldName = "/dev/null"
	}
	if deleted {
		newName = "/dev/null"
	}
	return Unified(oldName, oldText, newName, newText)
}
