package engine

import (
	"context"
	"slices"
	"time"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// resolveIntent appends the outcome of the sealed intent in, whose file is
// t, if it still has none and its writer is gone, judged from the file:
// "ok" if the file holds what the change would leave, "interrupted" if not
// (reason "not_applied" if it holds what the change would have displaced,
// "unknown" if neither). It is best effort: a writer still at work (it
// holds the file's lock past intentLockWait) or a failure leaves the
// intent for the next Open.
func (e *Engine) resolveIntent(in *ledger.Record, t *Target) {
	ctx, cancel := context.WithTimeout(context.Background(), intentLockWait)
	defer cancel()
	locks, err := e.LockFiles(ctx, t.Resolved)
	if err != nil {
		return // its writer is at work
	}
	defer UnlockAll(locks)
	// Under the lock the writer, if it finished, has written the outcome.
	open, err := e.cfg.Led.Unresolved(0)
	if err != nil || !slices.ContainsFunc(open, func(r *ledger.Record) bool { return r.Seq == in.Seq }) {
		return
	}
	obs, err := e.Observe(t)
	if err != nil {
		return
	}
	if in.Observed != nil && in.Observed.Size >= LinkMin && obs.Stat.Exists {
		// The change may have linked the file into history and been cut
		// off before its swap: the object must not stay a name of the
		// file (held.go). Cut off after it, the change may have left the
		// file it displaced under its temporary name, which is also the
		// linked object; sweeping it keeps the object history's alone.
		e.cfg.Hist.Detach(t.Resolved, obs.Stat.Dev, obs.Stat.Ino, in.SHA256Before, obs.Sum, obs.Data)
		e.sweepTemp(t, in.Session)
	}
	e.cfg.Led.Append(e.judged(in, obs))
}

// judged is the outcome record of the intent in, whose file obs shows.
func (e *Engine) judged(in *ledger.Record, obs *Observation) *ledger.Record {
	r := &ledger.Record{
		Session: in.Session, Tool: in.Tool, Path: in.Path, Observed: obs.LedgerState(),
		SHA256Before: in.SHA256Before, Strategy: "recovered", Intent: in.Seq, Recovered: true,
	}
	var applied bool
	if in.SHA256After == "" {
		applied = !obs.Stat.Exists // a removal
	} else {
		applied = obs.Stat.Exists && obs.Sum == in.SHA256After
	}
	switch {
	case applied:
		// What the change displaced is what its intent observed; the
		// file now holds what it left.
		r.Outcome, r.SHA256After, r.Observed = "ok", in.SHA256After, in.Observed
		r.HistoryVersion = e.displacedVersion(in)
	case in.Observed != nil && in.Observed.Exists == obs.Stat.Exists && (!obs.Stat.Exists || in.Observed.SHA256 == obs.Sum):
		r.Outcome, r.ErrorReason = ledger.OutcomeInterrupted, "not_applied"
	default:
		r.Outcome, r.ErrorReason = ledger.OutcomeInterrupted, "unknown"
	}
	return r
}

// displacedVersion returns the newest history version of in's file that
// holds what in's change displaced, saved by in's session: the commit made
// it durable before the change, so a change that was made has one.
func (e *Engine) displacedVersion(in *ledger.Record) string {
	if in.Observed == nil {
		return ""
	}
	v, ok, err := e.cfg.Hist.Newest(in.Path, func(v history.Version) bool {
		same := v.Absent == !in.Observed.Exists && (v.Absent || v.SHA256 == in.SHA256Before)
		return same && v.Session == in.Session && v.Op == in.Tool && !v.Time.Before(in.Time.Add(-time.Minute))
	})
	if err != nil || !ok {
		return ""
	}
	return v.ID
}
