package editguard_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

// TestPatchFailureRecordNamesTheFile: when a patch fails on its second
// file, the ledger record names that file, as the error does, whether the
// file was refused before the patch got to it or while it was checked.
func TestPatchFailureRecordNamesTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, second, want string
		code               editguard.Code
		setup              func(t *testing.T, dir string)
	}{
		{"protected", "*** Add File: .editguard/x\n+x\n", ".editguard/x", editguard.CodeProtectedPath, nil},
		{"denied", "*** Add File: .git/config\n+x\n", ".git/config", editguard.CodeProtectedPath, nil},
		{"symlink", "*** Delete File: link\n", "link", editguard.CodeNotAFile, func(t *testing.T, dir string) {
			if err := os.Symlink("b.txt", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
		}},
		{"no match", "*** Update File: b.txt\n@@\n-zzz\n+B\n", "b.txt", editguard.CodeNoMatch, nil},
		{"not portable", "*** Add File: sub/aux.c\n+x\n", "sub/aux.c", editguard.CodeInvalidArgument, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w, err := editguard.Open(t.TempDir(), &editguard.Options{Names: editguard.NamesRefuse})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			dir := w.Dir()
			writeFile(t, dir, "a.txt", "a\n")
			writeFile(t, dir, "b.txt", "b\n")
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			s := w.NewSession("agent")
			for _, p := range []string{"a.txt", "b.txt"} {
				if _, err := s.Read(ctx, p, nil); err != nil {
					t.Fatal(err)
				}
			}
			patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n" + tc.second + "*** End Patch\n"
			_, err = s.ApplyPatch(ctx, patch, nil)
			if errorCode(err) != tc.code {
				t.Fatalf("ApplyPatch = %v, want %s", err, tc.code)
			}
			if p, _ := errorDetail(err, "path"); p != tc.want {
				t.Errorf("the error names %v, want %s", p, tc.want)
			}
			var last *editguard.LedgerRecord
			if err := w.Log(editguard.LogFilter{Tool: "apply_patch"}, func(r *editguard.LedgerRecord) error { last = r; return nil }); err != nil {
				t.Fatal(err)
			}
			if last == nil || last.Path != tc.want || last.Outcome == "ok" {
				t.Errorf("the failure's record %+v, want it to name %s", last, tc.want)
			}
			if readFile(t, dir, "a.txt") != "a\n" {
				t.Error("a.txt was changed by a refused patch")
			}
		})
	}
}
