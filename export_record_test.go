package editguard

import (
	"encoding/json"
	"errors"
	"path"
	"path/filepath"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// VersionContent returns the bytes of a history version of p.
func VersionContent(w *Workspace, p, id string) ([]byte, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	_, data, err := w.loadVersion(p, resolved, id)
	return data, err
}

// SetFaults installs fault-injection hooks on w: commit on the directory of
// every later commit's target, hist on its history store, led on its ledger.
// nil removes each.
func SetFaults(w *Workspace, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	setFaults(w, commit, hist, led)
}

// SealJournal returns the transaction journal data with the MAC that w
// gives its journals.
func SealJournal(w *Workspace, data []byte) []byte {
	var j engine.Journal
	if err := json.Unmarshal(data, &j); err != nil {
		panic(err)
	}
	j.MAC = w.eng.JournalMAC(&j)
	b, err := json.Marshal(&j)
	if err != nil {
		panic(err)
	}
	return b
}

// ReplayDivergence reports a replayed call that differs from the record.
type ReplayDivergence = ledger.DivergenceError

// Replayer answers a recorded sequence of tool calls with their recorded
// outcomes, without touching the disk: calls must come in the recorded
// order, and one that differs from the record fails with a
// *ReplayDivergence. Tests use it to check that the ledger records every
// call whole: its arguments as the engine's call builders (ledger.go) give
// them, and its result or error. (Package internal/replay decides the
// recorded calls again instead.)
type Replayer struct {
	r *ledger.Replayer
}

// NewReplayer replays w's ledger, only session's records if session is not
// empty.
func NewReplayer(w *Workspace, session string) (*Replayer, error) {
	r, err := ledger.LoadReplayer(w.state, ledgerName, session)
	if err != nil {
		return nil, err
	}
	return &Replayer{r: r}, nil
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

// Every Session method that records a call has a Replayer method of the
// same name and signature, less the context (TestReplayerCoversSession
// holds them to that).

// Write replays a Session.Write call.
func (r *Replayer) Write(p, content string, opts *WriteOptions) (*Result, error) {
	return r.next(opWrite, p, writeArgs(p, content, orZero(opts)))
}

// Edit replays a Session.Edit call.
func (r *Replayer) Edit(p string, edits []Edit, opts *EditOptions) (*Result, error) {
	return r.next(opEdit, p, editArgs(p, edits, orZero(opts)))
}

// Restore replays a Session.Restore call.
func (r *Replayer) Restore(p, version string, opts *RestoreOptions) (*Result, error) {
	return r.next(opRestore, p, restoreArgs(p, version, orZero(opts)))
}

// Delete replays a Session.Delete call.
func (r *Replayer) Delete(p string, opts *DeleteOptions) (*Result, error) {
	return r.next(opDelete, p, deleteArgs(p, orZero(opts)))
}

// Move replays a Session.Move call.
func (r *Replayer) Move(src, dst string, opts *MoveOptions) (*Result, error) {
	call := moveArgs(src, dst, orZero(opts))
	res, err := r.next(opMove, src, call)
	if err != nil || res.DryRun {
		return res, err
	}
	// A move that happened has a second record, the destination's.
	return r.next(opMove, dst, call)
}

// orZero returns opts, or a new zero value if it is nil.
func orZero[T any](opts *T) *T {
	if opts == nil {
		return new(T)
	}
	return opts
}

// LedgerPath returns the path of w's ledger file.
func LedgerPath(w *Workspace) string { return filepath.Join(w.dir, StateDir, ledgerName) }

// SessionBaseline returns s's baseline for the path p, if any.
func SessionBaseline(s *Session, p string) (baseline, bool, error) { return s.baselineOf(p) }

// TempName is the temporary name w uses for a target named name.
func TempName(w *Workspace, name string) string { return w.eng.TempName(name) }
