package editguard_test

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// TestTimingRecorded: a change's record and result say how long it took
// and where the time went; the parts never add up to more than the whole,
// and a lock another holder keeps shows as lock wait, up to the BUSY that
// ends it.
func TestTimingRecorded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", "one\n")
	const timeout = 200 * time.Millisecond
	w, err := editguard.Open(dir, &editguard.Options{LockTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	res, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "one", NewString: "two"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tm := res.Timing
	if tm == nil {
		t.Fatal("the result has no timing")
	}
	plausible(t, "edit", tm)
	if tm.DurableMS <= 0 || tm.CheckMS <= 0 {
		t.Errorf("timing %+v: a committed edit checks and makes durable", tm)
	}

	// Hold a.txt's lock on a descriptor of our own, as another process
	// does (flock belongs to the open file, not to the process): the
	// next edit waits for it until BUSY.
	s0 := sha256.Sum256([]byte("a.txt"))
	lockName := filepath.Join(dir, ".editguard", "locks", fmt.Sprintf("file-%04d.lock", binary.BigEndian.Uint32(s0[:4])%1024))
	f, err := os.OpenFile(lockName, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the file's lock %s: %v", lockName, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "three"}}, nil)
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if !errors.Is(err, editguard.ErrBusy) {
		t.Fatalf("edit while the lock is held: %v, want BUSY", err)
	}

	var recs []*editguard.LedgerRecord
	if err := w.Log(editguard.LogFilter{Path: "a.txt"}, func(r *editguard.LedgerRecord) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Timing == nil || *recs[0].Timing != *tm {
		t.Fatalf("records %+v: want the edit's timing %+v in its record", recs, tm)
	}
	busy := recs[1].Timing
	if recs[1].ErrorCode != "BUSY" || busy == nil {
		t.Fatalf("the BUSY record %+v has no timing", recs[1])
	}
	plausible(t, "BUSY", busy)
	if busy.LockWaitMS < float64(timeout.Milliseconds()) {
		t.Errorf("BUSY after a lock wait of %.3f ms; the timeout is %v", busy.LockWaitMS, timeout)
	}
}

func plausible(t *testing.T, what string, tm *editguard.Timing) {
	t.Helper()
	parts := tm.LockWaitMS + tm.CheckMS + tm.ApprovalMS + tm.DurableMS
	if tm.TotalMS <= 0 || parts > tm.TotalMS+0.002 || tm.LockWaitMS < 0 || tm.CheckMS < 0 || tm.ApprovalMS < 0 || tm.DurableMS < 0 {
		t.Errorf("%s timing %+v: the parts (%.3f ms) exceed the total, or one is negative", what, tm, parts)
	}
}
