//go:build unix

package atomicfile

import "golang.org/x/sys/unix"

// sys holds the system calls that can fail mid-commit. Tests replace entries
// to inject faults at each step of the recipe; production code never changes
// it.
var sys = struct {
	openat    func(dirfd int, path string, flags int, mode uint32) (int, error)
	write     func(fd int, p []byte) (int, error)
	fchmod    func(fd int, mode uint32) error
	fsync     func(fd int) error
	unlinkat  func(dirfd int, path string, flags int) error
	renameat  func(olddirfd int, oldpath string, newdirfd int, newpath string) error
	renameat2 func(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error
}{
	openat:    unix.Openat,
	write:     unix.Write,
	fchmod:    unix.Fchmod,
	fsync:     unix.Fsync,
	unlinkat:  unix.Unlinkat,
	renameat:  unix.Renameat,
	renameat2: renameat2,
}
