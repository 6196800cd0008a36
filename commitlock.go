package editguard

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/editguard/editguard/internal/filelock"
)

// The locks of a commit.
//
// A change of a file takes two locks, for different spans:
//
//   - The file's lock, a lock file in .editguard/locks (one of
//     fileLockStripes, chosen by a hash of the path), from before the file
//     is observed until its ledger record is written. It orders this
//     workspace's changes of the file, in every process: their history
//     versions and ledger records are in the order of the changes, and
//     the file's temporary name (see temp.go) has one user at a time.
//   - The commit lock, an flock on the file's directory, only around the
//     swap: the check that the name still holds the file that was observed,
//     and the exchange (or rename) itself. Every editguard process shares
//     it, whichever root it opened, so a process of another workspace that
//     changed the file meanwhile is seen there, and the swap refused.
//
// So the fsyncs of a commit (history, temporary file, directory, ledger)
// run under the file's lock only, and commits of different files in one
// directory overlap; the directory's fsync after a swap is shared by the
// commits that wait for it at once (groupcommit.DirSyncs).
//
// Operations on several files (a move, a patch, the recovery of a patch)
// take the locks of all their files, in the order of their stripes, and
// then the commit locks of all their directories, in the order of their
// identities, and hold all of them throughout.

// fileLockStripes is the number of file lock files. Two files whose paths
// hash to one stripe share a lock: their changes are serialised, which is
// always correct; the number bounds the lock files a workspace keeps.
const fileLockStripes = 1024

// fileStripe returns the stripe of the file at resolved.
func fileStripe(resolved string) int {
	s := sha256.Sum256([]byte(resolved))
	return int(binary.BigEndian.Uint32(s[:4]) % fileLockStripes)
}

// lockFiles takes the file locks of the paths (resolved), each stripe once,
// in stripe order.
func (w *Workspace) lockFiles(ctx context.Context, paths ...string) ([]*filelock.Lock, error) {
	var stripes []int
	for _, p := range paths {
		stripes = append(stripes, fileStripe(p))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	var locks []*filelock.Lock
	for _, n := range stripes {
		l, err := w.fileLocks.Lock(ctx, fmt.Sprintf("file-%04d.lock", n), &filelock.Options{Timeout: w.opts.LockTimeout})
		if err != nil {
			unlockAll(locks)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, ioError(paths[0], err)
		}
		locks = append(locks, l)
	}
	return locks, nil
}

// lockFile takes the file lock of t alone.
func (w *Workspace) lockFile(ctx context.Context, t *target) (*filelock.Lock, error) {
	locks, err := w.lockFiles(ctx, t.resolved)
	if err != nil {
		return nil, err
	}
	return locks[0], nil
}

// unlockAll releases locks in the reverse order of their taking.
func unlockAll(locks []*filelock.Lock) {
	for i := len(locks) - 1; i >= 0; i-- {
		locks[i].Unlock()
	}
}

// openFileLocks opens the directory of the file lock files.
func (w *Workspace) openFileLocks() error {
	d, err := w.state.Sub("locks", true)
	if err != nil {
		return err
	}
	w.fileLocksDir = d
	w.fileLocks = d.Locks(64)
	return nil
}

// swapLock takes the commit lock of t's directory for the swap, and checks
// that the name still holds what obs saw: the same file (by inode) if it
// existed, nothing if it did not. A change another editguard process made
// meanwhile (in another workspace: this one's hold the file lock) replaced
// the file, so it shows; a program writing into the file in place is
// caught by the swap's own verification.
func (w *Workspace) swapLock(ctx context.Context, t *target, obs *observation) (*filelock.Lock, error) {
	l, err := w.lock(ctx, t)
	if err != nil {
		return nil, err
	}
	now, err := t.dir.Lstat(t.base)
	if err != nil {
		l.Unlock()
		return nil, ioError(t.path, err)
	}
	if now.Exists != obs.stat.Exists || now.Exists && now.Ino != obs.stat.Ino {
		l.Unlock()
		return nil, w.unchanged(t, obs, "before it was replaced")
	}
	return l, nil
}

// closeFileLocks closes the file lock files kept open.
func (w *Workspace) closeFileLocks() error {
	var err error
	if w.fileLocks != nil {
		err = w.fileLocks.Close()
	}
	if w.fileLocksDir != nil {
		if cerr := w.fileLocksDir.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
