package textedit

import (
	"strings"
	"testing"
)

func TestNumbered(t *testing.T) {
	long := strings.Repeat("é", MaxLineLength+5)
	tests := []struct {
		name          string
		text          string
		offset, limit int
		want          string
		total         int
		truncated     bool
	}{
		{"empty", "", 0, 0, "", 0, false},
		{"all", "a\nb\n", 0, 0, "     1\ta\n     2\tb\n", 2, false},
		{"no final newline", "a\nb", 0, 0, "     1\ta\n     2\tb\n", 2, false},
		{"offset", "a\nb\nc\n", 2, 0, "     2\tb\n     3\tc\n", 3, true},
		{"limit", "a\nb\nc\n", 1, 2, "     1\ta\n     2\tb\n", 3, true},
		{"offset and limit", "a\nb\nc\nd\n", 2, 2, "     2\tb\n     3\tc\n", 4, true},
		{"offset past end", "a\n", 5, 0, "", 1, true},
		{"blank line", "a\n\nb\n", 0, 0, "     1\ta\n     2\t\n     3\tb\n", 3, false},
		{"long line cut", long + "\nx\n", 0, 0, "     1\t" + strings.Repeat("é", MaxLineLength) + " [... 5 more characters]\n     2\tx\n", 2, true},
		{"wide number", strings.Repeat("x\n", 1000000), 999999, 1, "999999\tx\n", 1000000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view, total, truncated := Numbered(tt.text, tt.offset, tt.limit)
			if view != tt.want || total != tt.total || truncated != tt.truncated {
				t.Errorf("Numbered() = %q, %d, %v; want %q, %d, %v", view, total, truncated, tt.want, tt.total, tt.truncated)
			}
		})
	}
}

// TestNumberedRoundTrip checks that a numbered view pasted into old_string
// matches the text it was made from.
func TestNumberedRoundTrip(t *testing.T) {
	text := "package p\n\nfunc f() {\n\treturn\n}\n"
	view, _, _ := Numbered(text, 3, 2)
	res, err := Apply(text, []Edit{{Old: strings.TrimSuffix(view, "\n"), New: "func g() {\n\treturn"}})
	if err != nil {
		t.Fatalf("Apply(numbered view) error = %v", err)
	}
	if want := "package p\n\nfunc g() {\n\treturn\n}\n"; res.Text != want {
		t.Errorf("Apply().Text = %q, want %q", res.Text, want)
	}
	if res.MatchedWith[0] != MatchLineNumbers {
		t.Errorf("MatchedWith = %v, want %s", res.MatchedWith, MatchLineNumbers)
	}
}
