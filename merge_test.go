package editguard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestStaleEditMerges: an edit of text another writer's change left alone
// is applied over that change, which is kept byte for byte; one whose text
// the other change touched is refused as before, saying why.
func TestStaleEditMerges(t *testing.T) {
	ctx := context.Background()
	base := lines(40, func(i int) string { return fmt.Sprintf("line %d", i) })
	person := func(i int, text string) string {
		return lines(40, func(j int) string {
			if j == i {
				return text
			}
			return fmt.Sprintf("line %d", j)
		})
	}
	tests := []struct {
		name   string
		theirs string // the file after the other writer
		edits  []editguard.Edit
		opts   *editguard.EditOptions
		want   string // the file after the edit; "" for STALE_FILE
		why    string // part of not_merged
	}{
		{"far apart", person(3, "line 3 by a person"), []editguard.Edit{{OldString: "line 30\n", NewString: "line thirty\n"}}, nil,
			strings.Replace(person(3, "line 3 by a person"), "line 30\n", "line thirty\n", 1), ""},
		{"on the next line", person(11, "line 11 by a person"), []editguard.Edit{{OldString: "line 10\n", NewString: "line ten\n"}}, nil,
			strings.Replace(person(11, "line 11 by a person"), "line 10\n", "line ten\n", 1), ""},
		{"two edits", person(20, "line 20 by a person"), []editguard.Edit{{OldString: "line 5\n", NewString: "line five\n"}, {OldString: "line 35\n", NewString: "line 35!\n"}}, nil,
			strings.Replace(strings.Replace(person(20, "line 20 by a person"), "line 5\n", "line five\n", 1), "line 35\n", "line 35!\n", 1), ""},
		{"the same line", person(10, "line 10 by a person"), []editguard.Edit{{OldString: "line 10\n", NewString: "line ten\n"}}, nil, "", "does not occur exactly once in the file now"},
		{"within the lines replaced", person(11, "line 11 by a person"), []editguard.Edit{{OldString: "line 10\nline 11\nline 12\n", NewString: "x\n"}}, nil, "", "does not occur exactly once in the file now"},
		{"lines inserted inside", strings.Replace(base, "line 11\n", "line 11\ninserted\n", 1), []editguard.Edit{{OldString: "line 10\nline 11\n", NewString: "x\n"}}, nil,
			strings.Replace(strings.Replace(base, "line 11\n", "line 11\ninserted\n", 1), "line 10\nline 11\n", "x\n", 1), ""},
		{"lines inserted between", strings.Replace(base, "line 11\n", "line 11\ninserted\n", 1), []editguard.Edit{{OldString: "line 11\nline 12\n", NewString: "x\n"}}, nil, "", "does not occur exactly once in the file now"},
		{"the lines moved elsewhere", strings.Replace(base, "line 10\nline 11\n", "", 1) + "line 10\nline 11\n", []editguard.Edit{{OldString: "line 10\nline 11\n", NewString: "x\n"}}, nil, "", "the other change touches the lines edit 1 replaces"},
		{"old text now twice", person(30, "line 12"), []editguard.Edit{{OldString: "line 12\n", NewString: "line twelve\n"}}, nil, "", "exactly once in the file now"},
		{"replace_all", person(3, "line 3 by a person"), []editguard.Edit{{OldString: "line 30\n", NewString: "x\n", ReplaceAll: true}}, nil, "", "replace_all"},
		{"merging off", person(3, "line 3 by a person"), []editguard.Edit{{OldString: "line 30\n", NewString: "x\n"}}, &editguard.EditOptions{NoMerge: true}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, dir := newWorkspace(t)
			writeFile(t, dir, "a.txt", base)
			s := w.NewSession("agent")
			if _, err := s.Read(ctx, "a.txt", nil); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "a.txt", tt.theirs)
			res, err := s.Edit(ctx, "a.txt", tt.edits, tt.opts)
			got := readFile(t, dir, "a.txt")
			if tt.want == "" {
				e := staleErr(t, err)
				if why, _ := e.Details["not_merged"].(string); !strings.Contains(why, tt.why) || (tt.why == "") != (why == "") {
					t.Errorf("not_merged = %q, want %q", why, tt.why)
				}
				if got != tt.theirs {
					t.Fatalf("a refused edit changed the file:\n%s", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Edit: %v", err)
			}
			if got != tt.want {
				t.Fatalf("file after the merge:\n%s\nwant\n%s", got, tt.want)
			}
			if !res.Merged || res.Strategy != "merged" || !strings.Contains(res.ExternalDiff, "+") {
				t.Errorf("result %+v, want it merged with the other change's diff", res)
			}
			// The other writer's version is kept, and the ledger says
			// merged.
			kept := false
			vs, _ := w.History("a.txt")
			for _, v := range vs {
				if b, err := editguard.VersionContent(w, "a.txt", v.ID); err == nil && string(b) == tt.theirs {
					kept = true
				}
			}
			if !kept {
				t.Errorf("history of a.txt does not hold the other writer's version")
			}
			var strategy string
			w.Log(editguard.LogFilter{Path: "a.txt"}, func(r *editguard.LedgerRecord) error {
				if r.Outcome == "ok" {
					strategy = r.Strategy
				}
				return nil
			})
			if strategy != "merged" {
				t.Errorf("ledger strategy %q, want merged", strategy)
			}
			// The session's baseline follows: a whole-file write needs a
			// read first, since the session saw the other change only as a
			// diff; another edit needs none.
			if _, err := s.Write(ctx, "a.txt", "whole\n", nil); errorCode(err) != editguard.CodeNotRead {
				t.Errorf("write after the merge = %v, want NOT_READ (partial)", err)
			}
			if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "line 39\n", NewString: "end\n"}}, nil); err != nil {
				t.Errorf("edit after the merge: %v", err)
			}
		})
	}
}

// TestStaleEditMergesUnderWorkspaceOption: Options.NoMerge turns merging
// off for every session.
func TestStaleEditMergesUnderWorkspaceOption(t *testing.T) {
	ctx := context.Background()
	w, err := editguard.Open(t.TempDir(), &editguard.Options{NoMerge: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	writeFile(t, w.Dir(), "a.txt", "one\ntwo\nthree\nfour\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, w.Dir(), "a.txt", "ONE\ntwo\nthree\nfour\n")
	_, err = s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "four\n", NewString: "4\n"}}, nil)
	staleErr(t, err)
}
