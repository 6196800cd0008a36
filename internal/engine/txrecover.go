package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/ledger"
)

// Recovery of a transaction whose process died with its journal in
// place: step 7 of recovery at Open (recoverTransactions, recover.go,
// which reads the journals, opens their files as a change would, through
// the root's Opener, and reports what recoverTx did or would not do).

// recoverySession is the session a change made by recovery is recorded
// under.
const recoverySession = "recovery"

// unsafeJournalError is why recoverTx would not act on an authentic
// journal: nothing it names was touched, and it is kept.
type unsafeJournalError struct{ Why string }

func (e *unsafeJournalError) Error() string { return e.Why }

// recoverTx finishes the transaction of the journal name, j, whose files
// are open as targets (in j's order), unless it turns out to be still
// running: it holds the files' locks until its journal is gone, so once
// they are ours a journal still there is one whose process died. If any
// of the transaction's records follows the journal's ledger position,
// every file was in place before the first was written, and it is rolled
// forward; else it is rolled back, each file's change recorded under op.
// rolled reports a rollback. Failures are *PathError where they are a
// file's, and *unsafeJournalError where a file holds neither what the
// transaction found nor what it put there.
func (e *Engine) recoverTx(name string, j *Journal, targets []*Target, op string) (rolled bool, err error) {
	locks, err := e.LockTx(context.Background(), targets)
	if err != nil {
		return false, err
	}
	defer func() {
		for i := len(locks) - 1; i >= 0; i-- {
			locks[i].Unlock()
		}
	}()
	present, err := e.journalPresent(name)
	if err != nil || !present {
		return false, err // gone: it finished while we waited
	}
	recs, _, err := e.cfg.Led.WithStrategy(ledger.Position{Seq: j.LedgerSeq, Hash: j.LedgerHash}, j.strategy())
	if err != nil {
		return false, err
	}
	if len(recs) > 0 {
		return false, e.rollForward(j, recs)
	}
	if err := e.checkRollBack(j, targets); err != nil {
		return false, err
	}
	if err := e.rollBackAtOpen(j, targets, op); err != nil {
		return false, err
	}
	return true, e.removeJournal(j.ID)
}

// LockTx takes the locks a transaction of targets holds: every file's,
// then every commit lock of their directories, each once, in order
// (locks.go). A failure is a *PathError: the first target's for the file
// locks, the directory's target's for a commit lock.
func (e *Engine) LockTx(ctx context.Context, targets []*Target) ([]*filelock.Lock, error) {
	paths := make([]string, len(targets))
	for i, t := range targets {
		paths[i] = t.Resolved
	}
	locks, err := e.LockFiles(ctx, paths...)
	if err != nil {
		return nil, &PathError{Path: targets[0].Path, Err: err}
	}
	dirs, err := dirsInLockOrder(targets)
	if err != nil {
		UnlockAll(locks)
		return nil, err
	}
	for _, d := range dirs {
		l, err := e.lockDir(ctx, d)
		if err != nil {
			UnlockAll(locks)
			return nil, &PathError{Path: d.Path, Err: err}
		}
		locks = append(locks, l)
	}
	return locks, nil
}

// checkRollBack refuses to roll back j when one of its files holds neither
// what the transaction found there nor what it put there: it may have
// been changed since the crash, and a rollback would lose that change.
func (e *Engine) checkRollBack(j *Journal, targets []*Target) error {
	for i, jf := range j.Files {
		obs, err := e.Observe(targets[i])
		if err != nil {
			return &PathError{Path: jf.Path, Err: err}
		}
		if !obs.at(jf.BeforeExists, jf.BeforeSHA256) && !obs.at(jf.AfterExists, jf.AfterSHA256) {
			return &unsafeJournalError{fmt.Sprintf("names %q, which holds neither what the transaction found there nor what it put there (changed since the crash?)", jf.Path)}
		}
	}
	return nil
}

// rollBackAtOpen puts each file of j the transaction changed back as it
// was before (undoFile), recording each in the ledger as a recovered
// change, then records the transaction as interrupted and rolled back. A
// failed record does not stop the rollback: every file goes back first,
// so that no file is left as the transaction left it, and the first such
// error is returned, which keeps the journal for the next Open. A failed
// undo stops it, as the files after it may not be put back.
func (e *Engine) rollBackAtOpen(j *Journal, targets []*Target, op string) error {
	var recErr error
	for i, jf := range j.Files {
		obs, v, err := e.undoFile(targets[i], jf, recoverySession, op)
		if err != nil {
			return &PathError{Path: jf.Path, Err: err}
		}
		if obs == nil {
			continue // the transaction had not reached it
		}
		after := jf.BeforeSHA256
		if !jf.BeforeExists {
			after = ""
		}
		r := &ledger.Record{Session: recoverySession, Tool: op, Path: jf.Path, Args: recoverArgs(j),
			Observed: obs.LedgerState(), SHA256Before: obs.Sum, SHA256After: after, Outcome: "ok",
			Strategy: "rollback " + j.strategy(), HistoryVersion: v, Recovered: true}
		if err := e.cfg.Led.Append(r); err != nil && recErr == nil {
			recErr = err
		}
	}
	if recErr != nil {
		return recErr
	}
	return e.cfg.Led.Append(&ledger.Record{Session: j.Session, Tool: j.Op, Path: j.Files[0].Path, Args: recoverArgs(j),
		Outcome: ledger.OutcomeInterrupted, ErrorReason: "rolled_back", Strategy: j.strategy(), Recovered: true})
}

// recoverArgs is the arguments a record of a recovered transaction shows.
func recoverArgs(j *Journal) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"tx": j.ID, "files": len(j.Files)})
	return b
}

// rollForward finishes a transaction whose records were being written when
// its process died: every file is in place, and each file without a record
// gets one, marked recovered.
func (e *Engine) rollForward(j *Journal, recs []*ledger.Record) error {
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Path] = true
	}
	for _, jf := range j.Files {
		if have[jf.Path] {
			continue
		}
		after := jf.AfterSHA256
		if !jf.AfterExists {
			after = ""
		}
		r := &ledger.Record{Session: j.Session, Tool: j.Op, Path: jf.Path, Args: recoverArgs(j),
			Observed:     &ledger.FileState{Exists: jf.BeforeExists, SHA256: jf.BeforeSHA256},
			SHA256Before: jf.BeforeSHA256, SHA256After: after, Outcome: "ok", Strategy: j.strategy(),
			HistoryVersion: jf.Version, Recovered: true}
		if err := e.cfg.Led.Append(r); err != nil {
			return err
		}
	}
	return e.removeJournal(j.ID)
}
