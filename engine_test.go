//go:build unix

package editguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// A changePath is one way a Session changes files, set up to be made:
// setup prepares a workspace and returns the change, the file it changes
// (relative to dir) and the session that makes it.
type changePath struct {
	name  string
	setup func(t *testing.T) (w *editguard.Workspace, s *editguard.Session, dir, file string, do func(context.Context) error)
}

// oneFile opens a workspace holding a.txt = "one\n", read by session "s".
func oneFile(t *testing.T) (*editguard.Workspace, *editguard.Session, string) {
	t.Helper()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("s")
	if _, err := s.Read(context.Background(), "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	return w, s, dir
}

const patchOneToTwo = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch\n"

// changePaths are every Session method that changes files, each made once.
var changePaths = []changePath{
	{"Write", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.Write(ctx, "a.txt", "two\n", nil)
			return err
		}
	}},
	{"Edit", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "one", NewString: "two"}}, nil)
			return err
		}
	}},
	{"Delete", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.Delete(ctx, "a.txt", nil)
			return err
		}
	}},
	{"Restore", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		r, err := s.Write(context.Background(), "a.txt", "two\n", nil)
		if err != nil {
			t.Fatal(err)
		}
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.Restore(ctx, "a.txt", r.BackupVersion, nil)
			return err
		}
	}},
	{"Move", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.Move(ctx, "a.txt", "sub/b.txt", nil)
			return err
		}
	}},
	{"ApplyPatch", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.ApplyPatch(ctx, patchOneToTwo, nil)
			return err
		}
	}},
	{"UndoPatch", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		r, err := s.ApplyPatch(context.Background(), patchOneToTwo, nil)
		if err != nil {
			t.Fatal(err)
		}
		return w, s, dir, "a.txt", func(ctx context.Context) error {
			_, err := s.UndoPatch(ctx, r.TxID, nil)
			return err
		}
	}},
	{"Rewind", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		w, s, dir := oneFile(t)
		if _, err := s.Write(context.Background(), "a.txt", "two\n", nil); err != nil {
			t.Fatal(err)
		}
		r := w.NewSession("r")
		return w, r, dir, "a.txt", func(ctx context.Context) error {
			_, err := r.Rewind(ctx, "s", nil)
			return err
		}
	}},
	{"Pull", func(t *testing.T) (*editguard.Workspace, *editguard.Session, string, string, func(context.Context) error) {
		bare := testutil.SyncRepo(t, map[string]string{"a.txt": "one\n"})
		wa, _ := testutil.Clone(t, bare, "a")
		wb, dirB := testutil.Clone(t, bare, "b")
		sa, sb := wa.NewSession("alice"), wb.NewSession("bob")
		testutil.Change(t, sa, "a.txt", "two\n")
		if _, err := sa.Publish(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		return wb, sb, dirB, "a.txt", func(ctx context.Context) error {
			_, err := sb.Pull(ctx, nil)
			return err
		}
	}},
}

// notChanging are the Session methods that change no file through the
// commit protocol, and why.
var notChanging = map[string]string{
	"Read": "reads", "Name": "reads", "Workspace": "reads",
	"ReadShown":   "records the read another program's tool made",
	"SetApprover": "sets the session's approver", "BeginTurn": "starts the session's turn: forgets its reads and marks the turn in the ledger",
	"CreateDirectory": "makes directories, durably; changes no file",
	"Guard":           "saves history before another program's tool writes; that write is not editguard's",
	"Record":          "records another program's change after it was made",
	"RecordNoWait":    "records another program's change after it was made",
	"BeginCommand":    "a shell command's changes are recorded from checkpoints (command.go)",
	"ResumeCommand":   "a shell command's changes are recorded from checkpoints (command.go)",
	"Publish":         "changes no file here: pushes a commit to a git remote and records the publish",
}

// TestEveryChangeGoesThroughTheEngine checks that every Session method is
// either a change path above or named as not changing files, and that every
// change path's committed records come from the commit protocol: each has
// the intent it was preceded by, or is a record of a journaled
// transaction.
func TestEveryChangeGoesThroughTheEngine(t *testing.T) {
	typ := reflect.TypeFor[*editguard.Session]()
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		_, other := notChanging[name]
		isChange := slices.ContainsFunc(changePaths, func(c changePath) bool { return c.name == name })
		if other == isChange {
			t.Errorf("Session.%s is in neither or both of changePaths and notChanging: say whether it changes files, and test it", name)
		}
	}
	for name := range notChanging {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("notChanging names Session.%s, which does not exist", name)
		}
	}
	for _, c := range changePaths {
		t.Run(c.name, func(t *testing.T) {
			_, _, dir, _, do := c.setup(t)
			before := len(rawLedger(t, dir))
			if err := do(context.Background()); err != nil {
				t.Fatalf("%s = %v", c.name, err)
			}
			recs := rawLedger(t, dir)
			bySeq := map[uint64]*editguard.LedgerRecord{}
			for _, r := range recs {
				bySeq[r.Seq] = r
			}
			changed := 0
			for _, r := range recs[before:] {
				if r.Outcome != "ok" || r.SHA256Before == r.SHA256After {
					continue
				}
				changed++
				if strings.HasPrefix(r.Strategy, "transaction ") {
					continue
				}
				in := bySeq[r.Intent]
				if r.Intent == 0 || in == nil || in.Outcome != "pending" || in.Path != r.Path || in.Seal == "" {
					t.Errorf("record %d (%s %s) has no sealed intent of its own (intent %d: %+v)", r.Seq, r.Tool, r.Path, r.Intent, in)
				}
			}
			if changed == 0 {
				t.Fatalf("%s wrote no record of a changed file", c.name)
			}
		})
	}
}

// TestApprovalOnEveryChange declines, then accepts, each change path: a
// declined change leaves its file as it was and is recorded as declined,
// and the approver is asked before every change.
func TestApprovalOnEveryChange(t *testing.T) {
	for _, c := range changePaths {
		t.Run(c.name, func(t *testing.T) {
			for _, accept := range []bool{false, true} {
				w, s, dir, file, do := c.setup(t)
				before := readRaw(dir, file)
				start := len(ledgerRecords(t, w))
				var asked []string
				s.SetApprover(editguard.ApproverFunc(func(_ context.Context, p *editguard.Preview) (bool, error) {
					asked = append(asked, p.Tool)
					if p.Diff == "" && !p.Created {
						t.Errorf("preview of %s has no diff", p.Tool)
					}
					return accept, nil
				}))
				err := do(context.Background())
				if len(asked) == 0 {
					t.Fatalf("%s (accept %v) asked no approval (%v)", c.name, accept, err)
				}
				after := readRaw(dir, file)
				var approvals []string
				for _, r := range ledgerRecords(t, w)[start:] {
					approvals = append(approvals, r.Approval)
				}
				if !accept {
					if err != nil && !errors.Is(err, editguard.ErrRejected) {
						t.Fatalf("declined %s = %v, want REJECTED", c.name, err)
					}
					if after != before {
						t.Errorf("declined %s changed %s: %q, was %q", c.name, file, after, before)
					}
					if !slices.Contains(approvals, "declined") {
						t.Errorf("declined %s recorded approvals %v, want a declined one", c.name, approvals)
					}
					continue
				}
				if err != nil {
					t.Fatalf("accepted %s = %v", c.name, err)
				}
				if after == before {
					t.Errorf("accepted %s left %s as it was", c.name, file)
				}
				if !slices.Contains(approvals, "accepted") || slices.Contains(approvals, "declined") {
					t.Errorf("accepted %s recorded approvals %v", c.name, approvals)
				}
			}
		})
	}
}

// readRaw returns the file's content, or "(absent)".
func readRaw(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "(absent)"
	}
	return string(b)
}
