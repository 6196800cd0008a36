//go:build linux

package durability_test

import (
	"os"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/crashsim"
	"github.com/editguard/editguard/internal/testutil"
)

const tracedHeldEnv = "EDITGUARD_TRACED_HELD_DIR"

// TestTracedHeldWriteChild is TestTracedWriteChild with a file large
// enough to be held and linked into history.
func TestTracedHeldWriteChild(t *testing.T) {
	dir := os.Getenv(tracedHeldEnv)
	if dir == "" {
		t.Skip("run by TestPowerLossHeld under strace")
	}
	testutil.TracedWriteOf(t, dir, testutil.HeldContent("new"))
}

// TestPowerLossHeld is TestPowerLoss for a write whose old file is linked
// into history under a lease: every crash state keeps the old or the new
// content whole, history names only what it can give back, and after Open
// no history object is a name of the target's file.
func TestPowerLossHeld(t *testing.T) {
	strace := testutil.NeedStrace(t)
	old, new := testutil.HeldContent("old"), testutil.HeldContent("new")
	w, dir := testutil.NewWorkspace(t)
	testutil.NeedLeases(t, dir)
	if _, err := w.NewSession("setup").Write(ctx, "a.txt", old, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tw := testutil.TraceChild(t, strace, dir, "TestTracedHeldWriteChild", tracedHeldEnv)
	if got := testutil.ReadFile(t, dir, "a.txt"); got != new {
		t.Fatalf("traced write left %d bytes, want the new %d", len(got), len(new))
	}
	powerLoss(t, tw, old, new, func(ops []crashsim.Op) {
		// The old file must have been linked: a create of an object
		// naming the target's inode.
		var targetIno int
		for _, o := range ops {
			if o.Kind == crashsim.Create && strings.Contains(o.Path, "/history/objects/") && tw.Initial.Files["a.txt"] == o.Ino {
				targetIno = o.Ino
			}
		}
		if targetIno == 0 {
			t.Fatalf("the traced write did not link the old file into history: %v", ops)
		}
	})
}
