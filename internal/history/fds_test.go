//go:build linux

package history

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// TestDescriptors checks that a Store keeps a bounded number of lock files
// open across Saves of many files, and closes everything on Close.
func TestDescriptors(t *testing.T) {
	before := openFDs(t)
	s, err := openAt(filepath.Join(t.TempDir(), ".editguard", "history"), &Options{InlineLimit: 64, KeepVersions: 2})
	if err != nil {
		t.Fatal(err)
	}
	opened := openFDs(t)
	for i := range 40 {
		path := fmt.Sprintf("f%d.txt", i%10)
		content := []byte(fmt.Sprintf("version %d\n", i))
		if i%3 == 0 {
			content = bytes.Repeat(content, 20) // over the inline limit: an object
		}
		v, err := s.Save(path, content, false, "", Meta{Op: "write_file"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetLedgerSeq(path, v.ID, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Load(path, v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > opened+4 {
		t.Errorf("%d descriptors open after the Saves, %d before: more than the 4 lock files kept", n, opened)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The store's directory, which the caller owns, is still open.
	if n := openFDs(t); n != before+1 {
		t.Errorf("%d descriptors open after Close, want %d", n, before+1)
	}
	s.dir.Close()
}
