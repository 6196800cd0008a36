//go:build unix

package history

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile opens (creating if needed) the sidecar lock file name and takes a
// flock on it: shared when shared is true, exclusive otherwise. It blocks until
// the lock is granted. The lock belongs to this open file description, so two
// calls in the same process exclude each other exactly as two processes do.
// The returned function releases the lock by closing the descriptor; the lock
// file itself is never removed, because removing it would let a later locker
// lock a fresh inode while an earlier one still holds the old one.
func lockFile(name string, shared bool) (unlock func() error, err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	return f.Close, nil
}

// syncDir fsyncs the directory dir, making the creation, rename or removal of
// entries in it durable. Without it a rename that returned can still be undone
// by a power loss: the file's data is on disk but no name points to it.
func syncDir(dir string) error {
	if err := hook("fsync dir", dir); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
