package engine

import (
	"context"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/groupcommit"
	"github.com/editguard/editguard/internal/ledger"
)

// A Step is one step of a single file's change. The steps are numbered
// here and nowhere else; docs/ARCHITECTURE.md §2.1 names them. Run takes
// them in this order, straight-line:
//
//  1. StepTarget: the path resolved inside the root and its parent
//     directory opened, so that nothing later follows a symlink in the
//     last element; and the policy that may protect it (Decider.Target).
//  2. StepLock: the file's stripe lock (locks.go), held until the outcome
//     record is written; then the change counts at the gate
//     (groupcommit.Gate.Enter).
//  3. StepObserve: stat and bytes of one descriptor; bytes equal to what
//     the session remembers are compared, not hashed (Decider.Expect).
//  4. StepCheck: whether the change may act on what was observed (its own
//     verify, a precondition, the session's read, a merge): the SHA-256
//     comparison under the lock that no update is lost (Decider.Check).
//  5. StepBuild: the new content, from what is on disk, and the change's
//     description; a dry run ends here (Decider.Build).
//  6. StepApprove: the session's approver, with the file's lock let go
//     meanwhile and the file looked at again after (Decider.Approve).
//  7. StepPrepare: room on the file system and the read a merge was
//     decided against kept (Decider.Prepare), then the missing parent
//     directories of a new file, made durably, and the file looked at
//     again (MakeParent).
//  8. StepSnapshot: the change's intent goes to the ledger and what it
//     displaces to history, durably before the file changes (single.go).
//  9. StepSwap: the new content under its temporary name, fsynced (or by
//     the batch's syncfs), the swap under the directory's commit lock, the
//     directory's fsync, and what the swap displaced taken off (commit.go,
//     over atomicfile.Staged); then Decider.Swapped. Once the new bytes
//     are in place the change is committed, and what fails after is a
//     warning, not the change's error.
//  10. StepFollow: the session's baseline follows the change
//     (Decider.Follow).
//  11. StepRecord: on every path, wherever the change stopped, the outcome
//     record is written under the file's lock (Decider.Outcome), the lock
//     is let go, and the record's fsync is waited for, or for a committed
//     change with a durable intent left to the background (outcome.go;
//     Decider.Recorded).
type Step int

const (
	StepTarget Step = iota + 1
	StepLock
	StepObserve
	StepCheck
	StepBuild
	StepApprove
	StepPrepare
	StepSnapshot
	StepSwap
	StepFollow
	StepRecord
)

// Times is where a change's time went, for its record (ledger.Timing):
// waiting for the file's lock, observing and checking the file, waiting
// for the approver (less the lock's wait after it), and making the change
// durable (snapshot and swap).
type Times struct {
	LockWait, Check, Approval, Durable time.Duration
}

// A Decider is what a single file's change asks of the session making it:
// the decisions of the protocol, as Run reaches them. The engine does the
// rest; it hands the Decider the errors of its own steps (Fail) and the
// results of its swap (Swapped), so that what the caller sees is the
// Decider's.
type Decider interface {
	// Target resolves the change's path and opens its parent
	// (StepTarget). A target returned with an error is closed.
	Target() (*Target, error)
	// Expect is the file's content as the session remembers it, and its
	// SHA-256, if any (StepObserve).
	Expect() (sum string, data []byte)
	// Check decides whether the change may act on obs (StepCheck).
	Check(obs *Observation) error
	// Build computes the change (StepBuild); nil and no error ends a dry
	// run.
	Build() (*Change, error)
	// Approve asks the session's approver (StepApprove). It calls unlock
	// before it waits and relock after, then checks the file again.
	Approve(ctx context.Context, unlock func(), relock func() error) error
	// Prepare is the session's part of StepPrepare.
	Prepare() error
	// Intent is the record the change's intent is written from, and the
	// SHA-256 of the content it leaves (StepSnapshot).
	Intent() (rec ledger.Record, after string)
	// Swapped takes the swap's result and error (StepSwap), returning
	// the change's error: nil once the new bytes are in place.
	Swapped(sw Swapped, err error) error
	// Follow makes the session's view follow the change (StepFollow).
	Follow(r atomicfile.Result)
	// Outcome is the change's record with its outcome, err (nil, or the
	// error the change stopped with), and tm added (StepRecord).
	Outcome(err error, tm Times) *ledger.Record
	// Recorded returns the change's error once its record is written,
	// given lerr, the record's write or fsync's error (StepRecord).
	Recorded(lerr, err error) error
	// Fail turns the error of the engine's part of step into the change's.
	Fail(step Step, err error) error
}

// run is one single file's change on its way through Run.
type run struct {
	e      *Engine
	d      Decider
	gate   *groupcommit.Gate
	locks  []*filelock.Lock
	pass   *groupcommit.Pass
	t      *Target
	obs    *Observation
	single *single
	dry    bool
	times  Times
}

// Run makes a single file's change, step by step (Step), with d's
// decisions; op and session name it in history. gate groups the fsyncs of
// concurrent changes. The error is the one d gave.
func (e *Engine) Run(ctx context.Context, d Decider, gate *groupcommit.Gate, op, session string) (err error) {
	r := &run{e: e, d: d, gate: gate}
	defer func() { err = r.record(err) }()
	if err := ctx.Err(); err != nil {
		return err
	}
	// StepTarget.
	t, err := d.Target()
	r.t = t
	if err != nil {
		return err
	}
	// StepLock.
	if err := r.lock(ctx); err != nil {
		return err
	}
	// StepObserve, then StepCheck.
	t0 := time.Now()
	sum, expect := d.Expect()
	obs, err := e.observeExpecting(t, sum, expect)
	if err != nil {
		r.times.Check += time.Since(t0)
		return d.Fail(StepObserve, err)
	}
	r.obs = obs
	err = d.Check(obs)
	r.times.Check += time.Since(t0)
	if err != nil {
		return err
	}
	// StepBuild.
	ch, err := d.Build()
	if err != nil {
		return err
	}
	if ch == nil {
		r.dry = true
		return nil
	}
	// StepApprove.
	t0, lw0 := time.Now(), r.times.LockWait
	err = d.Approve(ctx, r.unlock, func() error { return r.lock(ctx) })
	r.times.Approval += time.Since(t0) - (r.times.LockWait - lw0)
	if err != nil {
		return err
	}
	// StepPrepare.
	if err := d.Prepare(); err != nil {
		return err
	}
	if err := r.makeParent(); err != nil {
		return err
	}
	// StepSnapshot, then StepSwap.
	t0 = time.Now()
	rec, after := d.Intent()
	r.single = e.snapshot(t, obs, ch, rec, after, op, session, gate.Quiet)
	sw, err := r.single.swap(ctx, session, r.pass)
	r.times.Durable += time.Since(t0)
	if err := d.Swapped(sw, err); err != nil {
		return err
	}
	// StepFollow; StepRecord is deferred.
	d.Follow(sw.Result)
	return nil
}

// lock is StepLock, and the relock after an approval: the file's lock, then
// the gate.
func (r *run) lock(ctx context.Context) error {
	t0 := time.Now()
	locks, err := r.e.LockFiles(ctx, r.t.Resolved)
	r.times.LockWait += time.Since(t0)
	r.locks = locks
	if err != nil {
		return r.d.Fail(StepLock, err)
	}
	r.pass = r.gate.Enter()
	return nil
}

// unlock lets the file go while the change waits on something slow (a
// person's approval); the change must lock it and check it again after.
func (r *run) unlock() {
	r.pass.Leave()
	r.pass = nil
	UnlockAll(r.locks)
	r.locks = nil
}

// makeParent is the engine's part of StepPrepare: the missing parent
// directories of a new file, made durably; then the file must still not
// exist (else a *ChangedError).
func (r *run) makeParent() error {
	if r.t.Dir != nil {
		return nil
	}
	if err := r.e.MakeParent(r.t); err != nil {
		return r.d.Fail(StepPrepare, err)
	}
	now, err := r.e.Observe(r.t)
	if err != nil {
		return r.d.Fail(StepObserve, err)
	}
	if !now.Same(r.obs) {
		return r.d.Fail(StepPrepare, &ChangedError{Now: now})
	}
	return nil
}

// record is StepRecord, whatever step the change stopped at: no return
// leaves the history's save running, the file held or a history object
// linked to it (single.finish). The outcome record is written under the
// file's lock, so that the records of one file are in the order of its
// changes, and after the directory's fsync, so that it never reaches the
// disk before the change it records. Its fsync runs after the lock is
// released, shared with concurrent commits; a committed change whose
// intent is durable does not wait for it (outcome.go).
func (r *run) record(err error) error {
	e := r.e
	r.single.finish()
	var in *Intent
	if r.single != nil {
		in = r.single.intent
	}
	o := e.WriteOutcome(r.d.Outcome(err, r.times), in)
	UnlockAll(r.locks)
	if r.t != nil {
		r.t.Close()
	}
	// A refusal's record, which is waited for, joins a batch's ledger
	// fsync.
	r.pass.Arrive()
	r.pass.Leave()
	lerr := o.Wait()
	if r.single != nil && r.single.lazy {
		e.lazySaved(len(in.Rec.Displaced))
	}
	err = r.d.Recorded(lerr, err)
	if err == nil && !r.dry {
		e.sweepParkedSoon()
	}
	return err
}

// A ChangedError says that the file is no longer what the change observed
// (Now is what it holds), found when it was looked at again after a step
// that took time.
type ChangedError struct{ Now *Observation }

func (e *ChangedError) Error() string { return "the file changed since it was observed" }
