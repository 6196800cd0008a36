package groupcommit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/editguard/editguard/internal/atomicfile"
)

// tempDir opens a new temporary directory as an atomicfile.Dir, closed
// when the test ends, and returns it with its path.
func tempDir(t *testing.T) (*atomicfile.Dir, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return atomicfile.NewDir(f), dir
}

// TestDirSyncsShare checks that concurrent directory fsyncs of one
// directory share: while one runs, every caller that arrives joins the
// next, so eight callers cost two fsyncs, and each returns only after an
// fsync that began after it called.
func TestDirSyncsShare(t *testing.T) {
	d, _ := tempDir(t)
	var (
		fsyncs  atomic.Int32
		release = make(chan struct{})
		started = make(chan struct{})
	)
	d.SetHook(func(c *atomicfile.Call) error {
		if c.Op == "fsync" && fsyncs.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	})
	var s DirSyncs
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- s.Sync(d, 0)
	}()
	<-started
	for range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Sync(d, 0)
		}()
	}
	// Wait until all seven have joined the round after the running one.
	for {
		s.mu.Lock()
		refs := 0
		for _, ds := range s.m {
			refs = ds.refs
		}
		s.mu.Unlock()
		if refs == n {
			break
		}
		runtime.Gosched()
	}
	if got := fsyncs.Load(); got != 1 {
		t.Fatalf("%d fsyncs before the first was released, want 1", got)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := fsyncs.Load(); got != 2 {
		t.Errorf("%d fsyncs for %d callers, want 2: the one running and one shared by the rest", got, n)
	}
	for _, ds := range s.m {
		if ds.refs != 0 || ds.running != nil || ds.next != nil {
			t.Errorf("after every caller returned: refs %d, running %v, next %v", ds.refs, ds.running, ds.next)
		}
	}
}

// TestDirSyncsCoverSwaps checks the numbering of swaps: a swap numbered
// before a successful fsync started needs no other, one numbered after
// needs its own, and a failed fsync covers nothing.
func TestDirSyncsCoverSwaps(t *testing.T) {
	d, _ := tempDir(t)
	var (
		fsyncs atomic.Int32
		fail   atomic.Bool
	)
	d.SetHook(func(c *atomicfile.Call) error {
		if c.Op == "fsync" {
			fsyncs.Add(1)
			if fail.Load() {
				return errors.New("injected")
			}
		}
		return nil
	})
	var s DirSyncs
	a, b := s.Swapped(), s.Swapped()
	if err := s.Sync(d, a); err != nil || fsyncs.Load() != 1 {
		t.Fatalf("first sync: %v, %d fsyncs", err, fsyncs.Load())
	}
	if err := s.Sync(d, b); err != nil || fsyncs.Load() != 1 {
		t.Errorf("a swap made before the fsync started: %v, %d fsyncs, want none more", err, fsyncs.Load())
	}
	c := s.Swapped()
	if err := s.Sync(d, c); err != nil || fsyncs.Load() != 2 {
		t.Errorf("a swap made after it: %v, %d fsyncs, want a second", err, fsyncs.Load())
	}
	if err := s.Sync(d, 0); err != nil || fsyncs.Load() != 3 {
		t.Errorf("no swap number: %v, %d fsyncs, want a third", err, fsyncs.Load())
	}
	fail.Store(true)
	e, g := s.Swapped(), s.Swapped()
	if err := s.Sync(d, e); err == nil {
		t.Error("a failed fsync reported no error")
	}
	fail.Store(false)
	if err := s.Sync(d, g); err != nil || fsyncs.Load() != 5 {
		t.Errorf("after a failed fsync: %v, %d fsyncs, want a fifth: a failed one covers nothing", err, fsyncs.Load())
	}
}

// TestDirSyncsConcurrentSwaps runs many callers that each rename a file in
// the directory and then sync it, and checks from the order of events that
// an fsync started between each caller's rename and its return (that the
// caller waits for that fsync to end is TestDirSyncsShare's).
func TestDirSyncsConcurrentSwaps(t *testing.T) {
	d, dir := tempDir(t)
	var (
		mu     sync.Mutex
		clock  int
		starts []int // event times of fsync starts
	)
	tick := func() int {
		mu.Lock()
		defer mu.Unlock()
		clock++
		return clock
	}
	d.SetHook(func(c *atomicfile.Call) error {
		if c.Op == "fsync" {
			mu.Lock()
			clock++
			starts = append(starts, clock)
			mu.Unlock()
		}
		return nil
	})
	var s DirSyncs
	const callers, rounds = 8, 40
	type span struct{ renamed, returned int }
	var (
		wg    sync.WaitGroup
		spans = make(chan span, callers*rounds)
	)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range rounds {
				name := fmt.Sprintf("f%d-%d", i, j)
				if err := os.WriteFile(filepath.Join(dir, name+".tmp"), nil, 0o644); err != nil {
					t.Error(err)
					return
				}
				if err := os.Rename(filepath.Join(dir, name+".tmp"), filepath.Join(dir, name)); err != nil {
					t.Error(err)
					return
				}
				sp := span{renamed: tick()}
				if err := s.Sync(d, s.Swapped()); err != nil {
					t.Error(err)
					return
				}
				sp.returned = tick()
				spans <- sp
			}
		}()
	}
	wg.Wait()
	close(spans)
	n := 0
	for sp := range spans {
		n++
		ok := false
		mu.Lock()
		for _, st := range starts {
			if st > sp.renamed && st < sp.returned {
				ok = true
				break
			}
		}
		mu.Unlock()
		if !ok {
			t.Errorf("a caller renamed at %d and returned at %d with no fsync started in between", sp.renamed, sp.returned)
		}
	}
	if n != callers*rounds {
		t.Fatalf("%d syncs returned, want %d", n, callers*rounds)
	}
	t.Logf("%d fsyncs for %d syncs", len(starts), n)
}
