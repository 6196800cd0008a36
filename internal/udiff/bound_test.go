package udiff

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func numbered(n int, change map[int]string, drop map[int]bool) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if drop[i] {
			continue
		}
		if c, ok := change[i]; ok {
			b.WriteString(c)
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestCountAndNewRanges(t *testing.T) {
	old := numbered(100, nil, nil)
	// Line 10 changed, lines 50-52 removed, and two lines added after 80.
	nw := numbered(100, map[int]string{10: "ten\n", 80: "line 80\nnew a\nnew b\n"}, map[int]bool{50: true, 51: true, 52: true})
	d := Unified("a", old, "b", nw)
	if got, want := Count(d), (Stats{Added: 3, Removed: 4, Hunks: 3}); got != want {
		t.Errorf("Count = %+v, want %+v\n%s", got, want, d)
	}
	if got := Count(d).String(); got != "+3 -4 lines in 3 hunks" {
		t.Errorf("Stats.String = %q", got)
	}
	// In the new text: ten is line 10; 50-52 went after line 49; new a/b
	// are lines 78 and 79 (three lines fewer above them).
	if got, want := NewRanges(d, 10), []string{"10", "after 49", "78-79"}; !slices.Equal(got, want) {
		t.Errorf("NewRanges = %q, want %q\n%s", got, want, d)
	}
	if got, want := NewRanges(d, 2), []string{"10", "after 49", "…"}; !slices.Equal(got, want) {
		t.Errorf("NewRanges(max 2) = %q, want %q", got, want)
	}
	// Everything removed.
	if got, want := NewRanges(Unified("a", "x\ny\n", "b", ""), 5), []string{"after 0"}; !slices.Equal(got, want) {
		t.Errorf("NewRanges(all removed) = %q, want %q", got, want)
	}
}

func TestBound(t *testing.T) {
	old := numbered(2000, nil, nil)
	change := map[int]string{}
	for i := 10; i < 2000; i += 100 {
		change[i] = fmt.Sprintf("changed %d\n", i)
	}
	d := Unified("a", old, "b", numbered(2000, change, nil))
	if got, cut := Bound(d, len(d)); got != d || cut {
		t.Fatalf("Bound(d, len(d)) changed d")
	}
	got, cut := Bound(d, 1000)
	if !cut || len(got) > 1100 {
		t.Fatalf("Bound(d, 1000) = %d bytes, cut %v", len(got), cut)
	}
	if !strings.HasPrefix(d, strings.TrimSuffix(got[:strings.LastIndex(got, "[diff cut here")], "\n")) {
		t.Errorf("Bound output is not a prefix of the diff:\n%s", got)
	}
	last := got[strings.LastIndex(got, "[diff cut here"):]
	wantLines := strings.Count(d, "\n") - strings.Count(got, "\n") + 1
	if !strings.HasPrefix(last, fmt.Sprintf("[diff cut here: %d more lines in ", wantLines)) {
		t.Errorf("cut note = %q, want %d more lines", last, wantLines)
	}
}
