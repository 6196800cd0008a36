package editguard

// Recovery at Open: before the workspace serves any call (openState), the
// ledger's torn final line, if any, is copied to quarantine and cut
// (ledger.Open; complete lines are never cut), then the engine finishes
// what a crash left (engine.Engine.Recover, internal/engine/recover.go:
// the history's catch-up, intents without an outcome, interrupted
// transactions), opening each file as a change would (recoveryOpener).
// What it will not or cannot do is reported in Recovery. A shell command
// whose process is gone is ended by the next BeginCommand
// (recoverCommands).

import (
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

// recoverAtOpen runs recovery once the ledger is open.
func (w *Workspace) recoverAtOpen() error {
	w.recovery.LedgerCut = w.led.Recovered()
	r, err := w.eng.Recover(recoveryOpener{w}, opRecover)
	w.recovery.RolledBack = r.RolledBack
	for _, n := range r.Notes {
		switch n.Kind {
		case engine.Foreign:
			w.warn(CodeUnsafeState, n.Subject, n.Why)
		case engine.Unsafe:
			entry := StateDir + "/" + n.Subject
			w.problem(CodeUnsafeState, entry, fmt.Sprintf("UNSAFE_STATE: %s %s; nothing it names was touched and it is kept: look at it and the files it names, then remove it", entry, n.Why))
		case engine.Retry:
			// Kept for the next Open; the workspace stays usable.
			w.problem(CodeIO, n.Subject, fmt.Sprintf("transaction %s was interrupted and could not be finished yet: %v", n.Subject, txError(n.Err)))
		}
	}
	return err
}

// recoveryOpener opens the files recovery acts on with the resolution
// and the policy of a tool's change.
type recoveryOpener struct{ w *Workspace }

func (o recoveryOpener) OpenTarget(p string) (*target, error) { return o.w.openTarget(p) }
func (o recoveryOpener) Changeable(t *target) error           { return o.w.checkChangeable(t) }
