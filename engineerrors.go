package editguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/filelock"
)

// The engine (internal/engine) returns errors as they happened; this file
// is where they become the caller's *Error, each with the path it is
// about and, for a file another program changed, STALE_FILE with what the
// file holds now.

// observeError is the error of a file that could not be read: TOO_LARGE
// past the file size limit (it was not read), else an I/O error.
func observeError(t *target, err error) error {
	var tl *engine.TooLargeError
	if errors.As(err, &tl) {
		e := newError(CodeTooLarge, t.Path, "file is larger than the limit", "", tl.Err)
		e.Details["size_bytes"] = tl.Size
		e.Details["limit_bytes"] = tl.Limit
		return e
	}
	return ioError(t.Path, err)
}

// targetError is the error of a parent directory that could not be
// opened (engine.Engine.OpenTarget).
func targetError(p string, err error) error {
	if errors.Is(err, engine.ErrOutsideRoot) {
		return outsideRoot(p)
	}
	return newError(CodeIO, p, err.Error(), "", err)
}

// parentError is the error of a parent directory that could not be made
// (engine.Engine.MakeParent): NOT_A_FILE where a parent is a file.
func parentError(p string, err error) error {
	if errors.Is(err, atomicfile.ErrNotDir) {
		return newError(CodeNotAFile, p, "a parent of the path is not a directory", "", err)
	}
	if errors.Is(err, engine.ErrOutsideRoot) {
		return outsideRoot(p)
	}
	return ioError(p, err)
}

// lockError is the error of a lock not taken: the context's own error if
// it ended, else an I/O error (BUSY past the lock timeout) of the file at p.
func lockError(p string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return ioError(p, err)
}

// lockTxError is the error of the locks of a change of several names not
// taken (engine.Engine.LockTx): lockError for the file whose lock failed.
func lockTxError(err error) error {
	var pe *engine.PathError
	if errors.As(err, &pe) {
		return lockError(pe.Path, pe.Err)
	}
	return err
}

// settledWarnings are the result's warnings for the steps of a
// transaction that failed after its swaps (the settled errors of
// engine.Engine.RunTx): the changes stand.
func settledWarnings(settled []error) []string {
	var out []string
	for _, err := range settled {
		var pe *engine.PathError
		if errors.As(err, &pe) {
			out = append(out, fmt.Sprintf("%s is changed, but %v", pe.Path, ioError(pe.Path, pe.Err)))
		}
	}
	return out
}

// txError is the caller's error for a failed step of a transaction before
// its swaps, which changed nothing.
func txError(err error) error {
	var pe *engine.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.History:
		return historyFailed(pe.Path, pe.Err)
	case errors.As(err, &pe):
		return ioError(pe.Path, pe.Err)
	}
	return ioError("", err)
}

// commitError turns the error of a failed swap into the caller's: a file
// created or changed by another program since it was checked (obs) is
// STALE_FILE with what it holds now.
func (w *Workspace) commitError(t *target, obs *observation, err error) error {
	switch {
	case errors.Is(err, engine.ErrReplaced):
		return w.unchanged(t, obs, "before it was replaced")
	case errors.Is(err, atomicfile.ErrExist):
		return stale(t.Path, ReasonCreated, w.holdsNow(t))
	case errors.Is(err, atomicfile.ErrRaced):
		now := w.holdsNow(t)
		reason := ReasonModified
		if !now.Stat.Exists {
			reason = ReasonDeleted
		}
		e := stale(t.Path, reason, now)
		e.Message = "file was changed by another program during the commit; nothing was written"
		e.Err = err
		return e
	}
	return ioError(t.Path, err)
}

// moveError maps a failed atomicfile.Move, which changed nothing.
func (w *Workspace) moveError(ts, td *target, err error) error {
	switch {
	case errors.Is(err, atomicfile.ErrExist):
		now := w.holdsNow(td)
		e := stale(td.Path, ReasonCreated, now)
		e.Message = "the destination was created by another program during the move; nothing was moved"
		return e
	case errors.Is(err, atomicfile.ErrRaced):
		now := w.holdsNow(ts)
		e := stale(ts.Path, ReasonModified, now)
		e.Message = "a file was changed by another program during the move; nothing was moved"
		e.Err = err
		return e
	case errors.Is(err, atomicfile.ErrCrossDevice):
		return newError(CodeIO, ts.Path, "the source and the destination are on different file systems, and a move between them cannot be atomic",
			"copy the file with write_file and delete the source with delete_file", err)
	}
	return ioError(ts.Path, err)
}

// historyFailed is the error of a change refused because saving what it
// would displace to history failed; nothing was changed.
func historyFailed(p string, err error) *Error {
	e := ioError(p, err)
	e.Message = "saving the current content to history failed; nothing was changed: " + e.Message
	e.Details["step"] = "history"
	return e
}

// commitTxError is the caller's error for a transaction the engine did not
// commit: a step before the swaps, which changed nothing, or a swap, after
// which the files swapped before it were put back (or, if that failed, are
// left for the next Open to put back).
func (w *Workspace) commitTxError(files []*txFile, err error) error {
	var (
		pe *engine.PathError
		se *engine.SwapError
	)
	switch {
	case errors.As(err, &pe) && pe.Journal:
		e := ioError("", pe.Err)
		e.Message = "writing the transaction's journal failed; nothing was changed: " + e.Message
		return e
	case !errors.As(err, &se):
		return txError(err)
	}
	f := files[se.I]
	serr := w.commitError(f.t, f.obs, se.Err)
	if se.RollBack != nil {
		e := ioError(f.t.Path, serr)
		e.Message = fmt.Sprintf("the patch failed at %s (%v), and undoing it failed too (%v); the journal is kept, and the next open of the workspace undoes it", f.t.Path, serr, se.RollBack)
		return e
	}
	var ee *Error
	if !errors.As(serr, &ee) {
		ee = ioError(f.t.Path, serr)
	}
	ee.Details["file"] = f.t.Path
	ee.Details["undone"] = se.I
	return ee
}

// singleError is the caller's error for a single file's change that the
// engine's StepSwap stopped (commitRun.Swapped): the sweep of a dead
// writer's temporary file, history, or the swap (commitError). leftover
// names the history version that keeps what another program wrote into
// the new file before the swap was undone, if any.
func (w *Workspace) singleError(t *target, obs *observation, p string, err error, leftover string) error {
	var pe *engine.PathError
	switch {
	case errors.As(err, &pe) && pe.Sweep:
		e := ioError(p, pe.Err)
		e.Details["step"] = "sweep temp"
		return e
	case errors.As(err, &pe) && pe.History:
		return historyFailed(p, pe.Err)
	}
	err = w.commitError(t, obs, err)
	var e *Error
	if leftover != "" && errors.As(err, &e) {
		e.Details["recovered_version"] = leftover
	}
	return err
}

// Fail turns the error of the engine's part of step of a single file's
// change (engine.Engine.Run) into the caller's.
func (r *commitRun) Fail(step engine.Step, err error) error {
	var ce *engine.ChangedError
	switch {
	case step == engine.StepLock:
		return lockError(r.t.Resolved, err)
	case step == engine.StepObserve:
		return observeError(r.t, err)
	case errors.As(err, &ce):
		return changed(r.t, r.obs, ce.Now, "while its directory was created")
	case step == engine.StepPrepare:
		return parentError(r.t.Path, err)
	}
	return ioError(r.t.Path, err)
}

// holdsNow is what t holds now, for a STALE_FILE error: an empty
// observation if it cannot be read.
func (w *Workspace) holdsNow(t *target) *observation {
	now, _ := w.observe(t)
	if now == nil {
		now = &observation{}
	}
	return now
}

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
