//go:build linux

package durability_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/crashsim"
	"github.com/editguard/editguard/internal/testutil"
)

const (
	tracedPatchEnv = "EDITGUARD_TRACED_PATCH_DIR"
	tracedUndoEnv  = "EDITGUARD_TRACED_UNDO" // set: the child applies the patch, then undoes it under the trace
	tracedBulkEnv  = "EDITGUARD_TRACED_BULK" // set: the child applies bulkPatch
)

// The patch TestPowerLossPatch cuts the power in: two updates, an add and a
// delete.
const tracedPatch = `*** Begin Patch
*** Update File: a.txt
@@
-a old
+a new
*** Update File: b.txt
@@
-b old
+b new
*** Add File: c.txt
+c new
*** Delete File: d.txt
*** End Patch
`

var (
	patchBefore = map[string]string{"a.txt": "a old\n", "b.txt": "b old\n", "d.txt": "d old\n"}
	patchAfter  = map[string]string{"a.txt": "a new\n", "b.txt": "b new\n", "c.txt": "c new\n"}
)

// A tracedCase is a patch TestPowerLossPatch cuts the power in, with the
// tree before and after it.
type tracedCase struct {
	patch         string
	before, after map[string]string
}

// tracedPatchCase is the patch of four files, or, with tracedBulkEnv set,
// one of ten (eight updates, an add and a delete), which makes its files
// durable with one syncfs instead of an fsync each.
func tracedPatchCase() tracedCase {
	if os.Getenv(tracedBulkEnv) == "" {
		return tracedCase{tracedPatch, patchBefore, patchAfter}
	}
	c := tracedCase{before: map[string]string{"gone.txt": "gone\n"}, after: map[string]string{"new.txt": "new\n"}}
	var p strings.Builder
	p.WriteString("*** Begin Patch\n")
	for i := range 8 {
		name := fmt.Sprintf("f%d.txt", i)
		c.before[name], c.after[name] = fmt.Sprintf("f%d old\n", i), fmt.Sprintf("f%d new\n", i)
		fmt.Fprintf(&p, "*** Update File: %s\n@@\n-f%d old\n+f%d new\n", name, i, i)
	}
	p.WriteString("*** Add File: new.txt\n+new\n*** Delete File: gone.txt\n*** End Patch\n")
	c.patch = p.String()
	return c
}

// names returns the files c's patch touches.
func (c tracedCase) names() []string {
	var names []string
	for n := range c.before {
		names = append(names, n)
	}
	for n := range c.after {
		if _, ok := c.before[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// TestTracedPatchChild is the traced process of TestPowerLossPatch.
func TestTracedPatchChild(t *testing.T) {
	dir := os.Getenv(tracedPatchEnv)
	if dir == "" {
		t.Skip("run by the power-loss test under strace")
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("traced")
	c := tracedPatchCase()
	for p := range c.before {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getenv(tracedUndoEnv) == "" {
		os.Stderr.WriteString(testutil.TraceBegin)
		if _, err := s.ApplyPatch(ctx, c.patch, nil); err != nil {
			t.Fatal(err)
		}
		os.Stderr.WriteString(testutil.TraceEnd)
	} else {
		res, err := s.ApplyPatch(ctx, c.patch, nil)
		if err != nil {
			t.Fatal(err)
		}
		os.Stderr.WriteString(testutil.TraceBegin)
		if _, err := s.UndoPatch(ctx, res.TxID, nil); err != nil {
			t.Fatal(err)
		}
		os.Stderr.WriteString(testutil.TraceEnd)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPowerLossPatch cuts the power, in simulation, at every point of a
// multi-file patch and in every way the disk may have lost or reordered
// its unsynced part, and checks each state after the recovery Open does:
// the files are all as before or all as after the patch, the ledger holds
// exactly one record of the patch per file if they are after it and none
// if they are before, the ledger verifies, no journal is left, and a patch
// after recovery succeeds. The states with every write persisted are
// those a kill -9 after each system call leaves.
func TestPowerLossPatch(t *testing.T) { powerLossPatch(t, false) }

// TestPowerLossBulkPatch is TestPowerLossPatch for a patch of ten files,
// whose temporary files and history lines one syncfs makes durable.
func TestPowerLossBulkPatch(t *testing.T) {
	t.Setenv(tracedBulkEnv, "1")
	powerLossPatch(t, false)
}

// TestPowerLossUndo is TestPowerLossPatch for the undo of the patch: the
// files end all as the patch left them, with no undo record, or all as
// before it, with one undo record per file.
func TestPowerLossUndo(t *testing.T) { powerLossPatch(t, true) }

func powerLossPatch(t *testing.T, undo bool) {
	strace := testutil.NeedStrace(t)
	if undo {
		t.Setenv(tracedUndoEnv, "1")
	}
	c := tracedPatchCase()
	w, dir := testutil.NewWorkspace(t)
	s := w.NewSession("setup")
	for name, content := range c.before {
		if _, err := s.Write(ctx, name, content, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	tw := testutil.TraceChild(t, strace, dir, "TestTracedPatchChild", tracedPatchEnv)
	ops, err := crashsim.Replay(tw.Calls[:tw.End], dir, tw.Initial)
	if err != nil {
		t.Fatal(err)
	}
	first := slices.IndexFunc(ops, func(o crashsim.Op) bool { return o.Call >= tw.Begin })
	start := crashsim.Apply(tw.Initial, ops[:first])
	ops = ops[first:]

	names := c.names()
	// The patch has 60 to 100 operations and 50,000 to 160,000 crash
	// states (how many depends on which background writes fall inside the
	// trace). Enumerating them takes minutes and checking them all far
	// longer, so CI checks, for every prefix of the operations, the state
	// with all and with none of the unsynced ones persisted and ten drawn
	// at random; EDITGUARD_FULL=1 checks every state.
	states := func(visit func(crashsim.State) error) (int, error) {
		return crashsim.SampleStates(start, ops, 10, rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), visit)
	}
	if os.Getenv("EDITGUARD_FULL") != "" {
		states = func(visit func(crashsim.State) error) (int, error) {
			return crashsim.CrashStates(start, ops, visit)
		}
	}
	// Each state is checked in a directory of its own, removed after, so
	// that tens of thousands of them are not all left for the cleanup.
	scratch := t.TempDir()
	var befores, afters int
	n, err := states(func(st crashsim.State) error {
		dir, err := os.MkdirTemp(scratch, "state")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if err := st.FS.Materialize(dir); err != nil {
			t.Fatal(err)
		}
		fail := func(format string, args ...any) {
			t.Errorf("power cut after %d of %d operations, lost %v: %s", st.After, len(ops), st.Lost, fmt.Sprintf(format, args...))
		}
		w, err := editguard.Open(dir, nil)
		if err != nil {
			fail("Open() error = %v", err)
			return nil
		}
		defer w.Close()
		got := map[string]string{}
		for _, name := range names {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				got[name] = string(b)
			}
		}
		switch fmt.Sprint(got) {
		case fmt.Sprint(c.before):
			befores++
		case fmt.Sprint(c.after):
			afters++
		default:
			fail("files = %q, neither all before nor all after the patch", got)
		}
		if _, err := w.VerifyLedger(); err != nil {
			fail("VerifyLedger() error = %v", err)
		}
		// One record per file changed, by the operation whose state the
		// files are in; none by the other.
		counts := map[string]int{}
		w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
			if r.Outcome == "ok" && strings.HasPrefix(r.Strategy, "transaction ") {
				counts[r.Tool]++
			}
			return nil
		})
		wantApply, wantUndo := 0, 0
		switch done := fmt.Sprint(got) == fmt.Sprint(c.after); {
		case !undo && done:
			wantApply = len(names)
		case undo && done:
			wantApply = len(names)
		case undo:
			wantApply, wantUndo = len(names), len(names)
		}
		if counts["apply_patch"] != wantApply || counts["undo_patch"] != wantUndo {
			fail("ledger holds %d apply_patch and %d undo_patch records for files %q; want %d and %d", counts["apply_patch"], counts["undo_patch"], got, wantApply, wantUndo)
		}
		if j := testutil.Journals(t, dir); len(j) != 0 {
			fail("journals left after Open: %v", j)
		}
		// The patch, or its undo, applies after recovery.
		s := w.NewSession("recovery")
		for _, name := range names {
			if _, ok := got[name]; ok {
				if _, err := s.Read(ctx, name, nil); err != nil {
					fail("Read(%s): %v", name, err)
				}
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(c.before) {
			if _, err := s.ApplyPatch(ctx, c.patch, nil); err != nil {
				fail("the patch after recovery: %v", err)
			}
		}
		if p := w.Recovery().Problems; len(p) != 0 {
			fail("Recovery().Problems = %+v", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations, %d crash states checked: all before in %d, all after in %d", len(ops), n, befores, afters)
	if befores == 0 || afters == 0 {
		t.Errorf("states: %d before, %d after; want both", befores, afters)
	}
}
