package editguard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/statedir"
	"github.com/editguard/editguard/internal/userkey"
)

// StateCheck is what CheckStateDir found in a workspace's state directory
// that a person must know: what recovery will not act on, and the
// transactions that did not finish.
type StateCheck struct {
	// Unsafe are the UNSAFE_STATE items: a state directory editguard did
	// not write for this user on this machine, an entry of it of the wrong
	// type, a transaction journal that is damaged or that this workspace
	// did not write, a file an unfinished transaction left holding
	// neither what it found nor what it puts there. Recovery at Open
	// acts on none of them; they stay until a person removes them.
	Unsafe []RecoveryNote `json:"unsafe,omitempty"`
	// Unfinished are the transactions whose journals are still in place,
	// authentic: their process died, or is running them right now. The
	// next Open rolls each forward or back, unless Unsafe names it.
	Unfinished []UnfinishedTx `json:"unfinished,omitempty"`
}

// UnfinishedTx is a transaction whose journal is still in place.
type UnfinishedTx struct {
	ID      string           `json:"tx"`
	Op      string           `json:"op"`
	Session string           `json:"session"`
	Journal string           `json:"journal"` // relative to the root
	Files   []UnfinishedFile `json:"files"`
}

// UnfinishedFile is one file of an unfinished transaction and what it
// holds now.
type UnfinishedFile struct {
	Path string `json:"path"`
	// State is "before" (what the transaction found there), "after" (what
	// it puts there), or "neither" (something else, or a name out of
	// reach); Why says more of "neither".
	State string `json:"state"`
	Why   string `json:"why,omitempty"`
}

// HalfApplied reports whether the transaction left some files as it found
// them and others changed.
func (t *UnfinishedTx) HalfApplied() bool {
	var before, other bool
	for _, f := range t.Files {
		if f.State == "before" {
			before = true
		} else {
			other = true
		}
	}
	return before && other
}

// CheckStateDir checks the state directory of the workspace rooted at dir
// for what recovery at Open would find and a person must know (StateCheck),
// reading only, like VerifyDir: it creates, repairs, removes and locks
// nothing, so what it reports stays there to be looked at. A workspace
// without a state directory has nothing to report.
func CheckStateDir(dir string) (*StateCheck, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("editguard: check state: %w", err)
	}
	// O_DIRECTORY: a FIFO named as the workspace fails the open, not
	// blocks it.
	rootDir, err := os.OpenFile(real, os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return nil, fmt.Errorf("editguard: check state: %w", err)
	}
	defer rootDir.Close()
	check := &StateCheck{}
	unsafe := func(subject, msg string) {
		check.Unsafe = append(check.Unsafe, RecoveryNote{Code: CodeUnsafeState, Subject: subject, Message: msg})
	}
	state, err := statedir.Lookup(rootDir, "", StateDir)
	var ue *statedir.UnsafeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return check, nil
	case errors.As(err, &ue):
		unsafe(ue.Path, ue.Error())
		return check, nil
	case err != nil:
		return nil, stateError("open state directory", err)
	}
	defer state.Close()
	if err := checkOwner(state, real); err != nil {
		var e *Error
		if errors.As(err, &e) && e.Code == CodeUnsafeState {
			unsafe(StateDir, e.Message)
			return check, nil
		}
		return nil, err
	}
	uk, err := userkey.LoadFor(real)
	if err != nil {
		return nil, keyError(err)
	}
	w := &Workspace{state: state, ukey: uk}
	if !w.ownerValid() {
		return check, nil // not stamped yet, and empty (adoptable)
	}
	tx, err := state.Sub(engine.JournalDir, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return check, nil
	case errors.As(err, &ue):
		unsafe(ue.Path, ue.Error())
		return check, nil
	case err != nil:
		return nil, stateError("open "+StateDir+"/"+engine.JournalDir, err)
	}
	defer tx.Close()
	found, err := engine.ReadJournals(tx, w.wkey)
	if err != nil {
		return nil, stateError("read "+StateDir+"/"+engine.JournalDir, err)
	}
	if len(found) == 0 {
		return check, nil
	}
	files, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("editguard: check state: %w", err)
	}
	defer files.Close()
	for _, f := range found {
		entry := StateDir + "/" + engine.JournalDir + "/" + f.Name
		if f.Journal == nil {
			unsafe(entry, fmt.Sprintf("%s %s; the transaction that wrote it did not finish, so the files it names may be partly changed, and recovery will not act on it: look at it and the files it names, then remove it", entry, f.Unsafe))
			continue
		}
		j := f.Journal
		u := UnfinishedTx{ID: j.ID, Op: j.Op, Session: j.Session, Journal: entry}
		for _, jf := range j.Files {
			st, why := journalFileState(files, jf)
			u.Files = append(u.Files, UnfinishedFile{Path: jf.Path, State: st, Why: why})
			if st == "neither" {
				unsafe(entry, fmt.Sprintf("%s names %q, which %s: recovery will not act on the transaction; look at it and the files it names, then remove it", entry, jf.Path, why))
			}
		}
		check.Unfinished = append(check.Unfinished, u)
	}
	return check, nil
}

// journalFileState says what the file of jf holds now: what the
// transaction found there ("before"), what it puts there ("after"), or
// neither, and why.
func journalFileState(root *os.Root, jf engine.JournalFile) (state, why string) {
	fi, err := root.Lstat(jf.Path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "neither", fmt.Sprintf("cannot be looked at (%v)", err)
	}
	sum := ""
	if exists {
		if !fi.Mode().IsRegular() {
			return "neither", "is not a regular file"
		}
		f, err := root.Open(jf.Path)
		if err != nil {
			return "neither", fmt.Sprintf("cannot be read (%v)", err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "neither", fmt.Sprintf("cannot be read (%v)", err)
		}
		sum = hex.EncodeToString(h.Sum(nil))
	}
	switch {
	case exists == jf.AfterExists && (!exists || sum == jf.AfterSHA256):
		return "after", ""
	case exists == jf.BeforeExists && (!exists || sum == jf.BeforeSHA256):
		return "before", ""
	}
	return "neither", "holds neither what the transaction found nor what it puts there"
}
