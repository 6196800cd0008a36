//go:build !unix

package ledger

import (
	"errors"
	"io/fs"
	"os"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// fileLock is a lock on a sidecar file, taken with the platform's file
// locking through lockedfile. The sidecar is never deleted: deleting a lock
// file lets a waiter lock the old file while a newcomer locks a new one.
type fileLock struct {
	path string
	held *lockedfile.File
}

func openLock(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	return &fileLock{path: path}, nil
}

func (l *fileLock) lock() error {
	f, err := lockedfile.OpenFile(l.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	l.held = f
	return nil
}

func (l *fileLock) unlock() error {
	f := l.held
	l.held = nil
	return f.Close()
}

func (l *fileLock) close() error { return nil }

// withSharedLock runs fn holding a shared lock on the sidecar at path, so
// that fn sees no append in progress. If the sidecar does not exist no
// Ledger has written the file, and fn runs without it.
func withSharedLock(path string, fn func() error) error {
	f, err := lockedfile.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fn()
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return fn()
}

// syncDir does nothing: directories cannot be opened for fsync here, and
// the file system makes new entries durable with the file's own flush.
func syncDir(dir string) error { return nil }
