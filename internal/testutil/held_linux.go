package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A large file being replaced is linked into history under a lease instead
// of copied (held.go).

const heldSize = 300 << 10

// HeldContent is a file, named by tag, large enough to be held and linked
// into history when it is replaced.
func HeldContent(tag string) string {
	return strings.Repeat(tag+" line of a large file\n", heldSize/(len(tag)+22))
}

// NeedLeases skips the test where dir's file system (or this user) cannot
// take a file lease: there nothing is held, and large files are copied.
func NeedLeases(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, ".lease-probe")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(p)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("no file leases here (%v): large files are copied into history, not linked", err)
	}
	unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
}
