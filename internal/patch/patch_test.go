package patch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestGolden runs the cases in testdata/*.txtar. Each archive holds a
// "patch" file, the files before ("in/PATH"), and either the files after
// ("out/PATH"; a file missing from out/ must be gone) or an "error" file
// with a substring of the expected error. A "matched" file lists the
// strategy of each hunk of each updated file, one "PATH: s1 s2" per line.
func TestGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	if len(files) == 0 {
		t.Fatal("no cases")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			a, err := txtar.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, out := map[string]string{}, map[string]string{}
			var patchText, wantErr, wantMatched string
			hasOut := false
			for _, af := range a.Files {
				switch {
				case af.Name == "patch":
					patchText = string(af.Data)
				case af.Name == "error":
					wantErr = strings.TrimSpace(string(af.Data))
				case af.Name == "matched":
					wantMatched = string(af.Data)
				case strings.HasPrefix(af.Name, "in/"):
					in[af.Name[3:]] = string(af.Data)
				case strings.HasPrefix(af.Name, "out/"):
					out[af.Name[4:]] = string(af.Data)
					hasOut = true
				case af.Name == "out":
					hasOut = true
				}
			}
			got, matched, err := applyAll(patchText, in)
			if wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !hasOut {
				t.Fatal("case has neither out/ files nor an error")
			}
			for name, want := range out {
				if got[name] != want {
					t.Errorf("%s =\n%q\nwant\n%q", name, got[name], want)
				}
			}
			for name := range got {
				if _, ok := out[name]; !ok {
					t.Errorf("%s exists after the patch, want it gone", name)
				}
			}
			if wantMatched != "" && matched != wantMatched {
				t.Errorf("matched =\n%swant\n%s", matched, wantMatched)
			}
		})
	}
}

// applyAll applies a patch to an in-memory tree, all or nothing.
func applyAll(patchText string, tree map[string]string) (map[string]string, string, error) {
	ops, err := Parse(patchText)
	if err != nil {
		return nil, "", err
	}
	out := map[string]string{}
	for k, v := range tree {
		out[k] = v
	}
	var matched strings.Builder
	for _, op := range ops {
		old, exists := out[op.Path]
		switch op.Kind {
		case Add:
			if exists {
				return nil, "", fmt.Errorf("add %s: the file exists", op.Path)
			}
			out[op.Path] = op.Content
		case Delete:
			if !exists {
				return nil, "", fmt.Errorf("delete %s: no such file", op.Path)
			}
			delete(out, op.Path)
		case Update:
			if !exists {
				return nil, "", fmt.Errorf("update %s: no such file", op.Path)
			}
			text := old
			if len(op.Hunks) > 0 {
				r, err := Apply(old, op.Hunks)
				if err != nil {
					return nil, "", fmt.Errorf("%s: %w", op.Path, err)
				}
				text = r.Text
				fmt.Fprintf(&matched, "%s: %s\n", op.Path, strings.Join(r.Matched, " "))
			}
			if op.MoveTo != "" {
				if _, taken := out[op.MoveTo]; taken {
					return nil, "", fmt.Errorf("move %s: %s exists", op.Path, op.MoveTo)
				}
				delete(out, op.Path)
				out[op.MoveTo] = text
			} else {
				out[op.Path] = text
			}
		}
	}
	return out, matched.String(), nil
}

func TestErrorsCarryDetails(t *testing.T) {
	_, err := Apply("a\nx\nb\nx\n", []Hunk{{Lines: []Line{{'-', "x"}, {'+', "y"}}}})
	var ae *AmbiguousError
	if !errors.As(err, &ae) || !slices.Equal(ae.Lines, []int{2, 4}) {
		t.Fatalf("ambiguous: %v", err)
	}
	_, err = Apply("a\n", []Hunk{{Anchors: []string{"func f()"}, Lines: []Line{{'+', "y"}}}})
	var ne *NoMatchError
	if !errors.As(err, &ne) || ne.Anchor != "func f()" {
		t.Fatalf("missing anchor: %v", err)
	}
}

func TestNoFinalNewline(t *testing.T) {
	h := []Hunk{{Lines: []Line{{'-', "a"}, {'+', "A"}}}}
	if r, err := Apply("a\nb", h); err != nil || r.Text != "A\nb" {
		t.Errorf("untouched last line: %q, %v", r.Text, err)
	}
	h = []Hunk{{Lines: []Line{{'-', "b"}, {'+', "B"}}}}
	if r, err := Apply("a\nb", h); err != nil || r.Text != "a\nB\n" {
		t.Errorf("changed last line: %q, %v", r.Text, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, p := range []string{
		"",
		"*** Begin Patch\n*** Add File: ../x\n+a\n*** End Patch\n",
		"*** Begin Patch\n*** Add File: /etc/x\n+a\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a\n@@\n x\n",
		"*** Begin Patch\n*** Update File: a\n@@\n x\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch\n",
		"*** Begin Patch\n*** Frobnicate File: a\n*** End Patch\n",
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n",
		"@@ -1 +1 @@\n-a\n+b\n",
		"*** Begin Patch\n*** Delete File: a\n*** Delete File: a\n*** End Patch\n",
	} {
		if _, err := Parse(p); err == nil {
			t.Errorf("Parse(%q) succeeded", p)
		}
	}
	_ = os.Stdout
}
