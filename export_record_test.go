package editguard

import (
	"encoding/json"
	"path/filepath"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// TempName is the temporary name w uses for a target named name.
func TempName(w *Workspace, name string) string { return w.tempName(name) }

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
	var j journal
	if err := json.Unmarshal(data, &j); err != nil {
		panic(err)
	}
	j.MAC = w.journalMAC(&j)
	b, err := json.Marshal(&j)
	if err != nil {
		panic(err)
	}
	return b
}

// Replayer is the ledger's replay of a session's calls (ledger.go).
type Replayer = replayer

// ReplayDivergence reports a replayed call that differs from the record.
type ReplayDivergence = ledger.DivergenceError

// NewReplayer replays w's ledger, only session's records if session is not
// empty.
func NewReplayer(w *Workspace, session string) (*Replayer, error) { return w.newReplayer(session) }

// LedgerPath returns the path of w's ledger file.
func LedgerPath(w *Workspace) string { return filepath.Join(w.dir, StateDir, ledgerName) }

// SessionBaseline returns s's baseline for the path p, if any.
func SessionBaseline(s *Session, p string) (Baseline, bool, error) { return s.baselineOf(p) }
