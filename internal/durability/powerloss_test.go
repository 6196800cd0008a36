//go:build linux

package durability_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/crashsim"
	"github.com/editguard/editguard/internal/testutil"
)

// TestPowerLoss cuts the power, in simulation, at every point of a guarded
// write and in every way the disk may then have reordered or lost the
// unsynced part of it (see internal/crashsim), and checks each resulting
// state after the recovery editguard.Open performs. The invariants:
//
//  1. Open succeeds and the ledger verifies (a torn final line is cut).
//  2. The target holds the old or the new content, byte for byte.
//  3. Every version the history lists can be loaded: the history never
//     names content it cannot give back.
//  4. If the target holds the new content, the history holds the old.
//  5. The ledger shows the records from before the write, and at most one
//     more: the write's outcome (its intent, shown only while no outcome
//     follows it, must have one after Open). An ok outcome names the new
//     content and a history version holding the old, and the target holds
//     the new content: the ledger never claims a change the disk does not
//     have. An interrupted outcome says not_applied, and the target holds
//     the old content. And the converse: if the target holds the new
//     content, the ledger has the write as ok, since the write's intent is
//     durable before the swap and Open judges it from the file.
//  6. A guarded write after recovery succeeds, removes any temporary file
//     left beside the target, and keeps the ledger verifiable.
func TestPowerLoss(t *testing.T) {
	powerLoss(t, testutil.TraceWrite(t), testutil.TracedOld, testutil.TracedNew, nil)
}

// TestTracedWriteChild is the process that strace watches for
// TestPowerLoss (testutil.TraceWrite): one guarded write over an existing
// file in the workspace named by testutil.TracedEnv.
func TestTracedWriteChild(t *testing.T) {
	dir := os.Getenv(testutil.TracedEnv)
	if dir == "" {
		t.Skip("run by the power-loss test under strace")
	}
	testutil.TracedWriteOf(t, dir, testutil.TracedNew)
}

// powerLoss checks every crash state of the traced write tw of tracedNew
// over tracedOld, as TestPowerLoss says; check, if set, sees the write's
// operations first.
func powerLoss(t *testing.T, tw *testutil.TracedWrite, tracedOld, tracedNew string, check func([]crashsim.Op)) {
	ops, err := crashsim.Replay(tw.Calls[:tw.End], tw.Root, tw.Initial)
	if err != nil {
		t.Fatal(err)
	}
	// Everything before the write (opening the workspace, the read) is
	// taken as durable; power is cut somewhere in the write.
	first := slices.IndexFunc(ops, func(o crashsim.Op) bool { return o.Call >= tw.Begin })
	if first < 0 {
		t.Fatal("the write made no file-system operation")
	}
	start := crashsim.Apply(tw.Initial, ops[:first])
	ops = ops[first:]
	if check != nil {
		check(ops)
	}

	// The records Log shows: intents are hidden once their outcome follows.
	before := 0
	for _, l := range strings.Split(strings.TrimSpace(string(contentOf(start.File(".editguard/ledger.jsonl")))), "\n") {
		if !strings.Contains(l, `"outcome":"pending"`) {
			before++
		}
	}
	oldSum, newSum := testutil.SHA256Hex([]byte(tracedOld)), testutil.SHA256Hex([]byte(tracedNew))
	var olds, news, recorded, interrupted, temps int
	n, err := crashsim.CrashStates(start, ops, func(st crashsim.State) error {
		failed := false
		fail := func(format string, args ...any) {
			t.Helper()
			if !failed {
				t.Errorf("power cut after %d of %d operations, lost %v:", st.After, len(ops), st.Lost)
				failed = true
			}
			t.Errorf("  "+format, args...)
		}
		dir := t.TempDir()
		if err := st.FS.Materialize(dir); err != nil {
			t.Fatal(err)
		}
		w, err := testutil.Open(dir, nil)
		if err != nil {
			fail("Open() error = %v", err)
			return nil
		}
		if _, ok := st.FS.File(testutil.TempName(w, "a.txt")); ok {
			temps++
		}
		defer w.Close()
		// 1.
		_, err = w.VerifyLedger()
		if err != nil {
			fail("VerifyLedger() error = %v", err)
		}
		// 2.
		got, err := os.ReadFile(filepath.Join(dir, "a.txt"))
		isNew := string(got) == tracedNew
		switch {
		case err != nil:
			fail("target: %v", err)
		case isNew:
			news++
		case string(got) == tracedOld:
			olds++
		default:
			fail("target = %.80q (%d bytes), want the old or the new content", got, len(got))
		}
		// 3, 4.
		if sh := testutil.SharedObjects(dir); len(sh) > 0 {
			fail("after Open, a history object is a file of the workspace: %v", sh)
		}
		sums := testutil.CheckHistoryRestorable(t, dir, "a.txt")
		if isNew && !sums[oldSum] {
			fail("target has the new content but the history lacks the old")
		}
		// 5.
		var recs []*editguard.LedgerRecord
		w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error { recs = append(recs, r); return nil })
		switch {
		case len(recs) == before+1 && recs[before].Outcome == "interrupted":
			interrupted++
			if r := recs[before]; r.ErrorReason != "not_applied" || r.SHA256Before != oldSum || r.Intent == 0 {
				fail("new ledger record = {outcome %q, reason %q, before %.8s, intent %d}, want the write's, not applied", r.Outcome, r.ErrorReason, r.SHA256Before, r.Intent)
			}
			if isNew {
				fail("the ledger says the write was not made, but the target holds it")
			}
		case len(recs) == before+1:
			recorded++
			r := recs[before]
			if r.Outcome != "ok" || r.SHA256After != newSum || r.SHA256Before != oldSum {
				fail("new ledger record = {outcome %q, before %.8s, after %.8s}, want the write", r.Outcome, r.SHA256Before, r.SHA256After)
			}
			if !isNew {
				fail("the ledger records the write but the target does not hold it")
			}
			vs, err := w.History("a.txt")
			if err != nil || !slices.ContainsFunc(vs, func(v editguard.Version) bool { return v.ID == r.HistoryVersion && v.SHA256 == oldSum }) {
				fail("ledger names history version %q, not found holding the old content in %+v (%v)", r.HistoryVersion, vs, err)
			}
		case len(recs) != before:
			fail("ledger has %d records, want %d or %d", len(recs), before, before+1)
		case isNew:
			fail("the target holds the write, but the ledger does not record it")
		}
		// 6.
		s := w.NewSession("recovery")
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			fail("Read() after recovery error = %v", err)
			return nil
		}
		if _, err := s.Write(ctx, "a.txt", "after the power cut\n", nil); err != nil {
			fail("Write() after recovery error = %v", err)
			return nil
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{editguard.StateDir, "a.txt"}) {
			fail("directory after the next write = %v", names)
		}
		if _, err := w.VerifyLedger(); err != nil {
			fail("VerifyLedger() after the next write error = %v", err)
		}
		if sums := testutil.CheckHistoryRestorable(t, dir, "a.txt"); !sums[testutil.SHA256Hex(got)] {
			fail("the content displaced by the write after recovery is not in history")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations, %d crash states: target old in %d, new in %d; write in the ledger in %d, as interrupted in %d; temporary file left in %d",
		len(ops), n, olds, news, recorded, interrupted, temps)
	// The enumeration must reach every outcome, or it tested nothing.
	if olds == 0 || news == 0 || recorded == 0 || interrupted == 0 || temps == 0 {
		t.Errorf("states: %d old, %d new, %d recorded, %d interrupted, %d with a temporary file; want every kind", olds, news, recorded, interrupted, temps)
	}
}

func contentOf(b []byte, _ bool) []byte { return b }
