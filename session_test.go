package editguard_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

// A persistent session's file is written without fsync, so a power cut
// may leave it partial: it then reads as a session that has read nothing,
// and its next change is refused with NOT_READ until it reads again.
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
	matches, _ := filepath.Glob(filepath.Join(dir, editguard.StateDir, "sessions", "cli*"))
	damaged := 0
	for _, m := range matches {
		if filepath.Ext(m) == ".json" {
			if err := os.WriteFile(m, []byte(`{"a.txt": {"sha2`), 0o644); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	if damaged != 1 {
		t.Fatalf("session files %q: found %d to damage, want 1", matches, damaged)
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
