package editguard

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/ledger"
)

// LedgerRecord is one ledger entry: a mutation attempt, accepted or refused.
type LedgerRecord = ledger.Record

// LedgerRecovery describes a torn final ledger line cut at Open.
type LedgerRecovery = ledger.Recovery

// attempt collects what the ledger records about one mutation attempt.
type attempt struct {
	rec ledger.Record
	// intent is the record written before the change was made, if any
	// (engine.Engine.WriteIntent).
	intent *engine.Intent
}

func newAttempt(s *Session, tool, path string, args any, pre *Precondition) *attempt {
	a := &attempt{rec: ledger.Record{Session: s.name, Tool: tool, Path: path, Approval: "auto"}}
	if args != nil {
		a.rec.Args, _ = json.Marshal(args)
	}
	if !pre.empty() {
		a.rec.Precondition, _ = json.Marshal(pre)
	}
	return a
}

func ledgerState(fs FileState) *ledger.FileState {
	return &ledger.FileState{Exists: fs.Exists, SHA256: fs.SHA256, Size: fs.Size, MtimeMS: fs.MtimeMS}
}

// finish appends the attempt to the ledger with its outcome and waits for
// the record to be durable: record, then wait. A change whose bytes are in
// place is reported as committed even if the append fails: the result
// carries a warning, and the displaced content is in history.
func (w *Workspace) finish(a *attempt, res *Result, err error) (*Result, error) {
	return w.record(a, res, err).wait()
}

// recorded is an attempt whose ledger record is written but perhaps not yet
// durable.
type recorded struct {
	w    *Workspace
	rec  *ledger.Record
	res  *Result
	err  error
	p    *ledger.Pending
	lerr error
	lazy bool // the record's fsync is not waited for: its intent is durable
}

// recordError sets r's outcome to the error err: its code, reason and
// the error object; an error that is not an *Error is a cancellation.
func recordError(r *LedgerRecord, err error) {
	r.Outcome = "error"
	var e *Error
	if errors.As(err, &e) {
		r.ErrorCode = string(e.Code)
		r.ErrorReason, _ = e.Details["reason"].(string)
		r.Result, _ = json.Marshal(e)
	} else {
		r.ErrorCode = "CANCELED"
		r.Result, _ = json.Marshal(map[string]string{"message": err.Error()})
	}
}

// record writes the attempt's ledger record with its outcome. The caller
// holds the file's lock (internal/engine/locks.go), so records of one file are in the
// order of its changes; it releases the lock and then calls wait, so that
// the fsync is not paid under the lock and is shared with concurrent
// commits.
func (w *Workspace) record(a *attempt, res *Result, err error) *recorded {
	r := &a.rec
	switch {
	case err != nil:
		recordError(r, err)
	case res.DryRun:
		r.Outcome = "dry_run"
	default:
		r.Outcome = "ok"
		r.SHA256After = res.SHA256
		r.Strategy = res.Strategy
		r.HistoryVersion = res.BackupVersion
	}
	if res != nil {
		stored := *res
		stored.Diff = "" // the diff follows from history and is often large
		r.Result, _ = json.Marshal(&stored)
	}
	if a.intent != nil {
		// Seq is cleared if the intent's write failed or was cut, which
		// durable waits to know.
		a.intent.Durable()
		r.Intent = a.intent.Rec.Seq
	}
	rc := &recorded{w: w, rec: r, res: res, err: err}
	// A committed change whose intent is durable is reported without
	// waiting for its outcome's fsync (see wait). A failed attempt waits:
	// its error says that nothing changed, and the intent alone would
	// leave that to be judged from the file.
	rc.lazy = err == nil && r.Outcome == "ok" && a.intent.Durable() && r.Intent != 0
	rc.p, rc.lerr = w.led.Write(r)
	return rc
}

// outcomeSyncDelay is how long a committed change's outcome record waits
// before its own fsync: under load, a later change's intent fsync makes it
// durable first, and then the wait costs nothing.
const outcomeSyncDelay = 100 * time.Millisecond

// alarm cuts short, at once, every sleep on a bell it handed out.
type alarm struct {
	mu sync.Mutex
	ch chan struct{}
}

// bell returns the channel the next ring closes.
func (a *alarm) bell() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = make(chan struct{})
	}
	return a.ch
}

// ring ends the sleeps on every bell handed out so far.
func (a *alarm) ring() {
	a.mu.Lock()
	if a.ch != nil {
		close(a.ch)
		a.ch = nil
	}
	a.mu.Unlock()
}

// sleep returns after d, or once bell is closed.
func sleep(d time.Duration, bell <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-bell:
	}
}

// wait returns the attempt's result once its record is durable, with a
// warning (for a committed change) or a detail (for a failed one) if the
// record could not be made so.
func (rc *recorded) wait() (*Result, error) {
	res, err, lerr := rc.res, rc.err, rc.lerr
	if lerr == nil && rc.lazy {
		// The fsync runs in the background, after outcomeSyncDelay,
		// so that a later commit's intent fsync usually covers it;
		// Close and History hurry it. Should power be cut first, the
		// durable intent accounts for the change, and the next Open
		// appends its outcome (resolveIntents).
		ticket := rc.w.finals.add()
		bell := rc.w.finalsDue.bell()
		go func() {
			defer rc.w.finals.done(ticket)
			sleep(outcomeSyncDelay, bell)
			if rc.p.Wait() == nil && rc.rec.HistoryVersion != "" {
				rc.w.hist.SetLedgerSeq(rc.rec.Path, rc.rec.HistoryVersion, rc.rec.Seq)
			}
		}()
		return res, nil
	}
	if lerr == nil {
		lerr = rc.p.Wait()
		rc.lerr = lerr
	}
	if lerr == nil && rc.rec.HistoryVersion != "" {
		// Links the version to its ledger record; the ledger is the
		// authority, so a failure here loses nothing.
		rc.w.hist.SetLedgerSeq(rc.rec.Path, rc.rec.HistoryVersion, rc.rec.Seq)
	}
	if lerr != nil {
		if err == nil {
			if !res.DryRun {
				res.warn("the change is in place, but appending it to the ledger failed: %v", lerr)
			}
			return res, nil
		}
		// The attempt failed anyway; say that it is not in the ledger either.
		var e *Error
		if errors.As(err, &e) && e.Details != nil {
			e.Details["ledger_error"] = lerr.Error()
		}
		return nil, err
	}
	return res, err
}

func nonEmpty(p *Precondition) *Precondition {
	if p.empty() {
		return nil
	}
	return p
}
