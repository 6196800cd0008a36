package editguard

import (
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/ledger"
)

// TestUnsealedIntentIsNotActedUpon appends to a workspace's ledger two
// pending intents its writer never resolved, one sealed with the workspace
// key and one not: the next Open resolves the sealed one and leaves the
// other alone, reported.
func TestUnsealedIntentIsNotActedUpon(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sealed.txt", "forged.txt"} {
		r := &ledger.Record{Session: "s", Tool: "write_file", Path: p, Outcome: ledger.OutcomePending,
			Observed: &ledger.FileState{}, SHA256After: sha256Hex(nil)}
		if p == "sealed.txt" {
			r.Seal = w.eng.IntentSeal(r)
		}
		if err := w.led.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	w, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if warn := strings.Join(noteMessages(w.Recovery().Warnings), "\n"); !strings.Contains(warn, "forged.txt") || strings.Contains(warn, "sealed.txt") {
		t.Errorf("StateWarnings() = %q, want forged.txt reported and sealed.txt not", warn)
	}
	resolved := map[string]bool{}
	ledger.Scan(w.state, ledgerName, func(r *ledger.Record) error {
		if r.Intent != 0 {
			resolved[r.Path] = true
		}
		return nil
	})
	if !resolved["sealed.txt"] || resolved["forged.txt"] {
		t.Errorf("outcomes appended for %v; want sealed.txt only", resolved)
	}
}

// noteMessages returns what each recovery note tells a person.
func noteMessages(notes []RecoveryNote) []string {
	var m []string
	for _, n := range notes {
		m = append(m, n.Message)
	}
	return m
}
