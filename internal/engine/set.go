package engine

import (
	"context"
	"slices"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
)

// A change of several names, a move (RunMove) or a transaction (RunTx),
// takes the steps of a single file's change (Step), with these
// differences, straight-line in this order:
//
//  1. StepTarget: every name, in the change's order (SetDecider.Targets).
//  2. StepLock: every file's stripe lock, then the commit lock of every
//     directory, each class in its fixed order (LockTx), held to
//     StepRecord but while steps 4 and 5 let them go, so that no other
//     commit comes between the change's files. No gate.
//  3. StepObserve, StepCheck and StepBuild: every name observed, checked
//     and its new state decided (SetDecider.Check); a dry run ends here.
//  4. StepPrepare, the engine's part, before the approval: the missing
//     parent directories of new files, made durably with the locks let
//     go, then the locks taken again and every name looked at again.
//  5. StepApprove: the session's approver, the same way (SetDecider.Approve).
//  6. StepPrepare, the session's part (SetDecider.Prepare).
//  7. StepSnapshot: what each name holds to history (its index lines
//     written lazily), SetDecider.Saved; then a move's are made durable
//     and its intents written (MoveDecider.Intents), while a
//     transaction's are made durable with its new contents (commitTx).
//  8. StepSwap: a move's rename (move), or a transaction's steps (commitTx,
//     tx.go: stage, durable, journal, swap, settle); then, for a
//     transaction, its records (TxDecider.Commit), its commit point, and
//     the journal's removal once every record is written.
//  9. StepFollow: the session's baselines follow.
//  10. StepRecord: wherever the change stopped, its records as the session
//     writes them, under the locks (SetDecider.Outcome); then the locks
//     are let go, the targets closed, and a committed change's background
//     work started (SetDecider.Done, sweepParkedSoon).

// A SetDecider is what a change of several names asks of the session
// making it, as RunMove or RunTx reaches each step; MoveDecider and
// TxDecider add what is a move's or a transaction's own.
type SetDecider interface {
	// Targets resolves every name and opens its parent (StepTarget). The
	// targets it returns, with an error too, are the engine's to close.
	Targets() ([]*Target, error)
	// Check observes every target under the locks, checks it and decides
	// the change (StepObserve, StepCheck, StepBuild): one observation per
	// target, or dry for a dry run, which ends the change.
	Check() (obs []*Observation, dry bool, err error)
	// Approve asks the session's approver (StepApprove). It calls unlock
	// before it waits and relock after, which looks at every name again.
	Approve(ctx context.Context, unlock func(), relock func() error) error
	// Prepare is the session's part of StepPrepare.
	Prepare() error
	// Saved takes the history versions of what each target held
	// (StepSnapshot).
	Saved(versions []string)
	// Outcome writes the change's records, given err, the error it
	// stopped with or nil, and returns its error (StepRecord). The locks
	// are held.
	Outcome(err error) error
	// Done is the session's work after a committed change, once the
	// locks are let go.
	Done()
	// Fail turns the error of the engine's part of step, at the i-th
	// target, into the change's.
	Fail(step Step, i int, err error) error
}

// set is one change of several names on its way through RunMove or RunTx.
type set struct {
	e       *Engine
	d       SetDecider
	targets []*Target
	obs     []*Observation
	locks   []*filelock.Lock
	dry     bool
}

// begin takes a change of several names through its steps up to
// StepSnapshot: 1 to 6 above.
func (s *set) begin(ctx context.Context) error {
	d := s.d
	// StepTarget.
	ts, err := d.Targets()
	s.targets = ts
	if err != nil {
		return err
	}
	// StepLock.
	if err := s.lock(ctx); err != nil {
		return err
	}
	// StepObserve, StepCheck, StepBuild.
	obs, dry, err := d.Check()
	if err != nil {
		return err
	}
	if dry {
		s.dry = true
		return nil
	}
	s.obs = obs
	// StepPrepare: the missing parents.
	if err := s.makeParents(ctx); err != nil {
		return err
	}
	// StepApprove.
	if err := d.Approve(ctx, s.unlock, func() error { return s.relock(ctx, StepApprove) }); err != nil {
		return err
	}
	// StepPrepare: the session's part.
	return d.Prepare()
}

// lock is StepLock: every file's lock, then the commit locks of every
// directory (LockTx).
func (s *set) lock(ctx context.Context) error {
	locks, err := s.e.LockTx(ctx, s.targets)
	s.locks = locks
	if err != nil {
		return s.d.Fail(StepLock, -1, err)
	}
	return nil
}

// unlock lets every lock go, in the reverse order.
func (s *set) unlock() {
	for i := len(s.locks) - 1; i >= 0; i-- {
		s.locks[i].Unlock()
	}
	s.locks = nil
}

// relock takes the locks again after step let them go, and looks at every
// name again: one that changed is a *ChangedError, through Fail.
func (s *set) relock(ctx context.Context, step Step) error {
	s.unlock()
	if err := s.lock(ctx); err != nil {
		return err
	}
	for i, t := range s.targets {
		now, err := s.e.Observe(t)
		if err != nil {
			return s.d.Fail(StepObserve, i, err)
		}
		if !now.Same(s.obs[i]) {
			return s.d.Fail(step, i, &ChangedError{Now: now})
		}
	}
	return nil
}

// makeParents is the engine's part of StepPrepare: the missing
// directories of new files, made durably (MakeParent) with the locks let
// go; then the locks again (a directory just made is locked now too) and
// every name looked at again.
func (s *set) makeParents(ctx context.Context) error {
	if !slices.ContainsFunc(s.targets, func(t *Target) bool { return t.Dir == nil }) {
		return nil
	}
	s.unlock()
	for i, t := range s.targets {
		if t.Dir == nil {
			if err := s.e.MakeParent(t); err != nil {
				return s.d.Fail(StepPrepare, i, err)
			}
		}
	}
	return s.relock(ctx, StepPrepare)
}

// save is StepSnapshot's history: what each name holds (or that it does
// not exist) saved under op and session, its index line written lazily;
// it returns the paths whose index lines the caller makes durable. Contents
// kept as objects are durable as Save writes them.
func (s *set) save(op, session string) ([]string, error) {
	versions := make([]string, len(s.targets))
	paths := make([]string, len(s.targets))
	for i, t := range s.targets {
		obs := s.obs[i]
		v, err := s.e.cfg.Hist.Save(t.Resolved, obs.Data, !obs.Stat.Exists, obs.Sum, history.Meta{Op: op, Session: session, Lazy: true})
		if err != nil {
			return nil, s.d.Fail(StepSnapshot, i, err)
		}
		versions[i], paths[i] = v.ID, t.Resolved
	}
	s.d.Saved(versions)
	return paths, nil
}

// end is StepRecord, wherever the change stopped: the session's records
// under the locks, then the locks let go and the targets closed.
func (s *set) end(err error) error {
	err = s.d.Outcome(err)
	s.unlock()
	for _, t := range s.targets {
		t.Close()
	}
	if err == nil && !s.dry {
		s.d.Done()
		s.e.sweepParkedSoon()
	}
	return err
}

// A MoveDecider is the session's side of a move (RunMove): a SetDecider
// of two targets, the source and the destination.
type MoveDecider interface {
	SetDecider
	// Intents writes the intents of both names, durably, once their
	// history versions are (StepSnapshot).
	Intents() error
	// Moved takes the rename's result, the history version of bytes
	// another program wrote into a displaced destination (kept), and its
	// error (StepSwap), returning the change's error: nil once the file
	// is renamed.
	Moved(r atomicfile.Result, kept string, err error) error
	// Follow makes the session's view follow the file (StepFollow).
	Follow()
}

// RunMove moves a file from its first target to its second, step by step
// (above), with d's decisions; op and session name it in history. The
// error is the one d gave.
func (e *Engine) RunMove(ctx context.Context, d MoveDecider, op, session string) (err error) {
	s := &set{e: e, d: d}
	defer func() { err = s.end(err) }()
	if err := s.begin(ctx); err != nil || s.dry {
		return err
	}
	// StepSnapshot: what leaves each name to history, durably, then the
	// intents.
	paths, err := s.save(op, session)
	if err != nil {
		return err
	}
	if err := e.syncVersions(paths); err != nil {
		return d.Fail(StepSnapshot, 0, err)
	}
	if err := d.Intents(); err != nil {
		return err
	}
	// StepSwap.
	r, kept, err := e.move(s.targets[0], s.targets[1], s.obs[0], s.obs[1], session)
	if err := d.Moved(r, kept, err); err != nil {
		return err
	}
	// StepFollow; StepRecord is deferred.
	d.Follow()
	return nil
}

// move renames the file observed as obsS at src to dst, where obsD was
// observed (absent, or the file a move with overwrite replaces): the
// rename verified against both observations, then both directories
// fsynced (atomicfile.Dir.Move). The caller holds both files' locks and
// both directories' commit locks, and has saved what leaves each name to
// history. An error whose result has no Strategy changed nothing
// (atomicfile's ErrExist, ErrRaced, ErrCrossDevice, or another); one
// with a Strategy came after the rename. Bytes another program wrote into
// the displaced destination while it was replaced are kept in history
// under session, and kept names that version.
func (e *Engine) move(src, dst *Target, obsS, obsD *Observation, session string) (r atomicfile.Result, kept string, err error) {
	want := ""
	if obsD.Stat.Exists {
		want = obsD.Sum
	}
	r, err = src.Dir.Move(src.Base, obsS.Sum, dst.Dir, dst.Base, want, atomicfile.Options{Park: e.parkDir()})
	if r.Strategy != "" && len(r.Displaced) > 0 {
		kept = e.keepDisplaced(dst, session, r.Displaced)
	}
	return r, kept, err
}

// A TxDecider is the session's side of a transaction (RunTx).
type TxDecider interface {
	SetDecider
	// Changes is the transaction's journal and the new state of each
	// target, once what they held is in history (StepSnapshot).
	Changes() (*Journal, []*Change)
	// Swapped takes the result of the transaction's steps (StepSwap,
	// commitTx): the warnings of the steps after the swaps (settled), each
	// file's modification time, and the error, returning the change's
	// error: nil once every file is in place.
	Swapped(settled []error, mtimesMS []int64, err error) error
	// Commit writes the transaction's records, durably: the commit point.
	// It reports whether every record was written; if not, the journal is
	// kept for the next Open to finish.
	Commit() (recorded bool)
	// Follow makes the session's view follow the files (StepFollow),
	// told whether Commit wrote every record (recorded) and, if so, the
	// error of the journal's removal.
	Follow(recorded bool, removeErr error)
}

// RunTx commits a transaction of several files, all or none, step by step
// (above), with d's decisions; op and session name it in history, and
// undoOp the versions a failed swap's rollback saves. The error is the
// one d gave.
func (e *Engine) RunTx(ctx context.Context, d TxDecider, op, undoOp, session string) (err error) {
	s := &set{e: e, d: d}
	defer func() { err = s.end(err) }()
	if err := s.begin(ctx); err != nil || s.dry {
		return err
	}
	// StepSnapshot: what each name holds to history; commitTx's durable
	// step makes the index lines durable with the new contents.
	paths, err := s.save(op, session)
	if err != nil {
		return err
	}
	j, chs := d.Changes()
	files := make([]*txFile, len(s.targets))
	for i, t := range s.targets {
		files[i] = &txFile{T: t, Obs: s.obs[i], Data: chs[i].Data, Remove: chs[i].Remove}
	}
	// StepSwap: the transaction's steps, then its records, then the
	// journal's removal: a transaction without its journal has its
	// records. A process killed between the two is rolled forward at the
	// next Open; a record that failed keeps the journal for it.
	settled, err := e.commitTx(files, j, paths, session, undoOp)
	mtimes := make([]int64, len(files))
	for i, f := range files {
		mtimes[i] = f.MtimeMS
	}
	if err := d.Swapped(settled, mtimes, err); err != nil {
		return err
	}
	recorded := d.Commit()
	var rerr error
	if recorded {
		rerr = e.removeJournal(j.ID)
	}
	// StepFollow; StepRecord is deferred.
	d.Follow(recorded, rerr)
	return nil
}
