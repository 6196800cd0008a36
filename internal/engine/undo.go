package engine

import (
	"context"
	"errors"
	"os"
	"path"
	"strings"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
)

// A transaction's rollback: each of its files that holds what the
// transaction put there gets back what it held before, as a change of its
// own (history first, then the swap), whether the transaction failed at a
// swap (commitTx) or its process died before any of its records was
// written (recovery at Open, recoverTx).

// at reports whether o is a file that exists (or not) with sum.
func (o *Observation) at(exists bool, sum string) bool {
	return o.Stat.Exists == exists && (!exists || (o.Stat.Regular() && o.Sum == sum))
}

// MakeParent creates the missing parent directories of a new file, each
// made durable (the new directory, then its parent, fsynced) before the
// file is committed into it, and opens the parent. A parent that is a
// file is atomicfile.ErrNotDir.
func (e *Engine) MakeParent(t *Target) error {
	cur := atomicfile.NewDir(e.cfg.RootDir)
	var last *os.File
	for _, elem := range strings.Split(path.Dir(t.Resolved), "/") {
		if elem == "" || elem == "." {
			continue
		}
		f, _, err := cur.OpenDir(elem, true)
		if last != nil {
			last.Close()
		}
		if err != nil {
			return err
		}
		last, cur = f, atomicfile.NewDir(f)
	}
	if last == nil {
		return e.openDir(t)
	}
	e.setDir(t, last)
	return nil
}

// undoFile puts jf's file, open as t, back to its before state if it is
// at its after state, and returns what it displaced and the history
// version that keeps it, saved under session and op. obs is nil if the
// file was not at its after state: it is left alone. On a failed swap obs
// is what was observed, for the caller's error, and version is "".
func (e *Engine) undoFile(t *Target, jf JournalFile, session, op string) (obs *Observation, version string, err error) {
	obs, err = e.Observe(t)
	if err != nil {
		return nil, "", err
	}
	if !obs.at(jf.AfterExists, jf.AfterSHA256) {
		return nil, "", nil
	}
	ch := &Change{Remove: true}
	if jf.BeforeExists {
		_, data, err := e.cfg.Hist.Load(jf.Path, jf.Version)
		if err != nil {
			return nil, "", err
		}
		ch = &Change{Data: data}
	}
	v, err := e.cfg.Hist.Save(t.Resolved, obs.Data, !obs.Stat.Exists, obs.Sum, history.Meta{Op: op, Session: session})
	if err != nil {
		return nil, "", err
	}
	if t.Dir == nil {
		if err := e.MakeParent(t); err != nil {
			return nil, "", err
		}
	}
	tmp, err := e.sweepTemp(t, session)
	if err != nil {
		return nil, "", err
	}
	if _, err := e.commit(context.Background(), t, obs, ch, tmp, nil, true); err != nil {
		return obs, "", err
	}
	return obs, v.ID, nil
}

// rollBack puts every file of j, open as targets in its order, back as
// undoFile does, under session and op. The caller holds the files' locks.
// The error joins each file's (a *PathError).
func (e *Engine) rollBack(j *Journal, targets []*Target, session, op string) error {
	var errs []error
	for i, jf := range j.Files {
		if _, _, err := e.undoFile(targets[i], jf, session, op); err != nil {
			errs = append(errs, &PathError{Path: jf.Path, Err: err})
		}
	}
	return errors.Join(errs...)
}
