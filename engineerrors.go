package editguard

import (
	"context"
	"errors"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
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
// opened (engine.Engine.OpenDir).
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
		now, _ := w.observe(t)
		if now == nil {
			now = &observation{}
		}
		return stale(t.Path, ReasonCreated, now)
	case errors.Is(err, atomicfile.ErrRaced):
		now, _ := w.observe(t)
		if now == nil {
			now = &observation{}
		}
		reason := ReasonModified
		if !now.Stat.Exists {
			reason = ReasonDeleted
		}
		e := stale(t.Path, reason, now)
		e.Message = "file was changed by another program during the commit; nothing was written"
		e.Err = err
		return e
	}
	var e *Error
	if errors.As(err, &e) {
		return err // from ready
	}
	return ioError(t.Path, err)
}
