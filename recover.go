package editguard

// Recovery at Open. A process killed, or a power cut, in the middle of a
// change leaves state behind; Open finishes what it can, in this order,
// before the workspace serves any call (openState):
//
//  1. The ledger's torn final line, if any, is copied to quarantine and
//     cut (ledger.Open); complete lines are never cut.
//  2. History catch-up (engine.Engine.CatchUp, internal/engine/histsync.go): versions a power cut took
//     from history, whose sealed intents carry their bytes or name their
//     object, are saved again, so that every outcome recorded below names
//     a version that exists.
//  3. Intents without an outcome (resolveIntents): each sealed one whose
//     writer is gone gets its outcome, judged from the file.
//  4. Patch transactions a crash interrupted (recoverTransactions): each
//     sealed journal whose files a change may reach is rolled forward if
//     any of its records was written, else back
//     (engine.Engine.RecoverTx, internal/engine/txrecover.go).
//
// What recovery acts on it checks first: an intent only if its seal
// verifies, a journal only if its MAC does, both under the workspace's key
// (trust.go), so state shipped in a repository is never acted upon. Each
// step takes the same locks as a change, and a change recovery makes goes
// to history and the ledger like any other. What it cannot or will not do
// is reported (Recovery) and left for the next Open or for a person.
//
// Two sweeps run outside Open: a leftover temporary file of a crashed
// commit is saved and removed by the next commit of that file
// (engine.Engine.SweepTemp), and displaced files parked during a commit are removed in
// the background and at Close (engine.Engine.SweepParked). A shell command whose
// process is gone is ended by the next BeginCommand (recoverCommands).

import (
	"errors"
	"fmt"
	"slices"

	"github.com/editguard/editguard/internal/engine"
)

// Recovery is what Open found and did before the workspace was ready.
type Recovery struct {
	// LedgerCut is the torn final ledger line Open cut (left by a process
	// killed mid-append), or nil. Its Quarantine names the file in the
	// state directory that keeps the cut bytes.
	LedgerCut *LedgerRecovery `json:"ledger_cut,omitempty"`
	// RolledBack are the patch transactions Open found unfinished and
	// rolled back: each of their files is as it was before the patch, and
	// what the rollback took away is in history.
	RolledBack []string `json:"rolled_back,omitempty"`
	// Warnings are what Open found worth telling a person about the state
	// directory: state it set aside, a state directory git tracks, an
	// intent editguard did not write.
	Warnings []RecoveryNote `json:"warnings,omitempty"`
	// Problems are the interrupted patch transactions Open could not
	// finish: journals it would not act on (UNSAFE_STATE: not MACed by
	// this workspace, damaged, naming a path a change may not reach, or a
	// file changed since the crash), kept for a person, and journals whose
	// recovery failed (IO), which the next Open tries again. Until then
	// their files may be partly changed.
	Problems []RecoveryNote `json:"problems,omitempty"`
}

// A RecoveryNote is one thing recovery reports.
type RecoveryNote struct {
	Code    Code   `json:"code,omitempty"`    // UNSAFE_STATE; IO for a failure the next Open retries; "" for a notice
	Subject string `json:"subject,omitempty"` // the entry, journal or ledger record it is about
	Message string `json:"message"`           // what a person is told
}

// Recovery returns what Open found and did; the caller may keep it.
func (w *Workspace) Recovery() *Recovery {
	r := w.recovery
	r.RolledBack = slices.Clone(r.RolledBack)
	r.Warnings = slices.Clone(r.Warnings)
	r.Problems = slices.Clone(r.Problems)
	return &r
}

// warn adds a warning to the recovery report.
func (w *Workspace) warn(code Code, subject, msg string) {
	w.recovery.Warnings = append(w.recovery.Warnings, RecoveryNote{Code: code, Subject: subject, Message: msg})
}

// problem adds a problem to the recovery report.
func (w *Workspace) problem(code Code, subject, msg string) {
	w.recovery.Problems = append(w.recovery.Problems, RecoveryNote{Code: code, Subject: subject, Message: msg})
}

// recoverAtOpen runs steps 2-4 above, once the ledger is open (step 1).
func (w *Workspace) recoverAtOpen() error {
	w.recovery.LedgerCut = w.led.Recovered()
	w.eng.CatchUp(true)
	w.resolveIntents()
	rolled, err := w.recoverTransactions()
	w.recovery.RolledBack = rolled
	return err
}

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
		if !w.eng.Sealed(in) {
			w.warn(CodeUnsafeState, fmt.Sprint(in.Seq), fmt.Sprintf("ledger record %d is an intent that editguard did not write (its seal does not verify): recovery left %s alone", in.Seq, in.Path))
			continue
		}
		w.resolveIntent(in)
	}
}

// resolveIntent opens the intent in's file as a tool would and has the
// engine judge its outcome from the file (engine.Engine.ResolveIntent).
func (w *Workspace) resolveIntent(in *LedgerRecord) {
	t, err := w.openTarget(in.Path)
	if err != nil {
		return
	}
	defer t.Close()
	w.eng.ResolveIntent(in, t)
}

// recoverTransactions finishes the transactions whose journals a crash left
// in .editguard/tx/, under the locks of their files, rolling each forward
// or back (see engine.Journal), and removes their journals. It runs at Open; it
// returns the ids rolled back. A journal it cannot act on safely is kept
// and reported in Recovery().Problems.
func (w *Workspace) recoverTransactions() ([]string, error) {
	found, err := w.eng.Journals()
	if err != nil {
		return nil, err
	}
	var done []string
	for _, f := range found {
		entry := StateDir + "/" + engine.JournalDir + "/" + f.Name
		unsafe := func(why string) {
			w.problem(CodeUnsafeState, entry, fmt.Sprintf("UNSAFE_STATE: %s %s; nothing it names was touched and it is kept: look at it and the files it names, then remove it", entry, why))
		}
		if f.Journal == nil {
			unsafe(f.Unsafe)
			continue
		}
		id := f.Journal.ID
		rolled, err := w.recoverOne(f.Name, f.Journal)
		var ue *engine.UnsafeJournalError
		switch {
		case errors.As(err, &ue):
			unsafe(ue.Why)
		case err != nil:
			// Kept for the next Open; the workspace stays usable.
			w.problem(CodeIO, id, fmt.Sprintf("transaction %s was interrupted and could not be finished yet: %v", id, txError(err)))
		case rolled:
			done = append(done, id)
		}
	}
	return done, nil
}

// recoverOne finishes the transaction of the journal name
// (engine.Engine.RecoverTx) once its files are open as a change would
// open them. rolled reports a rollback.
func (w *Workspace) recoverOne(name string, j *engine.Journal) (rolled bool, err error) {
	files, err := w.journalTargets(j)
	defer func() {
		for _, t := range files {
			t.Close()
		}
	}()
	if err != nil {
		return false, err
	}
	return w.eng.RecoverTx(name, j, files, opRecover)
}

// journalTargets opens the files the journal j names, in its order, and
// refuses (engine.UnsafeJournalError) one a change may not reach. It
// returns the files opened so far even with an error, for the caller to
// close.
func (w *Workspace) journalTargets(j *engine.Journal) ([]*target, error) {
	var files []*target
	unsafe := func(format string, args ...any) error {
		return &engine.UnsafeJournalError{Why: fmt.Sprintf(format, args...)}
	}
	for _, jf := range j.Files {
		// The same resolution and policy as a tool's change: inside the
		// root, through no symlink, never a protected path.
		t, err := w.openTarget(jf.Path)
		if err != nil {
			return files, unsafe("names %q, which a change may not reach (%v)", jf.Path, err)
		}
		files = append(files, t)
		if t.Resolved != jf.Path {
			return files, unsafe("names %q, which now leads through a symbolic link", jf.Path)
		}
		if err := w.checkChangeable(t); err != nil {
			return files, unsafe("names %q, which policy protects from changes", jf.Path)
		}
	}
	return files, nil
}
