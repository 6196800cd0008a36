package textedit

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestApplyGolden runs the cases in testdata/apply. Each archive holds:
//
//	in       the text (in.q: Go-quoted)
//	edit     JSON edits: [{"old_string", "new_string", "replace_all"}]
//	want     the expected text (want.q: Go-quoted), with
//	matched  the expected MatchedWith, comma-separated; or
//	error    the expected failure: "no_match closest=2,5", "ambiguous
//	         count=2 lines=1,3", "no_change", "empty_old"
func TestApplyGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/apply/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in := archiveFile(t, ar, "in")
			var raw []struct {
				Old        string `json:"old_string"`
				New        string `json:"new_string"`
				ReplaceAll bool   `json:"replace_all"`
			}
			if err := json.Unmarshal([]byte(archiveFile(t, ar, "edit")), &raw); err != nil {
				t.Fatalf("bad edit: %v", err)
			}
			var edits []Edit
			for _, e := range raw {
				edits = append(edits, Edit{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll})
			}
			res, err := Apply(in, edits)
			if spec, ok := lookupFile(ar, "error"); ok {
				if res != nil {
					t.Errorf("Apply() result = %+v, want nil on error", res)
				}
				checkApplyError(t, err, strings.TrimSpace(spec))
				return
			}
			if err != nil {
				t.Fatalf("Apply() error = %v", err)
			}
			if want := archiveFile(t, ar, "want"); res.Text != want {
				t.Errorf("Apply().Text =\n%q\nwant\n%q", res.Text, want)
			}
			if m, ok := lookupFile(ar, "matched"); ok {
				if got, want := strings.Join(res.MatchedWith, ","), strings.TrimSpace(m); got != want {
					t.Errorf("Apply().MatchedWith = %s, want %s", got, want)
				}
			}
		})
	}
}

func checkApplyError(t *testing.T, err error, spec string) {
	t.Helper()
	fields := strings.Fields(spec)
	opts := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		opts[k] = v
	}
	switch fields[0] {
	case "no_match":
		var e *NoMatchError
		if !errors.As(err, &e) {
			t.Fatalf("Apply() error = %v, want *NoMatchError", err)
		}
		if want, ok := opts["closest"]; ok {
			var got []string
			for _, l := range e.Closest {
				got = append(got, strconv.Itoa(l.Number))
			}
			if strings.Join(got, ",") != want {
				t.Errorf("NoMatchError.Closest = %+v, want lines %s", e.Closest, want)
			}
		}
	case "ambiguous":
		var e *AmbiguousError
		if !errors.As(err, &e) {
			t.Fatalf("Apply() error = %v, want *AmbiguousError", err)
		}
		if got := strconv.Itoa(e.Count); got != opts["count"] {
			t.Errorf("AmbiguousError.Count = %s, want %s", got, opts["count"])
		}
		if got := strings.Trim(strings.Join(strings.Fields(fmt.Sprint(e.Lines)), ","), "[]"); got != opts["lines"] {
			t.Errorf("AmbiguousError.Lines = %v, want %s", e.Lines, opts["lines"])
		}
	case "no_change":
		var e *NoChangeError
		if !errors.As(err, &e) {
			t.Fatalf("Apply() error = %v, want *NoChangeError", err)
		}
	case "empty_old":
		var e *EmptyOldError
		if !errors.As(err, &e) {
			t.Fatalf("Apply() error = %v, want *EmptyOldError", err)
		}
	default:
		t.Fatalf("bad error spec %q", spec)
	}
}

func lookupFile(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// archiveFile returns name as is, or name.q unquoted.
func archiveFile(t *testing.T, ar *txtar.Archive, name string) string {
	t.Helper()
	if s, ok := lookupFile(ar, name); ok {
		return s
	}
	if s, ok := lookupFile(ar, name+".q"); ok {
		u, err := strconv.Unquote(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("%s.q: %v", name, err)
		}
		return u
	}
	t.Fatalf("no %s file", name)
	return ""
}

// FuzzApply checks that a unique exact edit changes exactly the matched
// span and nothing else, and that Apply either succeeds or returns one of
// its error types.
func FuzzApply(f *testing.F) {
	f.Fuzz(func(t *testing.T, text, old, repl string, all bool) {
		res, err := Apply(text, []Edit{{Old: old, New: repl, ReplaceAll: all}})
		if err != nil {
			var (
				nm *NoMatchError
				am *AmbiguousError
				nc *NoChangeError
				eo *EmptyOldError
			)
			if !errors.As(err, &nm) && !errors.As(err, &am) && !errors.As(err, &nc) && !errors.As(err, &eo) {
				t.Fatalf("Apply() error = %v (%T), not one of the documented types", err, err)
			}
			return
		}
		if res.Text == text {
			t.Fatalf("Apply() succeeded without a change")
		}
		if res.MatchedWith[0] != MatchExact {
			return
		}
		if i := strings.Index(text, old); !all && i >= 0 {
			want := text[:i] + repl + text[i+len(old):]
			if res.Text != want {
				t.Fatalf("Apply(%q, %q→%q) = %q, want %q", text, old, repl, res.Text, want)
			}
		}
	})
}
