//go:build linux

package editguard_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

// TestCommitsInOneDirectoryOverlap checks that a commit holds its
// directory's commit lock only around its swap: while one change of a.txt
// is stopped in the fsync of its temporary file, a change of b.txt in the
// same directory, by another session, goes through; and a.txt's change
// completes after it. With the directory locked from the read to the
// ledger record, b.txt's change would wait for a.txt's.
func TestCommitsInOneDirectoryOverlap(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "b.txt", "b\n")
	sa, sb := w.NewSession("a"), w.NewSession("b")
	if _, err := sa.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	stopped, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "fsync" && strings.Contains(fdPath(c.FD), "/.a.txt.") && once.CompareAndSwap(false, true) {
			close(stopped)
			<-release
		}
		return nil
	}, nil, nil)
	aDone := make(chan error, 1)
	go func() {
		_, err := sa.Write(ctx, "a.txt", "a2\n", nil)
		aDone <- err
	}()
	<-stopped
	bctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := sb.Write(bctx, "b.txt", "b2\n", nil)
	close(release)
	if err != nil {
		t.Fatalf("Write(b.txt) while a.txt's commit is in its fsync = %v, want it to go through", err)
	}
	if err := <-aDone; err != nil {
		t.Fatalf("Write(a.txt) = %v", err)
	}
	if a, b := readFile(t, dir, "a.txt"), readFile(t, dir, "b.txt"); a != "a2\n" || b != "b2\n" {
		t.Errorf("a.txt = %q, b.txt = %q; want both changed", a, b)
	}
	// Each change is an intent and its outcome.
	if n, err := w.VerifyLedger(); err != nil || n != 4 {
		t.Errorf("VerifyLedger() = %d, %v; want 4, nil", n, err)
	}
}
