package toolset

import (
	"slices"
	"strings"
	"testing"
)

func TestExpandBraces(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"*.go", []string{"*.go"}},
		{"**/*.{go,md}", []string{"**/*.go", "**/*.md"}},
		{"{a,b}/{c,d}", []string{"a/c", "a/d", "b/c", "b/d"}},
		{"x{a,{b,c}}y", []string{"xay", "xby", "xcy"}},
		{"{,_test}.go", []string{".go", "_test.go"}},
		{"{x}.go", []string{"{x}.go"}},
		{"{}.go", []string{"{}.go"}},
		{"{a,b.go", []string{"{a,b.go"}},
		{`\{a,b}.go`, []string{`\{a,b}.go`}},
		{"{x}{a,b}", []string{"{x}a", "{x}b"}},
		{"{a{b,c}}", []string{"{ab}", "{ac}"}},
	} {
		if got := expandBraces(tc.pattern); !slices.Equal(got, tc.want) {
			t.Errorf("expandBraces(%q) = %q, want %q", tc.pattern, got, tc.want)
		}
	}
	// Nine groups of two: 512 patterns, past the bound.
	if got := expandBraces(strings.Repeat("{a,b}", 9)); got != nil {
		t.Errorf("expandBraces of 512 alternatives = %d patterns, want nil", len(got))
	}
	if validGlob(strings.Repeat("{a,b}", 9)) {
		t.Error("validGlob accepts a pattern of 512 alternatives")
	}
	if got := expandBraces(strings.Repeat("{a,b}", 8)); len(got) != 256 {
		t.Errorf("expandBraces of 256 alternatives = %d patterns", len(got))
	}
}

func TestMatchGlobBraces(t *testing.T) {
	for _, tc := range []struct {
		pattern, rel string
		want         bool
	}{
		{"**/*.{go,md}", "cmd/x/main.go", true},
		{"**/*.{go,md}", "README.md", true},
		{"**/*.{go,md}", "a.txt", false},
		{"*.{go,md}", "deep/dir/a.md", true},
		{"{cmd,internal}/**/*.go", "internal/a/b.go", true},
		{"{cmd,internal}/**/*.go", "toolset/a.go", false},
		{"{x}.go", "{x}.go", true},
		{"{x}.go", "x.go", false},
		{"src/*.{ts,tsx}", "src/a.tsx", true},
	} {
		if got := matchGlob(tc.pattern, tc.rel); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
	for _, p := range []string{"*.{go,[}", "[", "{a,[}"} {
		if validGlob(p) {
			t.Errorf("validGlob(%q) = true, want false", p)
		}
	}
}
