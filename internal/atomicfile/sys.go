//go:build unix

package atomicfile

import "golang.org/x/sys/unix"

// sys holds the system calls that can fail mid-commit. Tests replace entries
// to inject faults at each step of the recipe; production code never changes
// it.
var sys = struct {
	openat    func(h Hook, dirfd int, path string, flags int, mode uint32) (int, error)
	write     func(h Hook, fd int, p []byte) (int, error)
	fchmod    func(h Hook, fd int, mode uint32) error
	fsync     func(h Hook, fd int) error
	syncfs    func(h Hook, fd int) error
	unlinkat  func(h Hook, dirfd int, path string, flags int) error
	renameat  func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string) error
	renameat2 func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error
	linkat    func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string) error
}{
	openat: func(h Hook, dirfd int, path string, flags int, mode uint32) (int, error) {
		if err := call(h, &Call{Op: "openat", FD: dirfd, Name: path, Flags: flags}); err != nil {
			return -1, err
		}
		return Openat(dirfd, path, flags, mode)
	},
	write: func(h Hook, fd int, p []byte) (int, error) {
		c := &Call{Op: "write", FD: fd, Data: p}
		if err := call(h, c); err != nil {
			return 0, err
		}
		return unix.Write(fd, c.Data)
	},
	fchmod: func(h Hook, fd int, mode uint32) error {
		if err := call(h, &Call{Op: "fchmod", FD: fd}); err != nil {
			return err
		}
		return unix.Fchmod(fd, mode)
	},
	fsync: func(h Hook, fd int) error {
		if err := call(h, &Call{Op: "fsync", FD: fd}); err != nil {
			return err
		}
		return retry(func() error { return fsync(fd) })
	},
	syncfs: func(h Hook, fd int) error {
		if err := call(h, &Call{Op: "syncfs", FD: fd}); err != nil {
			return err
		}
		return syncfs(fd)
	},
	unlinkat: func(h Hook, dirfd int, path string, flags int) error {
		if err := call(h, &Call{Op: "unlinkat", FD: dirfd, Name: path}); err != nil {
			return err
		}
		return unix.Unlinkat(dirfd, path, flags)
	},
	renameat: func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string) error {
		if err := call(h, &Call{Op: "renameat", FD: olddirfd, Name: oldpath, To: newpath}); err != nil {
			return err
		}
		return unix.Renameat(olddirfd, oldpath, newdirfd, newpath)
	},
	renameat2: func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
		if err := call(h, &Call{Op: "renameat2", FD: olddirfd, Name: oldpath, To: newpath, Flags: int(flags)}); err != nil {
			return err
		}
		return renameat2(olddirfd, oldpath, newdirfd, newpath, flags)
	},
	linkat: func(h Hook, olddirfd int, oldpath string, newdirfd int, newpath string) error {
		if err := call(h, &Call{Op: "linkat", FD: olddirfd, Name: oldpath, To: newpath}); err != nil {
			return err
		}
		return unix.Linkat(olddirfd, oldpath, newdirfd, newpath, 0)
	},
}

// Hook, when set on a Dir (SetHook), is called before each system call the
// Dir makes while it commits, which is then not made if the Hook returns an
// error: the call fails with that error. A Hook may shorten a write's Data,
// making the write short. Tests set one on the Dir they commit through, to
// inject faults at each step of the recipe; there is no global hook.
type Hook func(*Call) error

// Call is one system call as Hook sees it.
type Call struct {
	Op    string // "openat", "write", "fchmod", "fsync", "syncfs", "unlinkat", "renameat", "renameat2", "linkat"
	FD    int    // the descriptor acted on; for calls with a path, the directory's
	Name  string // the path, for calls with one (a rename's old name)
	To    string // a rename's new name
	Flags int    // openat's or renameat2's flags
	Data  []byte // a write's bytes
}

func call(h Hook, c *Call) error {
	if h != nil {
		return h(c)
	}
	return nil
}
