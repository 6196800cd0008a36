package editguard

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/editguard/editguard/internal/atomicfile"
)

// TestDirSyncsShare checks that concurrent directory fsyncs of one
// directory share: while one runs, every caller that arrives joins the
// next, so eight callers cost two fsyncs, and each returns only after an
// fsync that began after it called.
func TestDirSyncsShare(t *testing.T) {
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := atomicfile.NewDir(f)
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
	var s dirSyncs
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- s.sync(d)
	}()
	<-started
	for range n - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.sync(d)
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
	if len(s.m) != 0 {
		t.Errorf("%d directories still tracked after every caller returned", len(s.m))
	}
}
