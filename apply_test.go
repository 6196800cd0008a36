package editguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

func TestApplyPatch(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	dry, err := s.ApplyPatch(ctx, applyPatchText, &editguard.PatchOptions{DryRun: true})
	if err != nil || !dry.DryRun || len(dry.Files) != 5 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("dry run changed the tree")
	}
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"src/a.go":    "package a\n\nfunc A() {\n\treturn 2\n}\n",
		"crlf.txt":    "one\r\nTWO\r\n", // the file keeps its line endings
		"docs/new.md": "# New\n",
		"moved/b.txt": "BETA\n",
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tree after the patch = %q, want %q", got, want)
	}
	for _, f := range res.Files {
		if f.BackupVersion == "" {
			t.Errorf("%s: no history version", f.Path)
		}
	}
	// Everything can be undone from history, and the reads followed.
	if got, _ := editguard.VersionContent(w, "old.txt", res.Files[3].BackupVersion); string(got) != "old\n" {
		t.Errorf("history of old.txt = %q", got)
	}
	if _, err := s.Edit(ctx, "moved/b.txt", []editguard.Edit{{OldString: "BETA", NewString: "b"}}, nil); err != nil {
		t.Errorf("edit of the moved file without a read: %v", err)
	}
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	if j := journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
}

// TestApplyPatchAllOrNothing: any refusal leaves every file as it was.
func TestApplyPatchAllOrNothing(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string, s *editguard.Session)
		patch string
		code  editguard.Code
	}{
		{"a file changed after the read", func(t *testing.T, dir string, s *editguard.Session) {
			writeFile(t, dir, "old.txt", "changed by a person\n")
		}, applyPatchText, editguard.CodeStaleFile},
		{"a file never read", func(t *testing.T, dir string, s *editguard.Session) {
			s.BeginTurn()
		}, applyPatchText, editguard.CodeNotRead},
		{"add onto an existing file", nil, strings.Replace(applyPatchText, "*** Add File: docs/new.md", "*** Add File: old2.txt", 1) + "", editguard.CodeStaleFile},
		{"a hunk that matches nowhere", nil, strings.Replace(applyPatchText, "-beta\n+BETA", "-gamma\n+GAMMA", 1), editguard.CodeNoMatch},
		{"a protected path", nil, strings.Replace(applyPatchText, "docs/new.md", ".git/hooks/pre-commit", 1), editguard.CodeProtectedPath},
		{"a path out of the root", nil, strings.Replace(applyPatchText, "docs/new.md", "../escape.md", 1), editguard.CodeInvalidArgument},
		{"move onto an existing file", nil, strings.Replace(applyPatchText, "moved/b.txt", "old2.txt", 1), editguard.CodeStaleFile},
		{"a file named twice", nil, strings.Replace(applyPatchText, "moved/b.txt", "src/a.go", 1), editguard.CodeInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, dir, s := applyWorkspace(t)
			writeFile(t, dir, "old2.txt", "exists\n")
			if c.setup != nil {
				c.setup(t, dir, s)
			}
			before := tree(t, dir)
			_, err := s.ApplyPatch(ctx, c.patch, nil)
			if errorCode(err) != c.code {
				t.Fatalf("ApplyPatch = %v, want %s", err, c.code)
			}
			if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
				t.Fatalf("a refused patch changed the tree:\n%q\nwas\n%q", got, before)
			}
		})
	}
}

// TestApplyPatchFailureMidway makes the third file's commit fail: the two
// files already changed are put back, and the journal is removed.
func TestApplyPatchFailureMidway(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	renames := 0
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "renameat2" || c.Op == "renameat" {
			renames++
			if renames == 3 {
				return syscall.EIO
			}
		}
		return nil
	}, nil, nil)
	_, err := s.ApplyPatch(ctx, applyPatchText, nil)
	editguard.SetFaults(w, nil, nil, nil)
	if err == nil {
		t.Fatal("ApplyPatch succeeded through a failing rename")
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after a failure midway the tree is\n%q\nwant\n%q", got, before)
	}
	if j := journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
	// The session can apply it now.
	if _, err := s.ApplyPatch(ctx, applyPatchText, nil); err != nil {
		t.Fatalf("ApplyPatch after the failure: %v", err)
	}
}

func TestUndoPatch(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := tree(t, dir)
	// Another session, which read nothing, undoes it: the ledger vouches
	// for what the patch wrote.
	other := w.NewSession("other")
	if _, err := other.UndoPatch(ctx, "nope", nil); errorCode(err) != editguard.CodeInvalidArgument {
		t.Fatalf("undo of an unknown transaction: %v", err)
	}
	dry, err := other.UndoPatch(ctx, res.TxID, &editguard.UndoOptions{DryRun: true})
	if err != nil || len(dry.Files) != 6 {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if fmt.Sprint(tree(t, dir)) != fmt.Sprint(after) {
		t.Fatal("a dry run changed the tree")
	}
	undo, err := other.UndoPatch(ctx, res.TxID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after the undo:\n%q\nwant\n%q", got, before)
	}
	// The undo is a transaction too, and can be undone.
	if _, err := other.UndoPatch(ctx, undo.TxID, nil); err != nil {
		t.Fatalf("undo of the undo: %v", err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("after undoing the undo:\n%q\nwant\n%q", got, after)
	}
	// A file changed after the patch: the undo refuses, and changes nothing.
	writeFile(t, dir, "docs/new.md", "# New, edited by a person\n")
	changed := tree(t, dir)
	if _, err := other.UndoPatch(ctx, res.TxID, nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("undo over a later change: %v, want STALE_FILE", err)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(changed) {
		t.Fatal("a refused undo changed the tree")
	}
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
}

// TestRecoverJournal writes, for a patch that committed, the journal its
// process would have left had it died just before the commit: the next
// Open must put every file back. A journal that cannot be rolled back
// leaves the workspace usable and is reported.
func TestRecoverJournal(t *testing.T) {
	ctx := context.Background()
	w, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	res, err := s.ApplyPatch(ctx, applyPatchText, nil)
	if err != nil {
		t.Fatal(err)
	}
	var files []map[string]any
	w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Strategy == "transaction "+res.TxID {
			files = append(files, map[string]any{
				"path": r.Path, "before_exists": r.Observed != nil && r.Observed.Exists, "before_sha256": r.SHA256Before,
				"version": r.HistoryVersion, "after_exists": r.SHA256After != "", "after_sha256": r.SHA256After,
			})
		}
		return nil
	})
	if len(files) != 6 {
		t.Fatalf("ledger records of the transaction: %d, want 6", len(files))
	}
	w.Close()
	writeJournal := func(id string, files []map[string]any) {
		data, _ := json.Marshal(map[string]any{"tx": id, "op": "apply_patch", "session": "s", "files": files})
		data = editguard.SealJournal(w, data)
		if err := os.WriteFile(filepath.Join(dir, ".editguard", "tx", id+".json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeJournal("crashed", files)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := w2.Recovery().RolledBack; len(got) != 1 || got[0] != "crashed" {
		t.Errorf("RolledBack() = %v", got)
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after recovery:\n%q\nwant\n%q", got, before)
	}
	w2.Close()
	// A journal naming a path out of the root cannot be rolled back: Open
	// still works, reports it, and keeps the journal for a person.
	writeJournal("odd", []map[string]any{{"path": "../outside.txt", "before_exists": false, "after_exists": true, "after_sha256": sha256hex([]byte("x"))}})
	w3, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatalf("Open with a journal it cannot roll back: %v", err)
	}
	defer w3.Close()
	if p := noteMessages(w3.Recovery().Problems); len(p) != 1 || !strings.Contains(p[0], "odd") {
		t.Errorf("TransactionProblems() = %v", p)
	}
	if j := journals(t, dir); len(j) != 1 || j[0] != "odd.json" {
		t.Errorf("journals = %v, want odd.json kept", j)
	}
}

// TestApplyPatchAddOntoDirectory: adding a file where a directory is, named
// with or without a trailing slash, is NOT_A_FILE, and nothing changes.
func TestApplyPatchAddOntoDirectory(t *testing.T) {
	_, dir, s := applyWorkspace(t)
	before := tree(t, dir)
	for _, name := range []string{"src/", "src"} {
		_, err := s.ApplyPatch(context.Background(), "*** Begin Patch\n*** Add File: "+name+"\n+x\n*** End Patch\n", nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeNotAFile {
			t.Errorf("Add File: %s onto a directory: error = %v, want NOT_A_FILE", name, err)
		}
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("the tree changed:\n%q\nwant\n%q", got, before)
	}
}

// TestApplyPatchSymlinkIsAName: a patch that deletes or moves a symlink is
// NOT_A_FILE; the file the link points to and the link stay as they were.
func TestApplyPatchSymlinkIsAName(t *testing.T) {
	_, dir, s := applyWorkspace(t)
	if err := os.Symlink("b.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	for _, p := range []string{
		"*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: link.txt\n*** Move to: moved.txt\n@@\n-beta\n+beta\n*** End Patch\n",
		"*** Begin Patch\n*** Update File: old.txt\n*** Move to: link.txt\n@@\n-old\n+old\n*** End Patch\n",
	} {
		_, err := s.ApplyPatch(context.Background(), p, nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeNotAFile {
			t.Errorf("patch %q: error = %v, want NOT_A_FILE", p, err)
		}
	}
	if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("the tree changed:\n%q\nwant\n%q", got, before)
	}
	if l, err := os.Readlink(filepath.Join(dir, "link.txt")); err != nil || l != "b.txt" {
		t.Errorf("link.txt = %q, %v", l, err)
	}
}

// TestApplyPatchLedgerFailureKeepsJournal: when the ledger refuses a
// committed patch's records, the journal stays, so that the next Open
// finishes the transaction: forward when some record was written (every
// file then has its record), back when none was. No file is left changed
// without a record.
func TestApplyPatchLedgerFailureKeepsJournal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		failAt int // the ledger write that fails first; every later one fails too
		want   map[string]string
	}{
		{"second record refused", 2, applyAfter},
		{"every record refused", 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir, s := applyWorkspace(t)
			before := tree(t, dir)
			writes := 0
			editguard.SetFaults(w, nil, nil, func(op, name string) error {
				if op == "write" {
					if writes++; writes >= tc.failAt {
						return syscall.EIO
					}
				}
				return nil
			})
			res, err := s.ApplyPatch(ctx, applyPatchText, nil)
			editguard.SetFaults(w, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(res.Warnings, "\n"), "journal is kept") {
				t.Fatalf("warnings %q, want the kept journal said", res.Warnings)
			}
			if j := journals(t, dir); len(j) != 1 {
				t.Fatalf("journals %v, want the transaction's", j)
			}
			w.Close()
			w2, err := editguard.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w2.Close()
			want := tc.want
			if want == nil {
				want = before
			}
			if got := tree(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the next Open:\n%v\nwant\n%v", got, want)
			}
			if j := journals(t, dir); len(j) != 0 {
				t.Fatalf("journals left after Open: %v", j)
			}
			if tc.want != nil {
				ok := map[string]bool{}
				if err := w2.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
					ok[r.Path] = ok[r.Path] || r.Outcome == "ok"
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				for p := range applyAfter {
					if !ok[p] {
						t.Errorf("%s has no ok record after the roll forward", p)
					}
				}
			}
		})
	}
}

// TestApplyPatchRefusalNamesTheFile: the ledger record of a refused patch
// names the file that was refused, not the patch's first file.
func TestApplyPatchRefusalNamesTheFile(t *testing.T) {
	w, dir, s := applyWorkspace(t)
	writeFile(t, dir, "old.txt", "changed by a person\n")
	if _, err := s.ApplyPatch(context.Background(), applyPatchText, nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("ApplyPatch = %v, want STALE_FILE", err)
	}
	var last *editguard.LedgerRecord
	if err := w.Log(editguard.LogFilter{Tool: "apply_patch"}, func(r *editguard.LedgerRecord) error { last = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if last == nil || last.Path != "old.txt" || last.Outcome == "ok" {
		t.Fatalf("the refusal's record %+v, want it to name old.txt", last)
	}
}
