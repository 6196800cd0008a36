// Package filelock provides exclusive advisory locks held on sidecar lock
// files. A lock serialises a critical section across goroutines and across
// processes: every call opens its own descriptor, and flock(2) locks belong to
// the open file description, so two goroutines of one process exclude each
// other just as two processes do.
//
// Lock files are never deleted. Deleting a lock file while another process
// waits on its descriptor would let a third process lock a new file of the
// same name, and two holders would run at once.
package filelock

import (
	"fmt"
	"os"
)

// Lock is a held lock. Unlock releases it.
type Lock struct {
	f *os.File
}

// Acquire blocks until it holds the exclusive lock on the file at path,
// creating the file (mode 0644) if needed. The parent directory must exist.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("filelock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("filelock: lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Unlock releases the lock. Closing the descriptor releases the flock even if
// the explicit unlock fails, so the lock is never leaked.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
