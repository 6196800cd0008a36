package editguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// RestoreOptions control Restore.
type RestoreOptions struct {
	Precondition *Precondition `json:"precondition,omitempty"`
	DryRun       bool          `json:"dry_run,omitempty"`
}

// Restore puts a history version back. It is a guarded write like any other:
// it needs a full read or a precondition, it fails with STALE_FILE if the
// file changed since, and what it displaces goes to history first, so no
// restore can destroy later work. Over a file that does not exist a restore
// needs no read: it discards nothing. Restoring a version that records "did not
// exist" deletes the file. The bytes are restored exactly, encoding and line
// endings included.
func (s *Session) Restore(ctx context.Context, p, version string, opts *RestoreOptions) (*Result, error) {
	var o RestoreOptions
	if opts != nil {
		o = *opts
	}
	if version == "" {
		return nil, newError(CodeInvalidArgument, p, "version is empty", "list versions with file_history", nil)
	}
	// An unknown version is a bad argument whatever the file's state: say
	// so before any check of the file.
	if t, err := s.w.openTarget(p); err == nil {
		err := s.w.knownVersion(p, t.Resolved, version)
		t.Close()
		if err != nil {
			return nil, err
		}
	}
	return s.mutate(ctx, &change{
		tool: opRestore, path: p, pre: o.Precondition, dryRun: o.DryRun, wholeFile: true, overAbsent: true,
		args: restoreArgs(p, version, &o),
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			v, data, err := s.w.loadVersion(p, t.Resolved, version)
			if err != nil {
				return nil, err
			}
			if err := s.w.checkVersion(p, t.Resolved, v); err != nil {
				return nil, err
			}
			if v.Absent {
				if !obs.Stat.Exists {
					return nil, newError(CodeNoChange, p, "the version records that the file did not exist, and it does not", "", nil)
				}
				return &plan{remove: true, oldText: textOf(obs.Data, enc)}, nil
			}
			if obs.Stat.Exists && obs.Sum == v.SHA256 {
				return nil, newError(CodeNoChange, p, "the file already has this version's content", "", nil)
			}
			return &plan{data: data, oldText: textOf(obs.Data, enc), newText: textOf(data, enc), encoding: enc}, nil
		},
	})
}

// checkVersion refuses a history version whose index entry disagrees with
// the ledger record of the commit that saved it: that record's sha256_before
// (or, for "did not exist", its observed state) is what the commit
// displaced, and the ledger's hash chain protects it where the index has no
// protection of its own. An edited index entry (v2 made to name v3's bytes)
// must not restore the wrong content. Versions no ledger record names
// (bytes rescued from a lock-free writer, a crashed writer's temporary file)
// are restored as their index says.
func (w *Workspace) checkVersion(p, resolved string, v history.Version) error {
	var rec *LedgerRecord
	errFound := errors.New("found")
	// Only lines that hold the version's id are decoded.
	err := ledger.Filter(w.state, ledgerName, ledger.Match{Path: resolved, Mentions: v.ID}, func(r *LedgerRecord) error {
		if r.Outcome == "ok" && r.HistoryVersion == v.ID {
			rec = r
			return errFound
		}
		return nil
	})
	if err != nil && err != errFound {
		return readError("read ledger", err)
	}
	if why := disagreement(v, rec); why != "" {
		return versionMismatch(p, v, why)
	}
	return nil
}

// disagreement says how a history version disagrees with rec, the ledger
// record that names it (nil if none does), or returns "".
func disagreement(v history.Version, rec *LedgerRecord) string {
	switch {
	case v.LedgerSeq != 0 && (rec == nil || rec.Seq != v.LedgerSeq):
		return fmt.Sprintf("it names ledger record %d, which did not save it", v.LedgerSeq)
	case rec != nil && v.Absent && rec.Observed != nil && rec.Observed.Exists:
		return fmt.Sprintf("it says the file did not exist; ledger record %d says it did", rec.Seq)
	case rec != nil && !v.Absent && rec.SHA256Before != v.SHA256:
		return fmt.Sprintf("it names content %.12s; ledger record %d says the commit displaced %.12s", v.SHA256, rec.Seq, rec.SHA256Before)
	}
	return ""
}

func versionMismatch(p string, v history.Version, why string) *Error {
	e := newError(CodeUnsafeState, p, fmt.Sprintf("history version %s does not verify: %s", v.ID, why),
		"the history was changed outside editguard; run editguard verify, and restore another version", nil)
	e.Details["version"] = v.ID
	return e
}
