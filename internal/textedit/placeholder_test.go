package textedit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

func TestDetectPlaceholders(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []int // lines reported
	}{
		{"rest of code", "a()\nb()\n", "a()\n// ... rest of code ...\n", []int{2}},
		{"existing code", "a()\n", "// ... existing code ...\nc()\n", []int{1}},
		{"hash unchanged in parens", "x = 1\n", "x = 2\n# (unchanged)\n", []int{2}},
		{"block comment", "f()\n", "/* existing code */\nf()\n", []int{1}},
		{"html ellipsis", "<p>a</p>\n", "<div>\n<!-- ... -->\n</div>\n", []int{2}},
		{"jsx comment", "<A/>\n", "{/* ... rest of the component ... */}\n", []int{1}},
		{"bare ellipsis", "x\n", "x\n...\ny\n", []int{2}},
		{"unicode ellipsis comment", "x\n", "// …\n", []int{1}},
		{"rest of the file", "a\n", "# rest of the file\n", []int{1}},
		{"remaining methods", "a\n", "    // ... remaining methods unchanged\n", []int{1}},
		{"code omitted for brevity", "a\n", "// code omitted for brevity\n", []int{1}},
		{"python stub body", "", "def f(x: int) -> int:\n    ...\n", nil},
		{"python class stub", "", "class P(Protocol):\n    def m(self): ...\n", nil},
		{"ellipsis already there", "def f():\n    ...\n", "def f():\n    ...\n\ndef g():\n    return 1\n", nil},
		{"placeholder already in old", "// ... existing code ...\n", "// ... existing code ...\nx\n", nil},
		{"spread operator", "", "f(...args)\nconst b = {...a, c}\n", nil},
		{"variadic go", "", "func f(xs ...int) {}\nf(xs...)\n", nil},
		{"real comment about the rest", "", "// rest of the function handles errors\n", nil},
		{"real comment unchanged flag", "", "// unchanged is set when nothing moved\n", nil},
		{"js rest param comment", "", "// ...args are forwarded\n", nil},
		{"sql comment", "", "-- select the remaining rows\n", nil},
		{"spread on its own line", "", "const x = [\n  ...items,\n]\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DetectPlaceholders(tt.old, tt.new)
			var lines []int
			for _, p := range got {
				lines = append(lines, p.Line)
			}
			if len(lines) != len(tt.want) {
				t.Fatalf("DetectPlaceholders() = %+v, want lines %v", got, tt.want)
			}
			for i := range lines {
				if lines[i] != tt.want[i] {
					t.Fatalf("DetectPlaceholders() = %+v, want lines %v", got, tt.want)
				}
			}
		})
	}
}

func TestCheckPlaceholders(t *testing.T) {
	text := "func a() {}\n\nfunc b() {}\n"
	err := CheckPlaceholders(text, []Edit{
		{Old: "func a() {}", New: "func a() { x() }"},
		{Old: "func b() {}", New: "// ... existing code ...\nfunc b() { y() }"},
	})
	var pe *PlaceholderError
	if !errors.As(err, &pe) {
		t.Fatalf("CheckPlaceholders() = %v, want *PlaceholderError", err)
	}
	if pe.Index != 1 || len(pe.Placeholders) != 1 || pe.Placeholders[0].Line != 1 {
		t.Errorf("CheckPlaceholders() = %+v, want edit 1, line 1", pe)
	}
	// A placeholder-like comment the file already has is not refused.
	if err := CheckPlaceholders(text+"// ... existing code ...\n", []Edit{{Old: "func b() {}", New: "// ... existing code ...\nfunc b() {}\n"}}); err != nil {
		t.Errorf("CheckPlaceholders() with the comment in the file = %v, want nil", err)
	}
}

// TestPlaceholderGolden runs testdata/placeholders: old and new content, and
// want, the new-content line numbers DetectPlaceholders must report.
func TestPlaceholderGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/placeholders/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			old, _ := lookupFile(ar, "old")
			new, _ := lookupFile(ar, "new")
			want, _ := lookupFile(ar, "want")
			var got []string
			for _, p := range DetectPlaceholders(old, new) {
				got = append(got, strconv.Itoa(p.Line))
			}
			if g, w := strings.Join(got, ","), strings.Join(strings.Fields(want), ","); g != w {
				t.Errorf("DetectPlaceholders() lines = %q, want %q", g, w)
			}
		})
	}
}

func BenchmarkDetectPlaceholders1MiB(b *testing.B) {
	var old, nw strings.Builder
	for i := 0; old.Len() < 1<<20; i++ {
		fmt.Fprintf(&old, "\tvalue%d := compute(%d) // step %d\n", i, i, i)
		fmt.Fprintf(&nw, "\tvalue%d := compute(%d) // step %d changed\n", i, i, i)
	}
	b.SetBytes(int64(old.Len()))
	for i := 0; i < b.N; i++ {
		DetectPlaceholders(old.String(), nw.String())
	}
}

// TestDetectPlaceholdersOnlyChanged checks the changed-region shortcut
// against looking at every line, on random edits of a file that holds
// placeholders and placeholder-like lines of its own.
func TestDetectPlaceholdersOnlyChanged(t *testing.T) {
	pool := []string{"x := 1", "// ... rest of code", "...", "func f() {", "}", "// existing code unchanged", "", " \t", "    ...", "def g():", "y = 2"}
	rng := rand.New(rand.NewPCG(1, 2))
	every := func(oldText, newText string) []Placeholder {
		var out []Placeholder
		lines := strings.Split(newText, "\n")
		for i, l := range lines {
			tt := strings.TrimSpace(l)
			if tt == "" || !isPlaceholder(tt, lines[:i], l) || strings.Contains(oldText, tt) {
				continue
			}
			out = append(out, Placeholder{Line: i + 1, Text: tt})
		}
		return out
	}
	for range 2000 {
		var old []string
		for range rng.IntN(12) {
			old = append(old, pool[rng.IntN(len(pool))])
		}
		nw := slices.Clone(old)
		for range rng.IntN(4) {
			i := rng.IntN(len(nw) + 1)
			nw = slices.Insert(nw, i, pool[rng.IntN(len(pool))])
		}
		if len(nw) > 0 && rng.IntN(2) == 0 {
			nw = slices.Delete(nw, 0, 1)
		}
		oldText, newText := strings.Join(old, "\n"), strings.Join(nw, "\n")
		if rng.IntN(2) == 0 {
			oldText, newText = oldText+"\n", newText+"\n"
		}
		if got, want := DetectPlaceholders(oldText, newText), every(oldText, newText); !slices.Equal(got, want) {
			t.Fatalf("old %q new %q: got %v, want %v", oldText, newText, got, want)
		}
	}
}

// isPlaceholder is isPlaceholderAfter given every preceding line, as
// DetectPlaceholders once split the whole text to look them up.
func isPlaceholder(t string, before []string, raw string) bool {
	return isPlaceholderAfter(t, func() (string, bool) {
		for k := len(before) - 1; k >= 0; k-- {
			if p := strings.TrimRight(before[k], " \t"); strings.TrimSpace(p) != "" {
				return p, true
			}
		}
		return "", false
	}, raw)
}
