package editguard

import (
	"testing"
	"time"
)

// TestRunningWaitsForEarlierWorkOnly checks that wait returns once the work
// running when it was called ends, though other work started after it
// still runs: under a steady stream of commits, History and Close must not
// wait for a moment when nothing runs.
func TestRunningWaitsForEarlierWorkOnly(t *testing.T) {
	var r running
	a := r.add()
	returned := make(chan struct{})
	go func() {
		r.wait()
		close(returned)
	}()
	// Let wait begin before the next work starts.
	for {
		r.mu.Lock()
		began := r.changed != nil
		r.mu.Unlock()
		if began {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b := r.add()
	select {
	case <-returned:
		t.Fatal("wait returned while the work before it still ran")
	case <-time.After(20 * time.Millisecond):
	}
	r.done(a)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("wait still waits after the work before it ended, for work started after it")
	}
	r.done(b)
	r.wait() // nothing runs: returns at once
}
