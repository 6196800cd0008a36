package editguard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/ledger"
)

// TestMoveRefusedAtRenameResolvesBothIntents fails a move at its rename,
// after both names' intents are durable: nothing moves, and each intent
// has its outcome, an error, at once; none is left pending for an Open
// to judge.
func TestMoveRefusedAtRenameResolvesBothIntents(t *testing.T) {
	ctx := context.Background()
	w, dir, s := openAfterRead(t, map[string]string{"a.txt": "alpha\n"})
	setFaults(w, func(c *atomicfile.Call) error {
		if (c.Op == "renameat2" || c.Op == "renameat") && c.Name == "a.txt" {
			return errors.New("injected")
		}
		return nil
	}, nil, nil)
	if _, err := s.Move(ctx, "a.txt", "b.txt", nil); err == nil {
		t.Fatal("the move succeeded despite its failed rename")
	}
	setFaults(w, nil, nil, nil)
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "alpha\n" {
		t.Fatalf("a.txt holds %q after the refused move", got)
	}
	intents, outcomes := map[uint64]string{}, map[uint64]string{}
	ledger.Scan(w.state, ledgerName, func(r *LedgerRecord) error {
		switch {
		case r.Outcome == ledger.OutcomePending:
			intents[r.Seq] = r.Path
		case r.Intent != 0:
			outcomes[r.Intent] = r.Outcome
		}
		return nil
	})
	if len(intents) != 2 {
		t.Fatalf("%d intents of the move, want 2 (source and destination)", len(intents))
	}
	for seq, p := range intents {
		if outcomes[seq] != "error" {
			t.Errorf("the intent for %s (seq %d) has outcome %q, want error", p, seq, outcomes[seq])
		}
	}
	if open, err := w.led.Unresolved(0); err != nil || len(open) != 0 {
		t.Errorf("unresolved intents after the move: %d, %v", len(open), err)
	}
}

// openAfterRead writes files (name to content) into a new directory, opens
// a workspace there, closed when the test ends, and reads each file in a
// session "s".
func openAfterRead(t *testing.T, files map[string]string) (*Workspace, string, *Session) {
	t.Helper()
	dir := t.TempDir()
	for n, content := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	s := w.NewSession("s")
	for n := range files {
		if _, err := s.Read(context.Background(), n, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w, dir, s
}

// TestMoveVersionsNotSavedAgain reopens a workspace after moves whose
// intents say what they displaced (a destination that did not exist, an
// empty source): the catch-up at Open finds the versions the moves saved
// before their intents, and saves none again.
func TestMoveVersionsNotSavedAgain(t *testing.T) {
	ctx := context.Background()
	w, dir, s := openAfterRead(t, map[string]string{"a.txt": "alpha\n", "empty.txt": ""})
	for _, m := range [][2]string{{"a.txt", "b.txt"}, {"empty.txt", "moved.txt"}} {
		if _, err := s.Move(ctx, m[0], m[1], nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"a.txt", "b.txt", "empty.txt", "moved.txt"} {
		if vs, err := w.History(p); err != nil || len(vs) != 1 {
			t.Errorf("%s: %d versions in history after a reopen (%v), want the move's one: %+v", p, len(vs), err, vs)
		}
	}
}
