package editguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestApplyPatchMergesStaleHunks: a patch whose file changed since the
// session's read applies when every hunk replaces lines that change left
// alone, keeping it byte for byte; the result says it merged and shows
// the change, and the session's read of the file becomes partial. A hunk
// that touches the changed lines, a hunk that only adds lines, NoMerge and
// a delete refuse with STALE_FILE and change nothing, in any file.
func TestApplyPatchMergesStaleHunks(t *testing.T) {
	ctx := context.Background()
	const orig = "one\ntwo\nthree\nfour\nfive\nsix\n"
	setup := func(t *testing.T) (*editguard.Session, string) {
		w, err := editguard.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		dir := w.Dir()
		writeFile(t, dir, "a.txt", orig)
		writeFile(t, dir, "b.txt", "b\n")
		s := w.NewSession("agent")
		for _, p := range []string{"a.txt", "b.txt"} {
			if _, err := s.Read(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Someone else changes line 1.
		writeFile(t, dir, "a.txt", "ONE (theirs)\ntwo\nthree\nfour\nfive\nsix\n")
		return s, dir
	}
	read := func(t *testing.T, dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	both := "*** Begin Patch\n*** Update File: a.txt\n@@\n four\n-five\n+FIVE\n*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"

	t.Run("disjoint merges", func(t *testing.T) {
		s, dir := setup(t)
		res, err := s.ApplyPatch(ctx, both, nil)
		if err != nil {
			t.Fatalf("ApplyPatch: %v", err)
		}
		if got := read(t, dir, "a.txt"); got != "ONE (theirs)\ntwo\nthree\nfour\nFIVE\nsix\n" {
			t.Errorf("a.txt = %q; want both changes", got)
		}
		if got := read(t, dir, "b.txt"); got != "B\n" {
			t.Errorf("b.txt = %q", got)
		}
		a := res.Files[0]
		if !a.Merged || !strings.Contains(a.ExternalDiff, "+ONE (theirs)") || res.Files[1].Merged {
			t.Errorf("files = %+v; want a.txt merged with the other change shown, b.txt not", res.Files)
		}
		// The read is partial now: a whole-file write needs a read first.
		if _, err := s.Write(ctx, "a.txt", "x\n", nil); !errors.Is(err, editguard.ErrNotRead) {
			t.Errorf("a whole-file write after the merge: %v; want NOT_READ (partial read)", err)
		}
		if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "six", NewString: "SIX"}}, nil); err != nil {
			t.Errorf("an edit after the merge: %v", err)
		}
	})

	for _, tc := range []struct{ name, patch, why string }{
		{"overlapping refuses", "*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+B\n*** Update File: a.txt\n@@\n four\n-five\n+FIVE\n@@\n-one\n-two\n+ONE\n+TWO\n*** End Patch\n", "hunk 2's old lines do not occur exactly once in the file now"},
		{"addition only refuses", "*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+B\n*** Update File: a.txt\n@@\n+zero\n*** End Patch\n", "replaces no lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, dir := setup(t)
			_, err := s.ApplyPatch(ctx, tc.patch, nil)
			var e *editguard.Error
			if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile || !strings.Contains(e.Details["not_merged"].(string), tc.why) {
				t.Fatalf("ApplyPatch = %v (%v); want STALE_FILE, not merged because it %s", err, e.Details["not_merged"], tc.why)
			}
			if got := read(t, dir, "b.txt"); got != "b\n" {
				t.Errorf("b.txt = %q; a refused patch changes nothing", got)
			}
		})
	}
	t.Run("NoMerge refuses", func(t *testing.T) {
		s, dir := setup(t)
		if _, err := s.ApplyPatch(ctx, both, &editguard.PatchOptions{NoMerge: true}); !errors.Is(err, editguard.ErrStaleFile) {
			t.Fatalf("ApplyPatch with NoMerge = %v; want STALE_FILE", err)
		}
		if got := read(t, dir, "a.txt"); got != "ONE (theirs)\ntwo\nthree\nfour\nfive\nsix\n" {
			t.Errorf("a.txt = %q", got)
		}
	})
	t.Run("delete refuses", func(t *testing.T) {
		s, _ := setup(t)
		if _, err := s.ApplyPatch(ctx, "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n", nil); !errors.Is(err, editguard.ErrStaleFile) {
			t.Fatalf("a stale delete = %v; want STALE_FILE", err)
		}
	})
}
