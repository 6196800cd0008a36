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
	// held is the file being replaced, when it is held under a lease
	// (hold), and unhold gives the lease up early.
	held   *atomicfile.Held
	unhold func()
	// pass is the change's passage through the gate
	// (internal/groupcommit), and arrive, if set, is called before the
	// new content's fsync.
	pass   *groupcommit.Pass
	arrive func()
}

// commit replaces, creates or removes the target (StepSwap of Run,
// run.go) through atomicfile's staged steps, in this order:
//
//   - stage: the new content under its temporary name tmp;
//   - sync: the change arrives at the gate (arrive), and the new content
//     is made durable by its own fsync, or by the batch's shared syncfs
//     (groupcommit.Pass.SyncTemp);
//   - ready: what the change displaces is durable (the caller's ready);
//   - the directory's commit lock, with the check that the name still
//     holds the file observed (swapLockHeld), unless the caller holds it;
//   - swap, then the commit lock released at once, and the swap numbered
//     for the shared directory fsync (groupcommit.DirSyncs) and told to
//     the batch;
//   - the directory's fsync, shared with concurrent commits in the
//     directory, covering the batch's swaps done by then;
//   - finish: what the swap displaced is taken off.
//
// The caller holds the file's lock and has verified obs. An error with a
// Strategy in the result happened after the new content was put in place.
// A failed swap's error is atomicfile's (ErrExist, ErrRaced), or
// SwapLock's (ErrReplaced).
//
// A caller that already holds the commit lock (a rollback holds those of
// all the transaction's directories throughout) passes held, and ready
// may then be nil.
func (e *Engine) commit(ctx context.Context, t *Target, obs *Observation, ch *Change, tmp string, ready func() error, held bool) (atomicfile.Result, error) {
	r, err := e.commitSteps(ctx, t, obs, ch, tmp, ready, held)
	if err != nil && ch.held != nil {
		// What follows may open the target, which may still be the held
		// file: an open of it would wait for this very lease.
		ch.held.Release()
	}
	return r, err
}

func (e *Engine) commitSteps(ctx context.Context, t *Target, obs *Observation, ch *Change, tmp string, ready func() error, held bool) (atomicfile.Result, error) {
	s, err := stage(t, obs, ch, tmp, e.parkDir())
	if err != nil {
		return atomicfile.Result{}, err
	}
	defer s.Abort()
	if !ch.Remove || !obs.Stat.Exists {
		if ch.arrive != nil {
			ch.arrive()
		}
		shared, err := ch.pass.SyncTemp(t.Dir)
		switch {
		case err != nil:
			return atomicfile.Result{}, &atomicfile.StepError{Step: "syncfs", Err: err}
		case shared:
			err = s.SkipSync()
		default:
			err = s.Sync()
		}
		if err != nil {
			return atomicfile.Result{}, err
		}
	}
	if ready != nil {
		if err := ready(); err != nil {
			return atomicfile.Result{}, err
		}
	}
	var lock *filelock.Lock
	if !held {
		if lock, err = e.swapLockHeld(ctx, t, obs, ch.unhold); err != nil {
			return atomicfile.Result{}, err
		}
	}
	err = s.Swap()
	lock.Unlock()
	if err != nil {
		return atomicfile.Result{}, err
	}
	swap := e.dirSyncs.Swapped()
	ch.pass.Swapped()
	ch.pass.AwaitSwaps()
	if err := e.dirSyncs.Sync(t.Dir, swap); err != nil {
		// The new content is in place but its durability is unknown: the
		// displaced file stays under its temporary name (Abort).
		return s.Result(), err
	}
	return s.Finish()
}

// stage is the first of commit's steps: the change's new content under
// its temporary name tmp, with the owner and mode it must have.
func stage(t *Target, obs *Observation, ch *Change, tmp string, park *atomicfile.Dir) (*atomicfile.Staged, error) {
	opts := atomicfile.Options{Temp: tmp, Park: park}
	switch {
	case !obs.Stat.Exists:
		opts.Mode, opts.ExactMode, opts.UID, opts.GID = ch.Mode, ch.ExactMode, -1, -1
		return t.Dir.StageCreate(t.Base, ch.Data, opts)
	case ch.Remove:
		return t.Dir.StageRemove(t.Base, obs.Sum, opts)
	default:
		opts.Mode, opts.UID, opts.GID = obs.Stat.Mode, obs.Stat.UID, obs.Stat.GID
		opts.Expect = obs.Data // the bytes that hashed to obs.Sum
		opts.Held = ch.held
		return t.Dir.StageReplace(t.Base, ch.Data, obs.Sum, opts)
	}
}
