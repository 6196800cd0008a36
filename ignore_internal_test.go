package editguard

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// ignoreElems are the pieces random patterns and paths are made of.
var ignoreElems = []string{"a", "b", "ab", "a.go", "b.log", "x.txt", "build", "out", "node_modules", ".env", "*", "**", "*.go", "*.log",
	"a*", "?", "[ab]", "[a-", "\\*", "a\\ ", "", "!", "b*.go", "*b*", "[!a]*"}

func randomIgnore(r *rand.Rand, n int, path bool) string {
	var parts []string
	for range 1 + r.IntN(n) {
		e := ignoreElems[r.IntN(len(ignoreElems))]
		if path {
			e = strings.NewReplacer("*", "s", "?", "q", "[", "l", "\\", "b", "!", "n").Replace(e)
			if e == "" {
				e = "e"
			}
		}
		parts = append(parts, e)
	}
	s := strings.Join(parts, "/")
	if !path {
		switch r.IntN(6) {
		case 0:
			s = "!" + s
		case 1:
			s += "/"
		case 2:
			s = "/" + s
		case 3:
			s += "  "
		}
	}
	return s
}

// TestIgnoreMatchesGoGit holds the ignore matcher to the answers of
// go-git's, which it replaced, on random patterns, domains and paths.
func TestIgnoreMatchesGoGit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	excluded := 0
	for i := range 200000 {
		var domain []string
		if r.IntN(3) == 0 {
			domain = strings.Split(randomIgnore(r, 2, true), "/")
		}
		var lines []string
		for range 1 + r.IntN(4) {
			lines = append(lines, randomIgnore(r, 3, false))
		}
		var ours ignoreMatcher
		var theirs []gitignore.Pattern
		for _, l := range lines {
			ours = append(ours, parseIgnore(l, domain))
			theirs = append(theirs, gitignore.ParsePattern(l, domain))
		}
		m := gitignore.NewMatcher(theirs)
		p := strings.Split(randomIgnore(r, 4, true), "/")
		if r.IntN(2) == 0 && domain != nil {
			p = append(append([]string{}, domain...), p...)
		}
		isDir := r.IntN(2) == 0
		if got, want := ours.ignored(p, isDir), m.Match(p, isDir); got != want {
			t.Fatalf("case %d: patterns %q in %q, path %q (dir %v): ignored %v, go-git says %v", i, lines, domain, p, isDir, got, want)
		} else if got {
			excluded++
		}
	}
	// The cases must exercise both answers.
	if excluded < 10000 || excluded > 190000 {
		t.Fatalf("%d of 200,000 cases ignored: the cases do not exercise the matcher", excluded)
	}
	t.Logf("%d of 200,000 cases ignored", excluded)
}

func BenchmarkIgnore(b *testing.B) {
	lines := []string{"*.log", "build/", "/dist/", "node_modules/", ".env", "*.tmp", "coverage/", "*.swp", "out/**/gen"}
	var ours ignoreMatcher
	var theirs []gitignore.Pattern
	for _, l := range lines {
		ours = append(ours, parseIgnore(l, nil))
		theirs = append(theirs, gitignore.ParsePattern(l, nil))
	}
	p := []string{"src", "pkg", "deep", "file.go"}
	b.Run("editguard", func(b *testing.B) {
		for b.Loop() {
			ours.ignored(p, false)
		}
	})
	m := gitignore.NewMatcher(theirs)
	b.Run("go-git", func(b *testing.B) {
		for b.Loop() {
			m.Match(p, false)
		}
	})
}
