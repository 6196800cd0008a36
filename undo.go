package editguard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/editguard/editguard/internal/ledger"
)

// UndoOptions control UndoPatch.
type UndoOptions struct {
	DryRun bool
}

// UndoPatch puts back every file of the patch transaction txid (from
// ApplyPatch's result, or the ledger) as it was before the patch, as one
// transaction of its own: all or nothing, even across a crash, like
// ApplyPatch. Each file must still be exactly what the patch left, as the
// ledger records it; a file changed since fails the whole undo with
// STALE_FILE, so no later work is destroyed. It needs no read: the ledger's
// hash chain vouches for what the patch wrote. What the undo replaces goes
// to history, so the undo can itself be undone.
func (s *Session) UndoPatch(ctx context.Context, txid string, opts *UndoOptions) (*PatchResult, error) {
	var o UndoOptions
	if opts != nil {
		o = *opts
	}
	a := newAttempt(s, opUndoPatch, "", map[string]any{"tx": txid, "dry_run": o.DryRun}, nil)
	r := &txRun{a: a, op: opUndoPatch,
		changeSet: &changeSet{s: s, whenPrepare: "while the undo was prepared", whenApprove: "while the undo awaited approval"},
		refusal:   refusal{"", "the undo was declined", "ask the user what to do instead"}}
	var recs []*LedgerRecord
	r.resolve = func() error {
		var err error
		if recs, err = s.w.patchTxRecords(txid); err != nil {
			return err
		}
		r.res = &PatchResult{TxID: strings.ToLower(rand.Text()[:12]), DryRun: o.DryRun}
		for _, rec := range recs {
			f, err := r.add(rec.Path)
			if errors.Is(err, errSameFile) {
				return newError(CodeInvalidArgument, rec.Path, "the transaction's records name this file twice", "", nil)
			}
			if err != nil {
				return err
			}
			f.out = len(r.res.Files)
			r.res.Files = append(r.res.Files, PatchFile{Path: rec.Path, Op: "undo"})
		}
		return nil
	}
	r.plan = func() error {
		for i, f := range r.files {
			if err := s.w.prepareUndo(f, recs[i], &r.res.Files[f.out]); err != nil {
				return err
			}
		}
		return nil
	}
	err := s.w.eng.RunTx(ctx, r, opUndoPatch, opPatchUndone, s.name)
	return r.out, err
}

// patchTxRecords returns the ledger's records of the patch transaction
// txid (ApplyPatch's or UndoPatch's): one per name it changed. No record
// fails with INVALID_ARGUMENT.
func (w *Workspace) patchTxRecords(txid string) ([]*LedgerRecord, error) {
	var recs []*LedgerRecord
	// Only lines that hold the strategy's text are decoded.
	err := ledger.Filter(w.state, ledgerName, ledger.Match{Mentions: "transaction " + txid}, func(r *LedgerRecord) error {
		if r.Outcome == "ok" && (r.Tool == opApplyPatch || r.Tool == opUndoPatch) && r.Strategy == "transaction "+txid {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, readError("read ledger", err)
	}
	if len(recs) == 0 {
		return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("no patch transaction %q in the ledger", txid),
			"use the transaction id a patch's result names (editguard log lists them)", nil)
	}
	return recs, nil
}

// prepareUndo readies f, locked, to be put back as the patch transaction's
// record r of it says it was before: f must still be exactly what the patch
// left (else STALE_FILE), and the version r saved is loaded and checked
// against r. pf, f's entry in the result, gets the undo's diff.
func (w *Workspace) prepareUndo(f *txFile, r *LedgerRecord, pf *PatchFile) error {
	var err error
	if f.obs, err = w.observe(f.t); err != nil {
		return err
	}
	afterExists := r.SHA256After != ""
	if f.obs.Stat.Exists != afterExists || f.obs.Sum != r.SHA256After {
		e := stale(f.t.Path, ReasonModified, f.obs)
		if !f.obs.Stat.Exists {
			e = stale(f.t.Path, ReasonDeleted, f.obs)
		}
		e.Message = "the file changed after the patch; undoing the patch would destroy that change, so nothing was undone"
		e.RecoveryHint = "restore the files one by one with restore_file after reading them, or leave the patch in place"
		e.Details["expected"] = map[string]any{"sha256": r.SHA256After}
		return e
	}
	v, data, err := w.loadVersion(f.t.Path, f.t.Resolved, r.HistoryVersion)
	if err != nil {
		return err
	}
	// r saved the version (it is the transaction's record of this
	// file): checked against it, as checkVersion would after reading
	// the whole ledger again for each file.
	if why := disagreement(v, r); why != "" {
		return versionMismatch(f.t.Path, v, why)
	}
	if v.Absent {
		f.remove = true
		pf.Diff = unifiedDiff(f.t.Path, textOf(f.obs.Data, ""), "", false, true)
	} else {
		f.data, f.sum = data, v.SHA256
		pf.SHA256, pf.SizeBytes = f.sum, int64(len(data))
		pf.Diff = unifiedDiff(f.t.Path, textOf(f.obs.Data, ""), textOf(data, ""), !f.obs.Stat.Exists, false)
	}
	return nil
}
