//go:build linux

package editguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard/internal/atomicfile"
)

// mountTmpfs mounts a tmpfs of size on a new directory for the test, or
// skips the test where it cannot (not root, no mount namespace).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillUp writes to a new file under dir until its file system is full.
func fillUp(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// spaceSetup opens a workspace on a full tmpfs in which editguard has
// left what is its own to remove: the temporary file of big.txt and a
// parked file, each holding a content history keeps (big.txt's first
// version, of size bytes). It returns the workspace, its session, the
// directory and the leftovers' paths.
func spaceSetup(t *testing.T, size int) (*Workspace, *Session, string, []string) {
	t.Helper()
	dir := mountTmpfs(t, "4m")
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s := w.NewSession("agent")
	ctx := context.Background()
	old := bytes.Repeat([]byte("k"), size)
	if _, err := s.Write(ctx, "big.txt", string(old), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "big.txt", "gone\n", nil); err != nil {
		t.Fatal(err)
	}
	w.eng.SweepParked(true) // what the change parked, as a sweep would
	leftovers := []string{
		filepath.Join(dir, w.eng.TempName("big.txt")),
		filepath.Join(dir, StateDir, "displaced", atomicfile.ParkName(sha256Hex(old), "big.txt")),
	}
	for _, p := range leftovers {
		if err := os.WriteFile(p, old, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fillUp(t, dir)
	return w, s, dir, leftovers
}

func assertGone(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("editguard's leftover %s is still there (%v)", filepath.Base(p), err)
		}
	}
}

// TestNoSpaceReclaimsFirst: on a full file system, a change that fits once
// editguard's own leftovers are gone removes them and goes through.
func TestNoSpaceReclaimsFirst(t *testing.T) {
	const size = 256 << 10
	_, s, dir, leftovers := spaceSetup(t, size)
	content := strings.Repeat("n", 160<<10)
	if _, err := s.Write(context.Background(), "big.txt", content, nil); err != nil {
		t.Fatalf("the write that fits after the leftovers are removed: %v", err)
	}
	assertGone(t, leftovers)
	if got, _ := os.ReadFile(filepath.Join(dir, "big.txt")); string(got) != content {
		t.Errorf("big.txt holds %d bytes, want the %d written", len(got), len(content))
	}
}

// TestNoSpaceSaysHowMuch: a change that does not fit even then is refused
// with NO_SPACE naming the bytes needed, available and freed, after the
// leftovers were removed, and the file is unchanged.
func TestNoSpaceSaysHowMuch(t *testing.T) {
	const size = 256 << 10
	_, s, dir, leftovers := spaceSetup(t, size)
	content := strings.Repeat("n", 3<<20)
	_, err := s.Write(context.Background(), "big.txt", content, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNoSpace {
		t.Fatalf("error = %v, want NO_SPACE", err)
	}
	assertGone(t, leftovers)
	need, _ := e.Details["needed_bytes"].(int64)
	avail, _ := e.Details["available_bytes"].(int64)
	freed, _ := e.Details["freed_bytes"].(int64)
	if need < int64(len(content)) || avail >= need || avail < 0 || freed != 2*size {
		t.Errorf("details %v: want needed ≥ %d, available below it, freed %d", e.Details, len(content), 2*size)
	}
	for _, n := range []int64{need, avail, freed} {
		if !strings.Contains(e.Message, fmt.Sprint(n)) {
			t.Errorf("message %q does not say %d", e.Message, n)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "big.txt")); string(got) != "gone\n" {
		t.Errorf("big.txt holds %q after the refusal, want it unchanged", got)
	}
	assertNoTempIn(t, dir)
}

// assertNoTempIn fails if a temporary file of editguard's is left in dir.
func assertNoTempIn(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") && e.Name() != StateDir {
			t.Errorf("left in the directory: %s", e.Name())
		}
	}
}
