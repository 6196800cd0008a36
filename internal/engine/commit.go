package engine

import (
	"context"
	"os"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/groupcommit"
)

// Change is what a single-file commit puts in place of the file it
// observed: new content, or a removal.
type Change struct {
	Data   []byte
	Remove bool
	// Mode is the permission bits of a file the change creates (0: 0666
	// less the umask, unless ExactMode); an existing file keeps its own.
	Mode      os.FileMode
	ExactMode bool
	// Held is the file being replaced, when it is held under a lease
	// (Hold), and Unhold gives the lease up early.
	Held   *atomicfile.Held
	Unhold func()
	// Pass is the change's passage through the gate
	// (internal/groupcommit), and Arrive, if set, is called before the
	// new content's fsync.
	Pass   *groupcommit.Pass
	Arrive func()
}

// Commit replaces, creates or removes the target (steps 5-7 of the
// protocol). The caller holds the file's lock and has verified obs; ready
// makes what the change displaces durable. The commit lock of the
// directory is taken once the new content is durable under its temporary
// name tmp and ready has returned, and released as soon as the swap is
// made; the directory fsync after it is shared with concurrent commits in
// the directory. An error with a Strategy in the result happened after
// the new content was put in place. A failed swap's error is
// atomicfile's (ErrExist, ErrRaced), or SwapLock's (ErrReplaced).
//
// A caller that already holds the commit lock (a patch holds those of all
// its directories throughout) passes held, and ready may then be nil.
func (e *Engine) Commit(ctx context.Context, t *Target, obs *Observation, ch *Change, tmp string, ready func() error, held bool) (atomicfile.Result, error) {
	var (
		r    atomicfile.Result
		err  error
		lock *filelock.Lock
	)
	defer func() { lock.Unlock() }()
	var swap uint64 // the swap's place among this process's (groupcommit.DirSyncs)
	opts := atomicfile.Options{Temp: tmp, Park: e.ParkDir(), Ready: ready, BeforeSync: ch.Arrive,
		ShareSync: func() (bool, error) { return ch.Pass.SyncTemp(t.Dir) },
		Swapped: func() {
			swap = e.dirSyncs.Swapped()
			ch.Pass.Swapped()
		},
		SyncDir: func() error {
			// The directory's fsync covers the swaps of the change's
			// batch that are done by the time it starts.
			ch.Pass.AwaitSwaps()
			// A second call, were there one, would be for a change
			// made after the swap: it gets an fsync of its own.
			n := swap
			swap = 0
			return e.dirSyncs.Sync(t.Dir, n)
		}}
	if !held {
		opts.Ready = func() error {
			if err := ready(); err != nil {
				return err
			}
			var err error
			lock, err = e.SwapLockHeld(ctx, t, obs, ch.Unhold)
			return err
		}
		swapped := opts.Swapped
		opts.Swapped = func() {
			lock.Unlock()
			lock = nil
			swapped()
		}
	}
	switch {
	case !obs.Stat.Exists:
		opts.Mode, opts.ExactMode, opts.UID, opts.GID = ch.Mode, ch.ExactMode, -1, -1
		r, err = t.Dir.Create(t.Base, ch.Data, opts)
	case ch.Remove:
		r, err = t.Dir.Remove(t.Base, obs.Sum, opts)
	default:
		opts.Mode, opts.UID, opts.GID = obs.Stat.Mode, obs.Stat.UID, obs.Stat.GID
		opts.Expect = obs.Data // the bytes that hashed to obs.Sum
		opts.Held = ch.Held
		r, err = t.Dir.Replace(t.Base, ch.Data, obs.Sum, opts)
	}
	if err != nil && ch.Held != nil {
		// What follows may open the target, which may still be the held
		// file: an open of it would wait for this very lease.
		ch.Held.Release()
	}
	return r, err
}
