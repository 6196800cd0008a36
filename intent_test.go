//go:build linux

package editguard_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

// TestIntentOfLiveWriterLeftAlone opens a second workspace on the root
// while a commit stands between its intent and its outcome (stopped in the
// directory fsync after its swap). Open must leave that intent to its
// writer, which holds the file's lock: the ledger ends with the writer's
// own outcome and no other.
func TestIntentOfLiveWriterLeftAlone(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	s := w.NewSession("a")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	stopped, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "fsync" && fdPath(c.FD) == dir && once.CompareAndSwap(false, true) {
			close(stopped)
			<-release
		}
		return nil
	}, nil, nil)
	done := make(chan error, 1)
	go func() {
		_, err := s.Write(ctx, "a.txt", "a2\n", nil)
		done <- err
	}()
	<-stopped
	w2, err := editguard.Open(dir, nil)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs := ledgerRecords(t, w2)
	w2.Close()
	if len(recs) != 1 || recs[0].Outcome != "ok" || recs[0].Strategy == "recovered" || recs[0].Intent == 0 {
		t.Fatalf("ledger = %s; want the writer's own ok outcome alone", describe(recs))
	}
}

// TestIntentOfGoneWriterResolved leaves intents without outcomes, as a
// writer killed between the two would (the outcome's write fails), for a
// change that was made and one that was not, and checks what the next
// Open appends for each.
func TestIntentOfGoneWriterResolved(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "made.txt", "old\n")
	writeFile(t, dir, "not.txt", "old\n")
	s := w.NewSession("agent")
	for _, p := range []string{"made.txt", "not.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	// made.txt goes to other content and back first, so that an older
	// version holds the same bytes as the one its last change displaces.
	for _, c := range []string{"mid\n", "old\n"} {
		if _, err := s.Write(ctx, "made.txt", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	// made.txt: the change is made, its outcome record is not written.
	var writes atomic.Int32
	editguard.SetFaults(w, nil, nil, func(op, name string) error {
		if op == "write" && writes.Add(1) == 2 {
			return errFault
		}
		return nil
	})
	if _, err := s.Write(ctx, "made.txt", "new\n", nil); err != nil {
		t.Fatal(err)
	}
	// not.txt: the swap fails, and so does the outcome's write.
	writes.Store(0)
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "renameat2" {
			return errFault
		}
		return nil
	}, nil, func(op, name string) error {
		if op == "write" && writes.Add(1) == 2 {
			return errFault
		}
		return nil
	})
	if _, err := s.Write(ctx, "not.txt", "new\n", nil); err == nil {
		t.Fatal("Write(not.txt) succeeded through a failing swap")
	}
	editguard.SetFaults(w, nil, nil, nil)
	recs := ledgerRecords(t, w)
	recs = recs[len(recs)-2:] // after made.txt's two earlier writes
	if recs[0].Outcome != "pending" || recs[1].Outcome != "pending" {
		t.Fatalf("ledger before Open = %s; want two intents without outcome", describe(recs))
	}
	w.Close()

	w2, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	recs = ledgerRecords(t, w2)
	if len(recs) != 4 {
		t.Fatalf("ledger after Open = %s; want the two earlier writes and the two outcomes", describe(recs))
	}
	recs = recs[2:]
	byPath := map[string]*editguard.LedgerRecord{recs[0].Path: recs[0], recs[1].Path: recs[1]}
	if r := byPath["made.txt"]; r == nil || r.Outcome != "ok" || r.Strategy != "recovered" || r.SHA256After != sha256hex([]byte("new\n")) || r.HistoryVersion == "" {
		t.Errorf("made.txt's outcome = %s; want ok, recovered, the new content and the displaced version", describe([]*editguard.LedgerRecord{r}))
	} else if data, err := editguard.VersionContent(w2, "made.txt", r.HistoryVersion); err != nil || string(data) != "old\n" {
		t.Errorf("version %s = %q, %v; want the displaced content", r.HistoryVersion, data, err)
	} else if vs, err := w2.History("made.txt"); err != nil || len(vs) == 0 || vs[0].ID != r.HistoryVersion {
		t.Errorf("outcome names version %s, want the newest, the one the change displaced (%v, %v)", r.HistoryVersion, vs, err)
	}
	if r := byPath["not.txt"]; r == nil || r.Outcome != "interrupted" || r.ErrorReason != "not_applied" {
		t.Errorf("not.txt's outcome = %s; want interrupted, not_applied", describe([]*editguard.LedgerRecord{r}))
	}
	if _, err := w2.VerifyLedger(); err != nil {
		t.Errorf("VerifyLedger() = %v", err)
	}
	// A third Open finds nothing left to resolve.
	w3, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ledgerRecords(t, w3)); n != 4 {
		t.Errorf("a later Open changed the ledger to %d records", n)
	}
	w3.Close()
}

func describe(recs []*editguard.LedgerRecord) string {
	var b strings.Builder
	for _, r := range recs {
		if r == nil {
			b.WriteString("<none> ")
			continue
		}
		b.WriteString(r.Path + ":" + r.Outcome + "/" + r.ErrorReason + "/" + r.Strategy + " ")
	}
	return b.String()
}

var errFault = errors.New("injected fault")
