package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard/internal/engine"
)

// TestRollBackRecordFails rolls back, as Open does, a transaction whose
// journal a crash left, while the ledger refuses appends: every file goes
// back all the same, and the journal stays, so that the next recovery
// writes the records and removes it.
func TestRollBackRecordFails(t *testing.T) {
	ctx := context.Background()
	w, dir, s := openAfterRead(t, map[string]string{"a.txt": "a.txt before\n", "b.txt": "b.txt before\n"})
	patch := "*** Begin Patch\n*** Update File: a.txt\n@@\n-a.txt before\n+a.txt after\n*** Update File: b.txt\n@@\n-b.txt before\n+b.txt after\n*** End Patch\n"
	res, err := s.ApplyPatch(ctx, patch, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The journal the patch would have left had it died before its records.
	var files []engine.JournalFile
	w.Log(LogFilter{}, func(r *LedgerRecord) error {
		if r.Strategy == "transaction "+res.TxID {
			files = append(files, engine.JournalFile{Path: r.Path, BeforeExists: true, BeforeSHA256: r.SHA256Before,
				Version: r.HistoryVersion, AfterExists: true, AfterSHA256: r.SHA256After})
		}
		return nil
	})
	if len(files) != 2 {
		t.Fatalf("%d records of the transaction, want 2", len(files))
	}
	j := &engine.Journal{ID: "crashed", Op: opApplyPatch, Session: "s", Files: files}
	j.MAC = w.eng.JournalMAC(j)
	data, _ := json.Marshal(j)
	jpath := filepath.Join(dir, StateDir, engine.JournalDir, "crashed.json")
	if err := os.WriteFile(jpath, data, 0o600); err != nil {
		t.Fatal(err)
	}

	failed := errors.New("no space left")
	SetFaults(w, nil, nil, func(op, name string) error {
		if op == "write" {
			return failed
		}
		return nil
	})
	if r, _ := w.eng.Recover(recoveryOpener{w}, opRecover); len(r.RolledBack) != 0 {
		done := r.RolledBack
		t.Errorf("recovery reported %v done though no record could be written", done)
	}
	for _, n := range []string{"a.txt", "b.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != n+" before\n" {
			t.Errorf("%s holds %q after the rollback, want what it held before", n, b)
		}
	}
	if _, err := os.Stat(jpath); err != nil {
		t.Fatalf("the journal is gone though its records were not written: %v", err)
	}

	SetFaults(w, nil, nil, nil)
	if r, err := w.eng.Recover(recoveryOpener{w}, opRecover); err != nil || len(r.RolledBack) != 1 {
		done := r.RolledBack
		t.Fatalf("second recovery = %v, %v; want the transaction rolled back", done, err)
	}
	if _, err := os.Stat(jpath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the journal is still there after its records were written: %v", err)
	}
	rolled := 0
	w.Log(LogFilter{}, func(r *LedgerRecord) error {
		if r.Strategy == "transaction crashed" && r.ErrorReason == "rolled_back" {
			rolled++
		}
		return nil
	})
	if rolled != 1 {
		t.Errorf("%d rolled_back records of the transaction, want 1", rolled)
	}
}
