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
