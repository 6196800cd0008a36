package udiff

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
)

// apply applies a unified diff produced by Unified to old, so tests can
// check that a diff takes the old text to the new one.
func apply(t *testing.T, old, d string) string {
	t.Helper()
	if d == "" {
		return old
	}
	src := splitLines(old)
	var out []string
	pos := 0 // next source line (0-based)
	lines := strings.SplitAfter(d, "\n")
	for i := 2; i < len(lines); i++ {
		l := lines[i]
		if l == "" {
			continue
		}
		switch l[0] {
		case '@':
			var oa, ob, na, nb int
			if _, err := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &oa, &ob, &na, &nb); err != nil {
				t.Fatalf("bad hunk header %q", l)
			}
			start := oa - 1
			if ob == 0 {
				start = oa
			}
			out = append(out, src[pos:start]...)
			pos = start
		case ' ':
			if src[pos] != l[1:] && src[pos] != strings.TrimSuffix(l[1:], "\n") {
				t.Fatalf("context mismatch at line %d: %q vs %q", pos+1, src[pos], l[1:])
			}
			out = append(out, src[pos])
			pos++
		case '-':
			pos++
		case '+':
			out = append(out, l[1:])
		case '\\':
			// The previous line has no newline.
			last := len(out) - 1
			if i > 0 && lines[i-1][0] == '+' {
				out[last] = strings.TrimSuffix(out[last], "\n")
			}
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, "")
}

func TestUnifiedAppliesBack(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			fmt.Fprintf(&b, "line %d\n", rng.Intn(12))
		}
		s := b.String()
		if rng.Intn(3) == 0 {
			s = strings.TrimSuffix(s, "\n")
		}
		return s
	}
	for i := range 500 {
		old := gen(rng.Intn(40))
		// Mutate: change, insert and delete a few lines.
		lines := splitLines(old)
		for range rng.Intn(4) {
			if len(lines) == 0 {
				lines = append(lines, "new\n")
				continue
			}
			j := rng.Intn(len(lines))
			switch rng.Intn(3) {
			case 0:
				lines[j] = fmt.Sprintf("changed %d\n", i)
			case 1:
				lines = append(lines[:j], append([]string{"inserted\n"}, lines[j:]...)...)
			case 2:
				lines = append(lines[:j], lines[j+1:]...)
			}
		}
		nw := strings.Join(lines, "")
		if strings.HasSuffix(old, "\n") != strings.HasSuffix(nw, "\n") && nw != "" && old != "" {
			nw += "\n"
		}
		d := Unified("a", old, "b", nw)
		if got := apply(t, old, d); got != nw {
			t.Fatalf("case %d: applying the diff gives\n%q\nwant\n%q\ndiff:\n%s", i, got, nw, d)
		}
	}
}

func TestUnifiedLargeRewriteIsOneHunk(t *testing.T) {
	var a, b strings.Builder
	for i := range maxMatchLines + 10 {
		fmt.Fprintf(&a, "old %d\n", i)
		fmt.Fprintf(&b, "new %d\n", i)
	}
	d := Unified("a", a.String(), "b", b.String())
	if n := strings.Count(d, "\n@@ "); n != 1 {
		t.Fatalf("hunks = %d, want 1", n)
	}
	if got := apply(t, a.String(), d); got != b.String() {
		t.Fatalf("large rewrite diff does not apply")
	}
}

func TestUnifiedEqualIsEmpty(t *testing.T) {
	if d := Unified("a", "x\n", "b", "x\n"); d != "" {
		t.Fatalf("Unified(equal) = %q, want empty", d)
	}
}

func BenchmarkUnifiedEditOf1MiB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "this is line %d of a large file\n", i)
	}
	old := sb.String()
	nw := strings.Replace(old, "line 15000 of", "line 15000 (edited) of", 1)
	b.SetBytes(int64(len(old)))
	for i := 0; i < b.N; i++ {
		Unified("a", old, "b", nw)
	}
}

// TestUnifiedCreationMatchesLineMatcher checks that the diff of a text
// from or to nothing, written as one hunk without the line matcher, is
// byte for byte what the line matcher gives, and applies back.
func TestUnifiedCreationMatchesLineMatcher(t *testing.T) {
	for _, text := range []string{"a\n", "a", "a\nb\n", "a\nb", "\n", "\n\n", strings.Repeat("line\n", 50), strings.Repeat("x\n", 9) + "last"} {
		for _, dir := range []string{"create", "delete"} {
			old, new := "", text
			if dir == "delete" {
				old, new = text, ""
			}
			got := Unified("a/f", old, "b/f", new)
			want := "--- a/f\n+++ b/f\n" + matcherBody(old, new)
			if got != want {
				t.Errorf("%s %q:\n got %q\nwant %q", dir, text, got, want)
			}
			if back := apply(t, old, got); back != new {
				t.Errorf("%s %q: applies back to %q", dir, text, back)
			}
		}
	}
}

// matcherBody is the hunks the line matcher gives for old to new, as
// Unified writes them when it uses the matcher.
func matcherBody(old, new string) string {
	d := diff.Diff("a", []byte(old), "b", []byte(new))
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(d), "\n") {
		if line == "" || strings.HasPrefix(line, "diff ") || strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ") {
			continue
		}
		var oa, ob, na, nb int
		if n, _ := fmt.Sscanf(line, "@@ -%d,%d +%d,%d @@", &oa, &ob, &na, &nb); n == 4 {
			fmt.Fprintf(&out, "@@ -%s +%s @@\n", shift(oa, ob, 0), shift(na, nb, 0))
			continue
		}
		out.WriteString(line)
	}
	return out.String()
}
