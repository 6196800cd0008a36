//go:build unix

package statedir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// setup returns a workspace root, its state Dir, and an outside directory
// holding a file whose bytes must never change.
func setup(t *testing.T) (string, *Dir, string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside bytes, no newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	rf, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close() })
	d, err := Open(rf, "", ".editguard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return root, d, outside
}

func checkOutside(t *testing.T, outside string, wantEntries int) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(outside, "secret"))
	if err != nil || string(got) != "outside bytes, no newline" {
		t.Errorf("outside file = %q, %v; want it unchanged", got, err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != wantEntries {
		t.Errorf("outside dir has %d entries, want %d", len(ents), wantEntries)
	}
}

func wantUnsafe(t *testing.T, what string, err error, kind string) {
	t.Helper()
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("%s: err = %v, want *UnsafeError", what, err)
	}
	if ue.Kind != kind {
		t.Fatalf("%s: Kind = %q, want %q", what, ue.Kind, kind)
	}
}

func TestRefusesSymlinks(t *testing.T) {
	root, d, outside := setup(t)
	state := filepath.Join(root, ".editguard")
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(state, "ledger.jsonl"))
	os.Symlink(outside, filepath.Join(state, "history"))
	os.Symlink(filepath.Join(outside, "created"), filepath.Join(state, "dangling.lock"))

	_, err := d.OpenFile("ledger.jsonl", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	wantUnsafe(t, "OpenFile(symlink)", err, "symlink")
	_, err = d.ReadFile("ledger.jsonl")
	wantUnsafe(t, "ReadFile(symlink)", err, "symlink")
	_, err = d.Sub("history/objects", true)
	wantUnsafe(t, "Sub(symlink)", err, "symlink")
	_, err = d.Lock(context.Background(), "dangling.lock", nil)
	wantUnsafe(t, "Lock(dangling symlink)", err, "symlink")
	checkOutside(t, outside, 1)
}

func TestRefusesWrongTypesAndHardLinks(t *testing.T) {
	root, d, outside := setup(t)
	state := filepath.Join(root, ".editguard")
	os.Mkdir(filepath.Join(state, "ledger.jsonl"), 0o755)
	os.WriteFile(filepath.Join(state, "locks"), nil, 0o644)
	if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(state, "index.jsonl")); err != nil {
		t.Skip("no hard links here:", err)
	}
	syscall.Mkfifo(filepath.Join(state, "fifo"), 0o644)

	_, err := d.OpenFile("ledger.jsonl", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	wantUnsafe(t, "OpenFile(dir)", err, "directory")
	_, err = d.Sub("locks", true)
	wantUnsafe(t, "Sub(file)", err, "file")
	_, err = d.OpenFile("index.jsonl", os.O_RDWR|os.O_APPEND, 0)
	wantUnsafe(t, "OpenFile(hard link, write)", err, "hard-linked file")
	_, err = d.OpenFile("fifo", os.O_RDONLY, 0)
	wantUnsafe(t, "OpenFile(fifo)", err, "special file")
	checkOutside(t, outside, 1)
}

// TestWriteFileReplacesSymlinkItself checks that WriteFile over a symlink
// replaces the link, not its target.
func TestWriteFileReplacesSymlinkItself(t *testing.T) {
	root, d, outside := setup(t)
	link := filepath.Join(root, ".editguard", "s.json")
	os.Symlink(filepath.Join(outside, "secret"), link)
	if err := d.WriteFile("s.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("s.json after WriteFile: %v, %v; want a regular file", fi, err)
	}
	checkOutside(t, outside, 1)
}

// TestStateDirItselfSymlink checks that a .editguard that is a symlink is
// refused.
func TestStateDirItselfSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(root, ".editguard"))
	rf, _ := os.Open(root)
	defer rf.Close()
	_, err := Open(rf, "", ".editguard")
	wantUnsafe(t, "Open(symlink)", err, "symlink")
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("outside dir has %d entries, want 0", len(ents))
	}
}

func TestSubCreates(t *testing.T) {
	root, d, _ := setup(t)
	s, err := d.Sub("history/objects/ab", true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Name() != ".editguard/history/objects/ab" {
		t.Errorf("Name() = %q", s.Name())
	}
	if fi, err := os.Stat(filepath.Join(root, ".editguard/history/objects/ab")); err != nil || !fi.IsDir() {
		t.Fatalf("created dir: %v %v", fi, err)
	}
	if _, err := d.Sub("nope", false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Sub(missing, no create) = %v, want ErrNotExist", err)
	}
}
