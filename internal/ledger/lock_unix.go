//go:build unix

package ledger

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// fileLock is an flock(2) lock on a sidecar file. The sidecar, not the
// ledger, is locked so that the ledger file itself can be replaced or
// truncated without touching the lock, and it is never deleted: deleting a
// lock file lets a waiter lock the old inode while a newcomer locks a new
// one.
type fileLock struct {
	f *os.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) lock() error   { return flock(l.f, unix.LOCK_EX) }
func (l *fileLock) unlock() error { return flock(l.f, unix.LOCK_UN) }
func (l *fileLock) close() error  { return l.f.Close() }

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// withSharedLock runs fn holding a shared lock on the sidecar at path, so
// that fn sees no append in progress. If the sidecar does not exist no
// Ledger has written the file, and fn runs without it.
func withSharedLock(path string, fn func() error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fn()
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if err := flock(f, unix.LOCK_SH); err != nil {
		return err
	}
	defer flock(f, unix.LOCK_UN)
	return fn()
}

// syncDir fsyncs a directory, making the entries created in it durable.
func syncDir(dir string) error {
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
