package editguard

import (
	"bytes"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/ledger"
)

// TestOutcomesRideOnTheNextIntent checks that the outcome records of
// one session's changes in a row cost no fsync of their own: each waits
// outcomeSyncDelay, and the next change's intent fsync covers it first.
func TestOutcomesRideOnTheNextIntent(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var fsyncs atomic.Int64
	SetFaults(w, nil, nil, func(op, name string) error {
		if op == "fsync" {
			fsyncs.Add(1)
		}
		return nil
	})
	s := w.NewSession("agent")
	const n = 10
	for i := range n {
		if _, err := s.Write(t.Context(), "a.txt", fmt.Sprintf("v%d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// n intents, and Close's fsync of the last outcome.
	if got := fsyncs.Load(); got > n+2 {
		t.Errorf("%d ledger fsyncs for %d changes in a row, want at most %d", got, n, n+2)
	}
	b, err := os.ReadFile(w.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(b, []byte("\n")); got != 2*n {
		t.Errorf("%d ledger records, want %d: an intent and an outcome per change", got, 2*n)
	}
}

// TestCatchUpSoonerAfterManyBytes checks that a catch-up falls due before
// catchUpDelay once enough displaced bytes were saved lazily.
func TestCatchUpSoonerAfterManyBytes(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.hsync.dueBytes = 10
	s := w.NewSession("agent")
	for i := range 4 {
		if _, err := s.Write(t.Context(), "a.txt", fmt.Sprintf("version %d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	_, last, _, err := w.led.Since(ledger.Position{})
	if err != nil {
		t.Fatal(err)
	}
	want := last.Seq
	deadline := time.Now().Add(catchUpDelay / 2)
	for {
		seq, _, _, _ := w.hist.Synced()
		if seq >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history's mark at %d after %v, want %d: the catch-up waited for its delay", seq, catchUpDelay/2, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
