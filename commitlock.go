package editguard

import (
	"context"

	"github.com/editguard/editguard/internal/filelock"
)

// The locks of a commit are the engine's (internal/engine/locks.go: a
// file's stripe lock from before it is observed until its record is
// written, its directory's commit lock around the swap). These wrappers
// turn their failures into the caller's errors.

// lockFiles takes the file locks of the paths (resolved), each stripe once,
// in stripe order.
func (w *Workspace) lockFiles(ctx context.Context, paths ...string) ([]*filelock.Lock, error) {
	locks, err := w.eng.LockFiles(ctx, paths...)
	if err != nil {
		return nil, lockError(paths[0], err)
	}
	return locks, nil
}

// lockFile takes the file lock of t alone.
func (w *Workspace) lockFile(ctx context.Context, t *target) (*filelock.Lock, error) {
	locks, err := w.lockFiles(ctx, t.Resolved)
	if err != nil {
		return nil, err
	}
	return locks[0], nil
}
