package editguard

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/editguard/editguard/internal/atomicfile"
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
// commits that wait for it at once (dirSyncs).
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

// dirSyncs shares directory fsyncs among the commits of one process: a
// commit that needs its directory's entries durable waits for an fsync of
// that directory that started after its swap, joining the next one to
// start if none has.
type dirSyncs struct {
	mu sync.Mutex
	m  map[dirKey]*dirSync
	// swaps numbers the swaps of this process: a round of fsync covers
	// every swap numbered before it started, in its directory.
	swaps atomic.Uint64
}

type dirKey struct{ dev, ino uint64 }

// dirSync is the state of one directory: the fsync running, if any, the
// one that will start after it, which new callers join, and the last one
// that succeeded.
type dirSync struct {
	refs    int
	running *syncRound
	next    *syncRound
	last    *syncRound
}

// dirSyncsKept is how many directories dirSyncs remembers the last fsync
// of while no caller uses them.
const dirSyncsKept = 64

type syncRound struct {
	done   chan struct{}
	err    error
	covers uint64 // the last swap made before the fsync started
}

// swapped numbers a swap just made (its rename returned), for sync.
func (s *dirSyncs) swapped() uint64 { return s.swaps.Add(1) }

// sync makes the entries of d durable, sharing the fsync with concurrent
// callers for the same directory. swap is the number swapped gave the
// caller's swap, or 0 to cover every change made before the call.
func (s *dirSyncs) sync(d *atomicfile.Dir, swap uint64) error {
	if swap == 0 {
		swap = s.swapped()
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return d.Sync()
	}
	k := dirKey{uint64(st.Dev), st.Ino}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[dirKey]*dirSync{}
	}
	ds := s.m[k]
	if ds == nil {
		if len(s.m) >= dirSyncsKept {
			for k, ds := range s.m {
				if ds.refs == 0 {
					delete(s.m, k)
				}
			}
		}
		ds = &dirSync{}
		s.m[k] = ds
	}
	if last := ds.last; last != nil && last.covers >= swap {
		// A round that started after the caller's swap has succeeded.
		s.mu.Unlock()
		return nil
	}
	ds.refs++
	defer func() {
		s.mu.Lock()
		ds.refs--
		s.mu.Unlock()
	}()
	if cur := ds.running; cur != nil && cur.covers >= swap {
		// The running fsync started after the caller's swap.
		s.mu.Unlock()
		<-cur.done
		return cur.err
	}
	if r := ds.next; r != nil {
		// A round is waiting to start: it starts after this call, so it
		// covers this caller's changes.
		s.mu.Unlock()
		<-r.done
		return r.err
	}
	r := &syncRound{done: make(chan struct{})}
	if cur := ds.running; cur != nil {
		// The running fsync may have started before this caller's change:
		// wait for it, then run the next round, for everyone who joined.
		ds.next = r
		s.mu.Unlock()
		<-cur.done
		s.mu.Lock()
	}
	ds.running, ds.next = r, nil
	r.covers = s.swaps.Load()
	s.mu.Unlock()
	r.err = d.Sync()
	s.mu.Lock()
	ds.running = nil
	if r.err == nil {
		ds.last = r
	}
	s.mu.Unlock()
	close(r.done)
	return r.err
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
