//go:build !unix

package history

import (
	"os"

	"github.com/rogpeppe/go-internal/lockedfile"
)

// lockFile opens (creating if needed) the sidecar lock file name and locks it:
// shared when shared is true, exclusive otherwise. It blocks until the lock is
// granted. lockedfile uses the platform's file locks (LockFileEx on Windows),
// which exclude other processes as well as other calls in this process.
// The lock file is never removed.
func lockFile(name string, shared bool) (unlock func() error, err error) {
	if shared {
		// A read lock needs an existing file; create it first.
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		f.Close()
		lf, err := lockedfile.OpenFile(name, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		return lf.Close, nil
	}
	lf, err := lockedfile.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return lf.Close, nil
}

// syncDir is a no-op on platforms where a directory cannot be opened and
// fsynced (Windows); there the rename itself is the durability point.
func syncDir(dir string) error { return nil }
