package editguard

import (
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// Contents a record's decision rests on that no change displaced, kept in
// history so that a person can see them and replay can decide the record
// again: the text of an apply_patch, the read a merge was decided
// against, and the file a refused patch's hunks were applied to. Each is
// kept like any version, under the same retention.

// PatchTextPath is the history path under which the texts of apply_patch
// calls are kept, one version each (ledger.Record.Text names it). No
// workspace file can have this name: the state directory is never a
// workspace path.
const PatchTextPath = StateDir + "/patches"

// keepContent returns the version of p in history that holds data (whose
// SHA-256 is sum), saving it durably as a version of op if history holds
// none yet.
func (w *Workspace) keepContent(p string, data []byte, sum, op, session string) (history.Version, error) {
	v, ok, err := w.hist.Newest(p, func(v history.Version) bool { return !v.Absent && v.SHA256 == sum })
	if err != nil || ok {
		return v, err
	}
	return w.hist.Save(p, data, false, sum, history.Meta{Op: op, Session: session, Later: w.trimLater})
}

// keepText keeps the patch text of the attempt a in history and names it
// in its record, once.
func (w *Workspace) keepText(a *attempt) error {
	if a.text == nil || a.rec.Text != nil {
		return nil
	}
	data := []byte(*a.text)
	sum := sha256Hex(data)
	v, err := w.keepContent(PatchTextPath, data, sum, a.rec.Tool, a.rec.Session)
	if err != nil {
		return err
	}
	a.rec.Text = &ledger.Kept{Path: PatchTextPath, Version: v.ID, SHA256: sum, Size: int64(len(data))}
	return nil
}

// PatchText returns the text of the apply_patch call rec records, which
// history keeps (rec.Text names it): what the agent sent, refused or
// committed. A record that names none (a dry run's result, a record
// written before texts were kept), or whose text retention has retired,
// is NOT_FOUND.
func (w *Workspace) PatchText(rec *LedgerRecord) (string, error) {
	if rec == nil || rec.Text == nil {
		return "", newError(CodeNotFound, "", "the record names no kept patch text", "", nil)
	}
	_, data, err := w.hist.Load(rec.Text.Path, rec.Text.Version)
	if err != nil {
		e := newError(CodeNotFound, "", "the patch text the record names is not in history: "+err.Error(), "", err)
		e.Details["version"] = rec.Text.Version
		return "", e
	}
	if sha256Hex(data) != rec.Text.SHA256 {
		return "", newError(CodeUnsafeState, "", "the patch text history keeps is not the one the record names", "", nil)
	}
	return string(data), nil
}
