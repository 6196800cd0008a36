package editguard_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestGuard: a change by another program's tool needs a read of the file,
// unless Unread is set; either way a file that changed since the
// session's read is refused, and what Guard lets through is in history.
func TestGuard(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("hook")

	if _, err := s.Guard(ctx, "a.txt", "Edit", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Fatalf("Guard() of an unread file = %v, want NOT_READ", err)
	}
	if _, err := s.Guard(ctx, "a.txt", "apply_patch", &editguard.GuardOptions{WholeFile: true, Unread: true}); err != nil {
		t.Fatalf("Guard(Unread) of an unread file = %v, want nil", err)
	}
	if vs, err := w.History("a.txt"); err != nil || len(vs) != 1 || vs[0].SHA256 != sha256hex([]byte("one\n")) {
		t.Fatalf("History() after Guard = %+v, %v; want the content Guard found", vs, err)
	}

	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	for i, o := range []*editguard.GuardOptions{nil, {Unread: true}} {
		// A refusal that shows the change moves the read to it, so each
		// round changes the file again.
		writeFile(t, dir, "a.txt", fmt.Sprintf("changed %d\n", i))
		if _, err := s.Guard(ctx, "a.txt", "apply_patch", o); !errors.Is(err, editguard.ErrStaleFile) {
			t.Errorf("Guard(%+v) of a file changed since its read = %v, want STALE_FILE", o, err)
		}
	}
}

// TestSessionName: OpenSession takes the names the regular expression
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ describes, and refuses the others.
func TestSessionName(t *testing.T) {
	w, _ := newWorkspace(t)
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	for _, name := range []string{"", "a", "cli-uid1000", "claude-3f2a.x_y", "-a", ".a", "_a", "a b", "a/b", "a\n", "é", strings.Repeat("a", 64), strings.Repeat("a", 65), "0" + strings.Repeat("-", 63)} {
		_, err := w.OpenSession(name)
		if got, want := err == nil, re.MatchString(name); got != want {
			t.Errorf("OpenSession(%q) = %v, want accepted %v", name, err, want)
		}
	}
}

// TestRecordNoWait: the record of the tool's change is in the ledger, and
// the session's read moved to the new content, before wait is called;
// wait returns what Record returns.
func TestRecordNoWait(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("hook")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	g, err := s.Guard(ctx, "a.txt", "Edit", nil)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "two\n") // the tool's write
	before := len(ledgerRecords(t, w))
	wait, err := s.RecordNoWait(ctx, "a.txt", "Edit")
	if err != nil {
		t.Fatal(err)
	}
	recs := ledgerRecords(t, w)
	if len(recs) != before+1 {
		t.Fatalf("ledger records before wait: %d, want %d", len(recs), before+1)
	}
	if r := recs[len(recs)-1]; r.SHA256Before != sha256hex([]byte("one\n")) || r.SHA256After != sha256hex([]byte("two\n")) || r.HistoryVersion != g.Version {
		t.Errorf("the record = %+v, want one -> two with version %s", r, g.Version)
	}
	// The read moved: an edit of the new content needs no read.
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "three"}}, nil); err != nil {
		t.Errorf("Edit() after RecordNoWait = %v, want the read moved to the tool's content", err)
	}
	res, err := wait()
	if err != nil || res.BackupVersion != g.Version || res.SHA256 != sha256hex([]byte("two\n")) || len(res.Warnings) != 0 {
		t.Errorf("wait() = %+v, %v; want the change with version %s and no warning", res, err, g.Version)
	}
	if _, err := w.VerifyLedger(); err != nil {
		t.Errorf("VerifyLedger() = %v", err)
	}

	// A tool that changed nothing: nothing recorded, wait returns at once.
	if _, err := s.Guard(ctx, "a.txt", "Edit", nil); err != nil {
		t.Fatal(err)
	}
	before = len(ledgerRecords(t, w))
	if wait, err = s.RecordNoWait(ctx, "a.txt", "Edit"); err != nil {
		t.Fatal(err)
	}
	if res, err := wait(); err != nil || res.BackupVersion != "" {
		t.Errorf("wait() for an unchanged file = %+v, %v; want no change", res, err)
	}
	if n := len(ledgerRecords(t, w)); n != before {
		t.Errorf("ledger records after an unchanged file: %d, want %d", n, before)
	}
}

// TestGuardTrimsAfter: Guard leaves the trim of old versions to the
// background, and Close waits for it: the history is within its bounds
// once the workspace is closed.
func TestGuardTrimsAfter(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, &editguard.Options{KeepVersions: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("hook")
	writeFile(t, dir, "a.txt", "v0\n")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 12; i++ {
		if _, err := s.Guard(ctx, "a.txt", "Edit", nil); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "a.txt", fmt.Sprintf("v%d\n", i)) // the tool's write
		if _, err := s.Record(ctx, "a.txt", "Edit"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w, err = editguard.Open(dir, &editguard.Options{KeepVersions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	vs, err := w.History("a.txt")
	if err != nil || len(vs) == 0 || len(vs) > 2 {
		t.Errorf("History() after Close = %d versions, %v; want 1 or 2", len(vs), err)
	}
}

// TestGuardMergesEdits: an agent's Edit of a file that changed since the
// session's read passes Guard when its edits leave the other change alone
// (the result says so, with the change), and is refused when they touch
// it, or when the workspace turns merging off.
func TestGuardMergesEdits(t *testing.T) {
	for _, noMerge := range []bool{false, true} {
		dir := t.TempDir()
		w, err := editguard.Open(dir, &editguard.Options{NoMerge: noMerge})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		writeFile(t, dir, "a.go", "package a\n\nvar X = 1\n\nvar Y = 1\n")
		s := w.NewSession("hook")
		if _, err := s.Read(ctx, "a.go", nil); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "a.go", "package a\n\nvar X = 2 // someone else\n\nvar Y = 1\n")
		edit := []editguard.Edit{{OldString: "var Y = 1", NewString: "var Y = 2"}}
		res, err := s.Guard(ctx, "a.go", "Edit", &editguard.GuardOptions{Edits: edit})
		if noMerge {
			if !errors.Is(err, editguard.ErrStaleFile) {
				t.Errorf("with NoMerge: Guard = %v, %v; want STALE_FILE", res, err)
			}
			continue
		}
		if err != nil || !res.Merged || !strings.Contains(res.ExternalDiff, "+var X = 2 // someone else") {
			t.Fatalf("Guard of a disjoint edit = %+v, %v; want it merged, with the other change", res, err)
		}
		// The tool then writes; Record moves the read on. An edit of the
		// line someone else changed next is refused, and says why.
		writeFile(t, dir, "a.go", "package a\n\nvar X = 2 // someone else\n\nvar Y = 2\n")
		if _, err := s.Record(ctx, "a.go", "Edit"); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "a.go", "package a\n\nvar X = 3 // again\n\nvar Y = 2\n")
		_, err = s.Guard(ctx, "a.go", "Edit", &editguard.GuardOptions{Edits: []editguard.Edit{{OldString: "var X = 3 // again", NewString: "var X = 4"}}})
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile || e.Details["not_merged"] == nil {
			t.Errorf("Guard of an edit over the other change = %v; want STALE_FILE saying why it did not merge", err)
		}
		// Whole-file writes never merge: after a change seen only as a
		// diff, a write needs a full read.
		writeFile(t, dir, "a.go", "package a\n\nvar X = 5\n\nvar Y = 2\n")
		if _, err := s.Guard(ctx, "a.go", "Write", &editguard.GuardOptions{WholeFile: true}); err == nil {
			t.Error("Guard of a whole-file write over another change passed")
		}
	}
}
