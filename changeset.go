package editguard

import (
	"context"
	"errors"
	"slices"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
)

// changeSet is the names a change of several files acts on (a move, a
// patch, an undo) and the steps of the protocol they share, named as a
// single file's change names them (engine.Step, internal/engine/run.go):
// target, lock, prepare (missing parents), approve, snapshot. Unlike a
// single file's change, a change of several names holds the commit locks
// of all their directories from lock to the end, so that no other commit
// comes between its files.
type changeSet struct {
	s     *Session
	files []*txFile
	locks []*filelock.Lock
}

// errSameFile is add's answer for a name that resolves to a file the
// change already has.
var errSameFile = errors.New("the same file under two names")

// add is StepTarget for one name: resolved inside the root, not protected by
// policy, and not a file the change already has (errSameFile).
func (cs *changeSet) add(p string) (*txFile, error) {
	t, err := cs.s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	if err := cs.s.w.checkChangeable(t); err != nil {
		t.Close()
		return nil, err
	}
	for _, f := range cs.files {
		if f.t.Resolved == t.Resolved {
			t.Close()
			return nil, errSameFile
		}
	}
	f := &txFile{t: t}
	cs.files = append(cs.files, f)
	return f, nil
}

// lock is StepLock: every file's lock, then the commit locks of every
// directory, each class in its fixed order (lockTargets), held to the end.
func (cs *changeSet) lock(ctx context.Context) error {
	locks, err := cs.s.w.lockTargets(ctx, cs.files)
	cs.locks = locks
	return err
}

// unlock lets every lock go, in the reverse order.
func (cs *changeSet) unlock() {
	for i := len(cs.locks) - 1; i >= 0; i-- {
		cs.locks[i].Unlock()
	}
	cs.locks = nil
}

// relock takes the locks again after they were let go, and checks that no
// file changed meanwhile; when says while what.
func (cs *changeSet) relock(ctx context.Context, when string) error {
	cs.unlock()
	if err := cs.lock(ctx); err != nil {
		return err
	}
	for _, f := range cs.files {
		if err := cs.s.w.unchanged(f.t, f.obs, when); err != nil {
			return err
		}
	}
	return nil
}

// makeParents creates the missing directories of new files, durably, with
// the locks let go, then locks again (a directory just made is locked now
// too) and checks the files.
func (cs *changeSet) makeParents(ctx context.Context, when string) error {
	if !slices.ContainsFunc(cs.files, func(f *txFile) bool { return f.t.Dir == nil }) {
		return nil
	}
	cs.unlock()
	for _, f := range cs.files {
		if f.t.Dir == nil {
			if err := cs.s.w.makeParent(f.t); err != nil {
				return err
			}
		}
	}
	return cs.relock(ctx, when)
}

// approve is the session's approval step (Session.approve), with the
// locks let go while the approver decides and the files checked after.
func (cs *changeSet) approve(ctx context.Context, a *attempt, preview func() *Preview, r refusal, when string) error {
	return cs.s.approve(ctx, a, preview, r, cs.unlock, func() error { return cs.relock(ctx, when) })
}

// snapshot saves what each name holds (or that it does not exist) to
// history, durably, before any file changes: guarantee 4. The versions'
// index lines are written first and made durable together after
// (engine.Engine.SyncVersions). Contents kept as objects are durable as
// Save writes them.
func (cs *changeSet) snapshot(op string) error {
	paths, err := cs.saveVersions(op)
	if err != nil {
		return err
	}
	if err := cs.s.w.eng.SyncVersions(paths); err != nil {
		return historyFailed(cs.files[0].t.Path, err)
	}
	return nil
}

// saveVersions is snapshot without the sync: it writes the versions and
// returns the paths whose index lines the caller makes durable.
func (cs *changeSet) saveVersions(op string) ([]string, error) {
	w := cs.s.w
	paths := make([]string, 0, len(cs.files))
	for _, f := range cs.files {
		v, err := w.hist.Save(f.t.Resolved, f.obs.Data, !f.obs.Stat.Exists, f.obs.Sum, history.Meta{Op: op, Session: cs.s.name, Lazy: true})
		if err != nil {
			return nil, historyFailed(f.t.Path, err)
		}
		f.version = v.ID
		paths = append(paths, f.t.Resolved)
	}
	return paths, nil
}

// close lets the locks go and closes every name's directory.
func (cs *changeSet) close() {
	cs.unlock()
	for _, f := range cs.files {
		f.t.Close()
	}
}
