package merge

import (
	"errors"
	"testing"

	"github.com/editguard/editguard/internal/textedit"
)

func TestEdits(t *testing.T) {
	seen := []byte("a\nb\nc\nd\ne\n")
	for _, tc := range []struct {
		name, cur string
		edits     []textedit.Edit
		want      string // the merged text, or "" for a refusal
	}{
		{"apart from the other change", "A\nb\nc\nd\ne\n", []textedit.Edit{{Old: "e", New: "E"}}, "A\nb\nc\nd\nE\n"},
		{"on the line the other change replaced", "a\nb\nC\nd\ne\n", []textedit.Edit{{Old: "c", New: "x"}}, ""},
		{"across an insertion", "a\nb\nnew\nc\nd\ne\n", []textedit.Edit{{Old: "b\nc", New: "bc"}}, ""},
		{"replace_all", "A\nb\nc\nd\ne\n", []textedit.Edit{{Old: "e", New: "E", ReplaceAll: true}}, ""},
		{"same text", "a\nb\nc\nd\ne\n", []textedit.Edit{{Old: "e", New: "E"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, diff, _, err := Edits(seen, "", tc.cur, tc.edits)
			var r *Refusal
			switch {
			case tc.want == "" && !errors.As(err, &r):
				t.Errorf("Edits = %q, %v; want a refusal", got, err)
			case tc.want != "" && (err != nil || got != tc.want || diff == ""):
				t.Errorf("Edits = %q (diff %q), %v; want %q with the other change's diff", got, diff, err, tc.want)
			}
		})
	}
}
