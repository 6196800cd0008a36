package editguard

import (
	"encoding/json"
	"errors"
	"path"
	"path/filepath"

	"github.com/editguard/editguard/internal/ledger"
)

// LogFilter selects ledger records; empty fields match everything.
type LogFilter struct {
	Path    string // as given; resolved like any tool path
	Session string
	Tool    string
}

// Log calls fn for each ledger record that matches f, oldest first.
func (w *Workspace) Log(f LogFilter, fn func(*LedgerRecord) error) error {
	m := ledger.Match{Session: f.Session, Tool: f.Tool}
	if f.Path != "" {
		resolved, err := w.resolve(f.Path)
		if err != nil {
			return err
		}
		m.Path = resolved
	}
	return ledger.Filter(w.LedgerPath(), m, fn)
}

// LedgerVerifyError names the first ledger record that fails verification.
type LedgerVerifyError = ledger.VerifyError

// VerifyLedger checks the ledger's hash chain and returns how many records
// it holds. If any record was edited, deleted, reordered or inserted, the
// error is a *LedgerVerifyError naming the first bad sequence number.
func (w *Workspace) VerifyLedger() (int, error) {
	return ledger.Verify(w.LedgerPath())
}

// Replayer answers a recorded sequence of tool calls with their recorded
// outcomes, without touching the disk: the ledger's pure replay mode. Calls
// must come in the recorded order; one that differs from the record fails
// with a *ReplayDivergence.
type Replayer struct {
	r *ledger.Replayer
}

// ReplayDivergence reports a call that differs from the record.
type ReplayDivergence = ledger.DivergenceError

// NewReplayer replays the workspace's ledger, only session's records if
// session is not empty.
func (w *Workspace) NewReplayer(session string) (*Replayer, error) {
	r, err := ledger.LoadReplayer(w.LedgerPath(), session)
	if err != nil {
		return nil, err
	}
	return &Replayer{r: r}, nil
}

// Write replays a Session.Write call.
func (r *Replayer) Write(p, content string, opts *WriteOptions) (*Result, error) {
	var o WriteOptions
	if opts != nil {
		o = *opts
	}
	return r.next("write_file", p, writeArgs(p, content, &o))
}

// Edit replays a Session.Edit call.
func (r *Replayer) Edit(p string, edits []Edit, opts *EditOptions) (*Result, error) {
	var o EditOptions
	if opts != nil {
		o = *opts
	}
	return r.next("edit_file", p, editArgs(p, edits, &o))
}

// Restore replays a Session.Restore call.
func (r *Replayer) Restore(p, version string, opts *RestoreOptions) (*Result, error) {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	return r.next("restore_file", p, restoreArgs(p, version, &o))
}

// Remaining reports how many recorded calls have not been replayed.
func (r *Replayer) Remaining() int { return r.r.Remaining() }

// next matches a call against the next record and returns its recorded
// outcome: the Result, or the *Error the call returned.
func (r *Replayer) next(tool, p string, args any) (*Result, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	// The ledger records the path as resolved inside the root; a relative
	// path without symlinks resolves to its lexically clean form.
	rec, err := r.r.Next(tool, path.Clean(filepath.ToSlash(p)), raw)
	if err != nil {
		return nil, err
	}
	if rec.Outcome == "error" {
		e := &Error{}
		if err := json.Unmarshal(rec.Result, e); err != nil || e.Code == "" {
			return nil, errors.New("editguard: replay: recorded error is unreadable")
		}
		return nil, e
	}
	res := &Result{}
	if err := json.Unmarshal(rec.Result, res); err != nil {
		return nil, errors.New("editguard: replay: recorded result is unreadable")
	}
	return res, nil
}
