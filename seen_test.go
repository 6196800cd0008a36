package editguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

// TestSeenStoreBounded checks that a persistent session keeps at most 64
// contents of what it read under .editguard/sessions/NAME.seen, whatever
// the working directory of the process (here not the workspace root).
func TestSeenStoreBounded(t *testing.T) {
	w, dir := newWorkspace(t)
	t.Chdir(t.TempDir())
	s, err := w.OpenSession("hook-s")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 80 {
		writeFile(t, dir, "a.txt", fmt.Sprintf("version %d\n", i))
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, editguard.StateDir, "sessions", "hook-s.seen"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 || len(ents) > 64 {
		t.Errorf("the session keeps %d contents, want 1 to 64", len(ents))
	}
}

// TestSeenStoreBoundedAcrossProcesses: two workspaces (as two processes
// would) read into one persistent session's store. Each lists the store
// only now and then, so together they may pass its 64 files by what one
// adds between two of its listings (16), never more.
func TestSeenStoreBoundedAcrossProcesses(t *testing.T) {
	w1, dir := newWorkspace(t)
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	store := filepath.Join(dir, editguard.StateDir, "sessions", "hook-s.seen")
	most := 0
	for i := range 300 {
		w := w1
		if i/7%2 == 1 {
			w = w2
		}
		s, err := w.OpenSession("hook-s")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, "a.txt", fmt.Sprintf("version %d\n", i))
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(store)
		if err != nil {
			t.Fatal(err)
		}
		most = max(most, len(ents))
	}
	if most > 64+16 {
		t.Errorf("the store held up to %d contents, want at most 80", most)
	}
	if most < 48 {
		t.Errorf("the store held at most %d contents, want it to fill to 48 at least", most)
	}
}
