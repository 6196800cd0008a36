package editguard

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
)

// arriveAsync calls p.arrive in a goroutine and returns a channel closed
// when it returns.
func arriveAsync(p *gatePass) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		p.arrive()
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
	g := &commitGate{wait: time.Hour}
	for i := range 3 {
		mustReturn(t, arriveAsync(g.enter()), fmt.Sprintf("lone commit %d", i))
	}
}

// TestGateWaitsForCommitsInProgress checks that a commit arriving while
// another is in progress waits for it, and that the two go through
// together; and that a commit that leaves without arriving (refused) lets
// the others through.
func TestGateWaitsForCommitsInProgress(t *testing.T) {
	g := &commitGate{wait: time.Hour}
	a, b := g.enter(), g.enter()
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
	g = &commitGate{wait: time.Hour}
	a, b = g.enter(), g.enter()
	da = arriveAsync(a)
	if !blocked(da) {
		t.Fatal("a commit went through while another was in progress")
	}
	b.leave()
	mustReturn(t, da, "a commit whose only companion left")
	if g.lastN != 1 {
		t.Errorf("lastN %d, want 1", g.lastN)
	}
}

// TestGateBatchesWhileCommitsOverlap checks that once a batch had several
// commits, an arrival waits for the batch's time even with no commit in
// progress, and that a batch of one ends that.
func TestGateBatchesWhileCommitsOverlap(t *testing.T) {
	g := &commitGate{wait: 100 * time.Millisecond}
	a, b := g.enter(), g.enter()
	da := arriveAsync(a)
	mustReturn(t, arriveAsync(b), "the second commit")
	mustReturn(t, da, "the first commit")

	start := time.Now()
	c := g.enter()
	c.arrive()
	if waited := time.Since(start); waited < g.wait {
		t.Errorf("an arrival after a batch of 2 went through after %v, want the batch's %v", waited, g.wait)
	}
	g.wait = time.Hour
	mustReturn(t, arriveAsync(g.enter()), "a lone commit after a batch of 1")
}

// TestGateAwaitSwaps checks that a commit's directory fsync waits for the
// swaps of its batch, and only of its batch.
func TestGateAwaitSwaps(t *testing.T) {
	g := &commitGate{wait: time.Hour}
	a, b := g.enter(), g.enter()
	da := arriveAsync(a)
	mustReturn(t, arriveAsync(b), "the second commit")
	mustReturn(t, da, "the first commit")

	// A commit of a later batch is not waited for.
	g.lastN = 1
	later := g.enter()
	mustReturn(t, arriveAsync(later), "a later lone commit")

	a.swapped()
	done := make(chan struct{})
	go func() {
		a.awaitSwaps()
		close(done)
	}()
	if !blocked(done) {
		t.Fatal("the directory fsync did not wait for the batch's other swap")
	}
	b.swapped()
	mustReturn(t, done, "the wait for the batch's swaps")
	// Giving up counts as swapped, and every call is idempotent.
	b.leave()
	b.swapped()
	mustReturn(t, func() chan struct{} { c := make(chan struct{}); go func() { b.awaitSwaps(); close(c) }(); return c }(), "a second wait")
}

// TestConcurrentCommitsShareFsyncs writes files of one directory from
// several sessions at once and counts the fsyncs: every write fsyncs its
// own temporary file, but the directory's and the ledger's fsyncs are
// shared by the commits that go through the gate together.
func TestConcurrentCommitsShareFsyncs(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var commitFsyncs, ledgerFsyncs atomic.Int64
	SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "fsync" {
			commitFsyncs.Add(1)
		}
		return nil
	}, nil, func(op, name string) error {
		if op == "fsync" {
			ledgerFsyncs.Add(1)
		}
		return nil
	})
	const writers, rounds = 8, 10
	ctx := context.Background()
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := w.NewSession(fmt.Sprintf("s%d", i))
			<-start
			for j := range rounds {
				p := fmt.Sprintf("f%d.txt", i)
				if _, err := s.Write(ctx, p, fmt.Sprintf("writer %d round %d\n", i, j), nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	commits := int64(writers * rounds)
	dirFsyncs := commitFsyncs.Load() - commits // one per temporary file
	t.Logf("%d commits: %d directory fsyncs, %d ledger fsyncs", commits, dirFsyncs, ledgerFsyncs.Load())
	if dirFsyncs <= 0 || dirFsyncs > commits/2 {
		t.Errorf("%d directory fsyncs for %d concurrent commits, want at least one and at most half", dirFsyncs, commits)
	}
	if n := ledgerFsyncs.Load(); n <= 0 || n > commits {
		t.Errorf("%d ledger fsyncs for %d concurrent commits (two records each), want at least one and at most one per commit", n, commits)
	}
	for i := range writers {
		got, err := w.NewSession("check").Read(ctx, fmt.Sprintf("f%d.txt", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("writer %d round %d\n", i, rounds-1); got.Content != want {
			t.Errorf("f%d.txt holds %q, want %q", i, got.Content, want)
		}
	}
}
