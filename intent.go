package editguard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// A change's intent is in the ledger, durably, before the change is made,
// and its outcome record follows without waiting for its own fsync (see
// writeIntent). A power cut can therefore leave an intent without an
// outcome; so can a writer killed between the two. Open looks for such
// intents near the end of the ledger and appends their outcomes, judged
// from the file: "ok" if it holds what the intent said the change would
// leave, "interrupted" if not (reason "not_applied" if it holds what the
// change would have displaced, "unknown" if neither).

// intentLockWait is how long Open waits for the file lock of an intent's
// file: a writer that holds it is alive and will record the outcome itself.
const intentLockWait = time.Millisecond

// resolveIntents appends an outcome for each intent near the end of the
// ledger that has none and whose writer is gone. It is best effort: an
// intent it cannot resolve now stays in the ledger, still naming the
// change, for the next Open.
func (w *Workspace) resolveIntents() {
	open, err := w.led.Unresolved(0)
	if err != nil {
		return
	}
	for _, in := range open {
		if !w.sealed(in) {
			w.warnings = append(w.warnings, fmt.Sprintf("ledger record %d is an intent that editguard did not write (its seal does not verify): recovery left %s alone", in.Seq, in.Path))
			continue
		}
		w.resolveIntent(in)
	}
}

// intentSeal is the MAC, under the workspace key, of what recovery reads
// from the intent r: its file, the contents it names and the bytes it
// carries.
func (w *Workspace) intentSeal(r *LedgerRecord) string {
	return w.mac("intent", sealFields(r))
}

// sealed reports whether the intent r was written by this workspace: only
// then does recovery act on it.
func (w *Workspace) sealed(r *LedgerRecord) bool {
	return r.Seal != "" && w.macValid(r.Seal, "intent", sealFields(r))
}

func sealFields(r *LedgerRecord) []byte {
	var obs string
	if r.Observed != nil {
		obs = fmt.Sprintf("%t %s %d", r.Observed.Exists, r.Observed.SHA256, r.Observed.Size)
	}
	carried := sha256.Sum256(r.Displaced)
	b, _ := json.Marshal([]string{r.Tool, r.Session, r.Path, r.SHA256Before, r.SHA256After, obs,
		hex.EncodeToString(carried[:]), fmt.Sprint(r.DisplacedObject), r.Strategy})
	return b
}

func (w *Workspace) resolveIntent(in *LedgerRecord) {
	t, err := w.openTarget(in.Path)
	if err != nil {
		return
	}
	defer t.close()
	ctx, cancel := context.WithTimeout(context.Background(), intentLockWait)
	defer cancel()
	locks, err := w.lockFiles(ctx, t.resolved)
	if err != nil {
		return // its writer is at work
	}
	defer unlockAll(locks)
	// Under the lock the writer, if it finished, has written the outcome.
	open, err := w.led.Unresolved(0)
	if err != nil || !slices.ContainsFunc(open, func(r *LedgerRecord) bool { return r.Seq == in.Seq }) {
		return
	}
	obs, err := w.observe(t)
	if err != nil {
		return
	}
	if in.Observed != nil && in.Observed.Size >= linkMin && obs.stat.Exists {
		// The change may have linked the file into history and been cut
		// off before its swap: the object must not stay a name of the
		// file (held.go). Cut off after it, the change may have left the
		// file it displaced under its temporary name, which is also the
		// linked object; sweeping it keeps the object history's alone.
		w.hist.Detach(t.resolved, obs.stat.Dev, obs.stat.Ino, in.SHA256Before, obs.sum, obs.data)
		w.sweepTemp(t, in.Session)
	}
	r := &LedgerRecord{
		Session: in.Session, Tool: in.Tool, Path: in.Path, Observed: ledgerState(obs.state()),
		SHA256Before: in.SHA256Before, Strategy: "recovered", Intent: in.Seq, Recovered: true,
	}
	var applied bool
	if in.SHA256After == "" {
		applied = !obs.stat.Exists // a removal
	} else {
		applied = obs.stat.Exists && obs.sum == in.SHA256After
	}
	switch {
	case applied:
		// What the change displaced is what its intent observed; the
		// file now holds what it left.
		r.Outcome, r.SHA256After, r.Observed = "ok", in.SHA256After, in.Observed
		r.HistoryVersion = w.displacedVersion(in)
	case in.Observed != nil && in.Observed.Exists == obs.stat.Exists && (!obs.stat.Exists || in.Observed.SHA256 == obs.sum):
		r.Outcome, r.ErrorReason = ledger.OutcomeInterrupted, "not_applied"
	default:
		r.Outcome, r.ErrorReason = ledger.OutcomeInterrupted, "unknown"
	}
	w.led.Append(r)
}

// displacedVersion returns the newest history version of in's file that
// holds what in's change displaced, saved by in's session: the commit made
// it durable before the change, so a change that was made has one.
func (w *Workspace) displacedVersion(in *LedgerRecord) string {
	if in.Observed == nil {
		return ""
	}
	v, ok, err := w.hist.Newest(in.Path, func(v history.Version) bool {
		same := v.Absent == !in.Observed.Exists && (v.Absent || v.SHA256 == in.SHA256Before)
		return same && v.Session == in.Session && v.Op == in.Tool && !v.Time.Before(in.Time.Add(-time.Minute))
	})
	if err != nil || !ok {
		return ""
	}
	return v.ID
}
