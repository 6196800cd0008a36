package editguard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
)

// TestConcurrentCommitsShareFsyncs writes files of one directory from
// several sessions at once and counts the sync calls: the commits that go
// through the gate together share one syncfs for their new contents, one
// directory fsync and one ledger fsync, so that there is less than one
// sync call per commit where each alone would make three.
func TestConcurrentCommitsShareFsyncs(t *testing.T) {
	dir := t.TempDir()
	shares := sharesSyncFS(t, dir)
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var commitFsyncs, syncfs, ledgerFsyncs atomic.Int64
	// Batches collect arrivals for longer than a busy machine takes to
	// bring the other writers' commits to the gate, so that they form
	// whatever the load.
	w.gate.Wait = 100 * time.Millisecond
	w.gate.MaxDirty = 1 << 62 // whatever else the machine writes
	SetFaults(w, func(c *atomicfile.Call) error {
		switch c.Op {
		case "fsync":
			commitFsyncs.Add(1)
		case "syncfs":
			syncfs.Add(1)
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
	all := commitFsyncs.Load() + syncfs.Load() + ledgerFsyncs.Load()
	t.Logf("%d commits: %d fsyncs of files and directories, %d syncfs, %d ledger fsyncs", commits, commitFsyncs.Load(), syncfs.Load(), ledgerFsyncs.Load())
	if shares && syncfs.Load() == 0 {
		t.Errorf("no syncfs for %d concurrent commits: no batch shared its new contents' flush", commits)
	}
	if n := ledgerFsyncs.Load(); n <= 0 || n > commits {
		t.Errorf("%d ledger fsyncs for %d concurrent commits (two records each), want at least one and at most one per commit", n, commits)
	}
	if shares && all > commits {
		t.Errorf("%d sync calls for %d concurrent commits, want at most one per commit", all, commits)
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

// TestBatchSyncFSFails fails every syncfs while sessions write files of
// one directory at once: each commit of a batch that shared one fails as
// a failed fsync fails it, with the file left as it was and no temporary
// file left behind, and a commit that went through alone is unaffected.
func TestBatchSyncFSFails(t *testing.T) {
	dir := t.TempDir()
	if !sharesSyncFS(t, dir) {
		t.Skip("a syncfs may not stand in for an fsync here: batches fsync each file")
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.gate.Wait = 100 * time.Millisecond // batches form whatever the load
	w.gate.MaxDirty = 1 << 62            // and share a syncfs whatever else the machine writes
	var syncfs atomic.Int64
	SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "syncfs" {
			syncfs.Add(1)
			return syscall.EIO
		}
		return nil
	}, nil, nil)
	const writers = 8
	ctx := context.Background()
	failed := 0
	for round := 0; syncfs.Load() == 0 && round < 50; round++ {
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  [writers]error
		)
		for i := range writers {
			p := fmt.Sprintf("f%d.txt", i)
			old := fmt.Sprintf("writer %d before round %d\n", i, round)
			if err := os.WriteFile(filepath.Join(dir, p), []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				s := w.NewSession(fmt.Sprintf("s%d-%d", i, round))
				if _, err := s.Read(ctx, p, nil); err != nil {
					errs[i] = err
					return
				}
				<-start
				_, errs[i] = s.Write(ctx, p, fmt.Sprintf("writer %d round %d\n", i, round), nil)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			p := fmt.Sprintf("f%d.txt", i)
			b, rerr := os.ReadFile(filepath.Join(dir, p))
			if rerr != nil {
				t.Fatal(rerr)
			}
			want := fmt.Sprintf("writer %d round %d\n", i, round)
			if err != nil {
				failed++
				var e *Error
				if !errors.As(err, &e) || e.Code != CodeIO {
					t.Errorf("round %d: %s failed with %v, want an IO error", round, p, err)
				}
				want = fmt.Sprintf("writer %d before round %d\n", i, round)
			}
			if string(b) != want {
				t.Errorf("round %d: %s holds %q, want %q (write error: %v)", round, p, b, want, err)
			}
		}
	}
	if syncfs.Load() == 0 {
		t.Skip("no batch formed in 50 rounds: the machine ran the writers one at a time")
	}
	t.Logf("%d failed syncfs calls, %d commits failed", syncfs.Load(), failed)
	if failed == 0 {
		t.Errorf("%d failed syncfs calls, but every commit succeeded", syncfs.Load())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if atomicfile.IsTemp(e.Name()) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	// Alone, a commit fsyncs its own file.
	s := w.NewSession("after")
	if _, err := s.Read(ctx, "f0.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "f0.txt", "after\n", nil); err != nil {
		t.Errorf("a lone write after the failed batches: %v", err)
	}
}

// sharesSyncFS reports whether a batch's commits in dir share a syncfs
// (atomicfile.Dir.SyncFSStandsIn).
func sharesSyncFS(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return atomicfile.NewDir(f).SyncFSStandsIn()
}
