package engine

import (
	"testing"
	"time"
)

// TestRunningWaitsForEarlierWorkOnly checks that Wait returns once the work
// running when it was called ends, though other work started after it
// still runs: under a steady stream of commits, History and Close must not
// wait for a moment when nothing runs.
func TestRunningWaitsForEarlierWorkOnly(t *testing.T) {
	var r Running
	a := r.Add()
	returned := make(chan struct{})
	go func() {
		r.Wait()
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
	b := r.Add()
	select {
	case <-returned:
		t.Fatal("Wait returned while the work before it still ran")
	case <-time.After(20 * time.Millisecond):
	}
	r.Done(a)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait still waits after the work before it ended, for work started after it")
	}
	r.Done(b)
	r.Wait() // nothing runs: returns at once
}
