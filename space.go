//go:build unix

package editguard

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/editguard/editguard/internal/engine"
)

// A full file system.
//
// Before a change writes anything, it asks the file system of the file's
// directory how much room is left (statfs: the blocks an unprivileged
// writer may use). When that is less than the change needs, editguard
// first removes what is its own to remove (engine.Engine.Reclaim: its
// temporary file for the path when history holds its bytes, and parked
// displaced files, which history holds) and asks again; only then does it
// refuse, with NO_SPACE naming the bytes needed and available and those
// it freed. The file is not changed by the refusal. A change that fails
// with ENOSPC later all the same (an estimate is not a reservation) is
// refused with the numbers as they are then.

// spaceMargin is what a change needs beside its content and history's
// copy: the ledger's records and directory entries.
const spaceMargin = 8 << 10

// changeNeeds returns the bytes a change needs on its file system: the
// new content in whole blocks; what history keeps of the displaced
// content (a copy, for one too large for its index line and too small to
// be linked instead; else its index line, base64, and as much again in
// the intent that may carry it); and spaceMargin.
func (w *Workspace) changeNeeds(newSize, oldSize, block int64) int64 {
	need := roundUp(newSize, block) + spaceMargin
	if w.hist == nil {
		return need
	}
	switch limit := int64(w.hist.InlineLimit()); {
	case oldSize <= limit:
		need += 2 * (oldSize + 2) / 3 * 4
	case oldSize < engine.LinkMin:
		need += roundUp(oldSize, block)
	}
	return need
}

func roundUp(n, block int64) int64 {
	if block <= 0 {
		return n
	}
	return (n + block - 1) / block * block
}

// freeSpace returns the bytes an unprivileged writer may still use on the
// file system of the open directory dir, and its block size.
func freeSpace(dir *os.File) (avail, block int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(int(dir.Fd()), &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Bsize), nil
}

// spaceDir is the directory whose file system t's change writes to: its
// parent, or the root while the parent does not exist yet.
func (w *Workspace) spaceDir(t *target) *os.File {
	if t.DirFile != nil {
		return t.DirFile
	}
	return w.rootDir
}

// ensureSpace makes sure that t's file system has room for a change to
// newSize bytes of a file of oldSize bytes, reclaiming editguard's own
// leftovers if it has not; else it refuses with NO_SPACE. The caller
// holds t's lock. A file system that cannot say is not refused.
func (w *Workspace) ensureSpace(t *target, newSize, oldSize int64) error {
	dir := w.spaceDir(t)
	avail, block, err := freeSpace(dir)
	if err != nil {
		return nil
	}
	need := w.changeNeeds(newSize, oldSize, block)
	if avail >= need {
		return nil
	}
	freed := w.eng.Reclaim(t)
	if avail, _, err = freeSpace(dir); err != nil || avail >= need {
		return nil
	}
	return noSpace(t.Path, need, avail, freed, nil)
}

// noSpace is the NO_SPACE refusal of a change of p that needs need bytes
// where avail are available, after freed bytes of editguard's own were
// removed.
func noSpace(p string, need, avail, freed int64, cause error) *Error {
	msg := fmt.Sprintf("no space left on the file system: the change needs %d bytes, %d are available", need, avail)
	if freed > 0 {
		msg += fmt.Sprintf(" (after removing %d bytes of editguard's own leftovers)", freed)
	}
	e := newError(CodeNoSpace, p, msg,
		fmt.Sprintf("free at least %d bytes on the file system (or quota), then retry; nothing was changed", need-avail), cause)
	e.Details["needed_bytes"] = need
	e.Details["available_bytes"] = avail
	e.Details["freed_bytes"] = freed
	return e
}

// withSpace adds the numbers to a NO_SPACE that a write met (ENOSPC or
// EDQUOT) after ensureSpace let it go: what t's change needs and what is
// available now.
func (w *Workspace) withSpace(t *target, newSize, oldSize int64, err error) error {
	var e *Error
	if t == nil || !errors.As(err, &e) || e.Code != CodeNoSpace {
		return err
	}
	if _, ok := e.Details["available_bytes"]; ok {
		return err
	}
	avail, block, serr := freeSpace(w.spaceDir(t))
	if serr != nil {
		return err
	}
	need := w.changeNeeds(newSize, oldSize, block)
	ne := noSpace(t.Path, need, avail, 0, e.Err)
	for k, v := range e.Details {
		ne.Details[k] = v // the failing file's path, the step
	}
	ne.Message = e.Message + fmt.Sprintf(" (the change needs %d bytes, %d are available)", need, avail)
	return ne
}

// txNeeds returns the new and old sizes a transaction of files writes
// and displaces, in all.
func txNeeds(files []*txFile) (newSize, oldSize int64) {
	for _, f := range files {
		newSize += int64(len(f.data))
		if f.obs != nil {
			oldSize += int64(len(f.obs.Data))
		}
	}
	return newSize, oldSize
}

// ensureTxSpace is ensureSpace for a transaction of files, whose
// contents are taken to share the first file's file system.
func (w *Workspace) ensureTxSpace(files []*txFile) error {
	if len(files) == 0 {
		return nil
	}
	t := files[0].t
	dir := w.spaceDir(t)
	avail, block, err := freeSpace(dir)
	if err != nil {
		return nil
	}
	newSize, oldSize := txNeeds(files)
	need := w.changeNeeds(newSize, oldSize, block) + int64(len(files))*block
	if avail >= need {
		return nil
	}
	var freed int64
	for _, f := range files {
		freed += w.eng.Reclaim(f.t)
	}
	if avail, _, err = freeSpace(dir); err != nil || avail >= need {
		return nil
	}
	return noSpace(t.Path, need, avail, freed, nil)
}
