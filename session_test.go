package editguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

// A persistent session's baselines are written without fsync, so a power
// cut may leave one partial: it then reads as no baseline, and the next
// change of its file is refused with NOT_READ until the file is read again.
func TestDamagedSessionFileReadsAsEmpty(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s, err := w.OpenSession("cli")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, editguard.StateDir, "sessions", "cli.b", "*"))
	for _, m := range matches {
		if err := os.WriteFile(m, []byte(`{"key":"a.txt","baseline":{"sha2`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(matches) != 1 {
		t.Fatalf("session files %q: want 1 to damage", matches)
	}
	s2, err := w.OpenSession("cli")
	if err != nil {
		t.Fatalf("OpenSession over a damaged file: %v", err)
	}
	if _, err := s2.Write(ctx, "a.txt", "two\n", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("Write() after the session file was damaged = %v, want NOT_READ", err)
	}
	if _, err := s2.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(ctx, "a.txt", "two\n", nil); err != nil {
		t.Fatalf("Write() after reading again: %v", err)
	}
}

// TestSessionFileSharedAndFresh: Sessions of one name, in one workspace and
// in another opened on the same root (as another process would), see each
// other's reads and each other's BeginTurn at once.
func TestSessionFileSharedAndFresh(t *testing.T) {
	w1, dir := newWorkspace(t)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	writeFile(t, dir, "a.txt", "one\n")
	open := func(w *editguard.Workspace) *editguard.Session {
		t.Helper()
		s, err := w.OpenSession("shared")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := open(w1).Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	for i, w := range []*editguard.Workspace{w1, w2} {
		if _, ok, err := editguard.SessionBaseline(open(w), "a.txt"); !ok || err != nil {
			t.Errorf("workspace %d: Baseline() = %v, %v; want the read", i+1, ok, err)
		}
	}
	for _, turn := range []*editguard.Workspace{w2, w1} {
		// A turn begun anywhere forgets the read everywhere.
		if _, err := open(w1).Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
		editguard.SessionBaseline(open(w2), "a.txt") // w2 looks the read up
		if err := open(turn).BeginTurn(); err != nil {
			t.Fatal(err)
		}
		for i, w := range []*editguard.Workspace{w1, w2} {
			if _, err := open(w).Write(ctx, "a.txt", "two\n", nil); !errors.Is(err, editguard.ErrNotRead) {
				t.Errorf("workspace %d after BeginTurn: Write() = %v, want NOT_READ", i+1, err)
			}
		}
	}
}
