package editguard

import (
	"context"
	"errors"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/textcodec"
)

// GuardResult is what Guard found and kept.
type GuardResult struct {
	Path    string `json:"path"`
	Exists  bool   `json:"exists"`
	SHA256  string `json:"sha256,omitempty"`
	Version string `json:"version"` // the history version that keeps it
	// Merged is set when the file changed since the session's read but
	// the tool's exact edits (GuardOptions.Edits) leave that change
	// alone, so the tool may make them over it (merge.go); ExternalDiff
	// is the other change, from the read to the file now.
	Merged       bool   `json:"merged,omitempty"`
	ExternalDiff string `json:"external_diff,omitempty"`
}

// GuardOptions say what Guard asks of the session's read of the file.
type GuardOptions struct {
	// WholeFile is set for a tool that replaces the whole file (a write):
	// an existing file then needs a full read, as write_file does.
	WholeFile bool
	// Unread lets a change of an existing file the session has not read
	// go through (what it holds is still saved to history first). It is
	// for a tool whose input states what it expects to find, as a patch
	// does with its context lines, on a client whose reads the hook never
	// sees. A file the session has read must still be as it was read.
	Unread bool
	// Edits are the exact edits the tool is about to make, if it makes
	// such edits (an agent's Edit): a file that changed since the read
	// then passes if they merge over the other change, as edit_file's
	// do (merge.go), and the result says so. Nil for a tool that writes
	// whole files.
	Edits []Edit
}

// guardOp prefixes the history operation of a Guard, and the ledger tool
// of its record, so that Record can find what Guard kept.
const guardOp = "hook:"

// Guard is the check in front of a write that another program makes with
// its own tool (an agent's built-in Write or Edit, through a hook): under
// the file's lock it checks the file against the session's baseline, as a
// guarded write would (NOT_READ without a read, unless opts.Unread; a full
// one for a whole-file write; STALE_FILE, with the changes since the read
// when they are small, if it changed, unless opts.Edits merge over that
// change), and saves what the file holds now to
// history, so that the
// version the tool is about to replace can always be restored. A refusal is
// recorded in the ledger; a pass is recorded by Record, after the tool.
//
// The tool's own write is not under editguard's lock: a writer that changes
// the file between Guard and the tool's write is not detected by Guard, and
// what it wrote is lost unless Record finds the file other than the tool
// left it.
func (s *Session) Guard(ctx context.Context, p, tool string, opts *GuardOptions) (res *GuardResult, err error) {
	var o GuardOptions
	if opts != nil {
		o = *opts
	}
	a := newAttempt(s, guardOp+tool, p, map[string]any{"path": p, "whole_file": o.WholeFile}, nil)
	var (
		lock *filelock.Lock
		t    *target
	)
	defer func() {
		if err != nil {
			s.w.finish(a, nil, err)
		}
		lock.Unlock()
		if t != nil {
			t.Close()
		}
	}()
	if t, err = s.w.openTarget(p); err != nil {
		return nil, err
	}
	a.rec.Path = t.Resolved
	if err := s.w.checkChangeable(t); err != nil {
		return nil, err
	}
	if lock, err = s.w.lockFile(ctx, t); err != nil {
		return nil, err
	}
	obs, err := s.w.observe(t)
	if err != nil {
		return nil, err
	}
	a.rec.Observed = obs.LedgerState()
	if obs.Stat.Exists && !obs.Stat.Regular() {
		return nil, notAFile(p, obs)
	}
	_, read := s.baseline(t.Resolved)
	if !read && t.Lexical != "" {
		_, read = s.baseline(t.Lexical)
	}
	var merged string
	if read || !o.Unread {
		if base, err := s.check(t, nil, obs, o.WholeFile); err != nil {
			if merged, err = s.guardMerge(base, obs, o.Edits, err); err != nil {
				return nil, err
			}
		}
	}
	// The trim of old versions that a Save may run waits until after
	// the answer: the tool is waiting for it.
	v, err := s.w.hist.Save(t.Resolved, obs.Data, !obs.Stat.Exists, obs.Sum, history.Meta{Op: guardOp + tool, Session: s.name, Later: s.w.trimLater})
	if err != nil {
		return nil, historyFailed(p, err)
	}
	return &GuardResult{Path: t.Resolved, Exists: obs.Stat.Exists, SHA256: obs.Sum, Version: v.ID, Merged: merged != "", ExternalDiff: merged}, nil
}

// guardMerge decides, for a Guard whose check failed with stale, whether
// the tool's edits merge over the other change: the same rules as
// edit_file's (merge.go), against b, the session's read the check found
// (the check has already moved the session's read on, as STALE_FILE
// does), and the bytes observed under the lock. It returns the other
// change's diff, or stale (saying why not, where it was a question of
// merging).
func (s *Session) guardMerge(b *baseline, obs *observation, edits []Edit, stale error) (string, error) {
	seen, ok := s.seenForMerge(b, obs, stale)
	if len(edits) == 0 || !ok {
		return "", stale
	}
	cur, err := textcodec.Decode(obs.Data, b.Encoding)
	if err != nil {
		return "", stale
	}
	_, diff, _, err := mergeEdits(seen, b.Encoding, cur.Text, edits)
	if nm, ok := isNoMerge(err); ok {
		var e *Error
		errors.As(stale, &e) // seenForMerge found it so
		e.Details["not_merged"] = nm.why
		return "", stale
	}
	if err != nil {
		return "", stale
	}
	return diff, nil
}

// Record is the step after another program's tool changed p, which Guard
// let through: it appends the ledger record of the change (what Guard kept
// as the content before, what is there now) and moves the session's
// baseline to the file as it is now. If the file is as Guard found it, the
// tool changed nothing and nothing is recorded. It returns once the record
// is durable.
func (s *Session) Record(ctx context.Context, p, tool string) (*Result, error) {
	wait, err := s.RecordNoWait(ctx, p, tool)
	if err != nil {
		return nil, err
	}
	return wait()
}

// RecordNoWait is Record without waiting for the ledger record to be
// durable: it returns once the record is written and the baseline moved,
// and wait, which makes the record durable (its fsync is shared with
// concurrent commits) and returns what Record would have.
//
// It is for a hook server, which answers the client first and waits after:
// the change it records is the tool's own write, which the tool does not
// fsync, so until wait returns a power cut may take the record and the
// change alike. A crash of the process does not lose the record, which is
// written. Every other change editguard makes is recorded durably before
// it is reported.
func (s *Session) RecordNoWait(ctx context.Context, p, tool string) (wait func() (*Result, error), err error) {
	t, err := s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	// What this session's Guard kept of the file: its newest version.
	v, found, err := s.w.hist.Newest(t.Resolved, func(v history.Version) bool {
		return v.Session == s.name && v.Op == guardOp+tool
	})
	if err != nil {
		return nil, ioError(p, err)
	}
	kept := &v
	if !found {
		return nil, newError(CodeNotRead, p, "no check of this file by the session was found before the change", "", errors.New("no guard version"))
	}
	lock, err := s.w.lockFile(ctx, t)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock() // a no-op once released below
	obs, err := s.w.observe(t)
	if err != nil {
		return nil, err
	}
	if obs.Stat.Exists == !kept.Absent && (kept.Absent || obs.Sum == kept.SHA256) {
		res := &Result{Path: p, SHA256: obs.Sum, SizeBytes: obs.Stat.Size} // the tool changed nothing
		return func() (*Result, error) { return res, nil }, nil
	}
	a := newAttempt(s, guardOp+tool, p, map[string]any{"path": p}, nil)
	a.rec.Path = t.Resolved
	a.rec.Observed = ledgerState(FileState{Exists: !kept.Absent, SHA256: kept.SHA256, Size: kept.Size})
	a.rec.SHA256Before = kept.SHA256
	res := &Result{Path: p, SHA256: obs.Sum, SizeBytes: obs.Stat.Size, Created: kept.Absent, Deleted: !obs.Stat.Exists,
		BackupVersion: kept.ID, MtimeMS: obs.MtimeMS(), Strategy: "external"}
	if obs.Stat.Exists {
		err = s.setBaseline(t.Lexical, baseline{Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(),
			FullRead: true, CapturedAt: time.Now()})
		if err == nil {
			s.rememberFrozen(obs.Sum, obs.Data, true) // an observation is never written to
		}
	} else {
		err = s.dropBaseline(t.Resolved)
	}
	if err != nil {
		res.warn("the session could not record the change as read (%v)", err)
	}
	// Written under the lock, fsynced after it, as a commit's record is.
	rc := s.w.record(a, res, nil)
	lock.Unlock()
	return rc.wait, nil
}
