package groupcommit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
)

// arriveAsync calls p.Arrive in a goroutine and returns a channel closed
// when it returns.
func arriveAsync(p *Pass) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		p.Arrive()
		close(done)
	}()
	return done
}

// blocked reports whether done stays open for a while: the call it stands
// for is waiting. It can only err towards false, when the machine is slow
// to run the goroutine, which fails no test wrongly.
func blocked(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	case <-time.After(50 * time.Millisecond):
		return true
	}
}

func mustReturn(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still waiting after 10 s", what)
	}
}

// TestGateLoneCommitPasses checks that a commit with no other in progress
// goes through at once, however long a batch would wait.
func TestGateLoneCommitPasses(t *testing.T) {
	g := &Gate{Wait: time.Hour}
	for i := range 3 {
		mustReturn(t, arriveAsync(g.Enter()), fmt.Sprintf("lone commit %d", i))
	}
}

// TestGateWaitsForCommitsInProgress checks that a commit arriving while
// another is in progress waits for it, and that the two go through
// together; and that a commit that leaves without arriving (refused) lets
// the others through.
func TestGateWaitsForCommitsInProgress(t *testing.T) {
	g := &Gate{Wait: time.Hour}
	a, b := g.Enter(), g.Enter()
	da := arriveAsync(a)
	if !blocked(da) {
		t.Fatal("a commit went through while another was in progress")
	}
	mustReturn(t, arriveAsync(b), "the second commit")
	mustReturn(t, da, "the first commit, once the second arrived")
	if a.batch == nil || a.batch != b.batch || g.lastN != 2 {
		t.Errorf("the two commits did not go through as one batch of 2 (lastN %d)", g.lastN)
	}

	// The last batch had two: arrivals now wait for the batch's time,
	// here until a commit in progress leaves.
	g = &Gate{Wait: time.Hour}
	a, b = g.Enter(), g.Enter()
	da = arriveAsync(a)
	if !blocked(da) {
		t.Fatal("a commit went through while another was in progress")
	}
	b.Leave()
	mustReturn(t, da, "a commit whose only companion left")
	if g.lastN != 1 {
		t.Errorf("lastN %d, want 1", g.lastN)
	}
}

// TestGateBatchesWhileCommitsOverlap checks that once a batch had several
// commits, an arrival waits for the batch's time even with no commit in
// progress, and that a batch of one ends that.
func TestGateBatchesWhileCommitsOverlap(t *testing.T) {
	g := &Gate{Wait: 100 * time.Millisecond}
	a, b := g.Enter(), g.Enter()
	da := arriveAsync(a)
	mustReturn(t, arriveAsync(b), "the second commit")
	mustReturn(t, da, "the first commit")

	start := time.Now()
	c := g.Enter()
	c.Arrive()
	if waited := time.Since(start); waited < g.Wait {
		t.Errorf("an arrival after a batch of 2 went through after %v, want the batch's %v", waited, g.Wait)
	}
	g.Wait = time.Hour
	mustReturn(t, arriveAsync(g.Enter()), "a lone commit after a batch of 1")
}

// TestGateAwaitSwaps checks that a commit's directory fsync waits for the
// swaps of its batch, and only of its batch.
func TestGateAwaitSwaps(t *testing.T) {
	g := &Gate{Wait: time.Hour}
	a, b := g.Enter(), g.Enter()
	da := arriveAsync(a)
	mustReturn(t, arriveAsync(b), "the second commit")
	mustReturn(t, da, "the first commit")

	// A commit of a later batch is not waited for.
	g.lastN = 1
	later := g.Enter()
	mustReturn(t, arriveAsync(later), "a later lone commit")

	a.Swapped()
	done := make(chan struct{})
	go func() {
		a.AwaitSwaps()
		close(done)
	}()
	if !blocked(done) {
		t.Fatal("the directory fsync did not wait for the batch's other swap")
	}
	b.Swapped()
	mustReturn(t, done, "the wait for the batch's swaps")
	// Giving up counts as swapped, and every call is idempotent.
	b.Leave()
	b.Swapped()
	mustReturn(t, func() chan struct{} { c := make(chan struct{}); go func() { b.AwaitSwaps(); close(c) }(); return c }(), "a second wait")
}

// TestSyncTemp checks that the commits of a batch share one syncfs, that
// a lone commit gets none, and that with more dirty data on the machine
// than MaxDirty each commit of a batch is left to its own fsync.
func TestSyncTemp(t *testing.T) {
	d, _ := tempDir(t)
	if !d.SyncFSStandsIn() {
		t.Skip("a syncfs may not stand in for an fsync here")
	}
	var syncfs atomic.Int32
	d.SetHook(func(c *atomicfile.Call) error {
		if c.Op == "syncfs" {
			syncfs.Add(1)
		}
		return nil
	})
	for _, tc := range []struct {
		name     string
		maxDirty int64
		shared   bool
		calls    int32
	}{
		{"few dirty", 1 << 62, true, 1},
		{"too much dirty", -1, false, 0},
	} {
		syncfs.Store(0)
		g := &Gate{Wait: time.Hour, MaxDirty: tc.maxDirty}
		a, b := g.Enter(), g.Enter()
		da := arriveAsync(a)
		mustReturn(t, arriveAsync(b), tc.name+": the second commit")
		mustReturn(t, da, tc.name+": the first commit")
		var wg sync.WaitGroup
		for _, p := range []*Pass{a, b} {
			wg.Go(func() {
				shared, err := p.SyncTemp(d)
				if shared != tc.shared || err != nil {
					t.Errorf("%s: SyncTemp = %v, %v; want %v, nil", tc.name, shared, err, tc.shared)
				}
			})
		}
		wg.Wait()
		if got := syncfs.Load(); got != tc.calls {
			t.Errorf("%s: %d syncfs for a batch of two, want %d", tc.name, got, tc.calls)
		}
	}
	lone := (&Gate{}).Enter()
	lone.Arrive()
	if shared, _ := lone.SyncTemp(d); shared {
		t.Error("a lone commit shared a syncfs")
	}
}

// TestDirtyBytes checks that the machine's dirty data can be read where
// a batch may share a syncfs.
func TestDirtyBytes(t *testing.T) {
	if !atomicfile.FileSystemSync {
		t.Skip("no syncfs(2) here")
	}
	if n, ok := dirtyBytes(); !ok || n < 0 {
		t.Errorf("dirtyBytes() = %d, %v", n, ok)
	}
}
