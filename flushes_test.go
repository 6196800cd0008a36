package editguard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/ledger"
)

// TestOutcomesRideOnTheNextIntent checks that the outcome records of
// one session's changes in a row cost no fsync of their own: each waits
// engine's outcomeSyncDelay, and the next change's intent fsync covers it first.
func TestOutcomesRideOnTheNextIntent(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var fsyncs atomic.Int64
	SetFaults(w, nil, nil, func(op, name string) error {
		if op == "fsync" {
			fsyncs.Add(1)
		}
		return nil
	})
	s := w.NewSession("agent")
	const n = 10
	for i := range n {
		if _, err := s.Write(t.Context(), "a.txt", fmt.Sprintf("v%d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// n intents, and Close's fsync of the last outcome.
	if got := fsyncs.Load(); got > n+2 {
		t.Errorf("%d ledger fsyncs for %d changes in a row, want at most %d", got, n, n+2)
	}
	b, err := os.ReadFile(filepath.Join(w.Dir(), StateDir, ledgerName))
	if err != nil {
		t.Fatal(err)
	}
	if got := bytes.Count(b, []byte("\n")); got != 2*n {
		t.Errorf("%d ledger records, want %d: an intent and an outcome per change", got, 2*n)
	}
}

// TestCatchUpSoonerAfterManyBytes checks that a catch-up falls due before
// engine.CatchUpDelay once enough displaced bytes were saved lazily.
func TestCatchUpSoonerAfterManyBytes(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.eng.SetCatchUp(10, 0)
	s := w.NewSession("agent")
	for i := range 4 {
		if _, err := s.Write(t.Context(), "a.txt", fmt.Sprintf("version %d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	_, last, _, err := w.led.Since(ledger.Position{})
	if err != nil {
		t.Fatal(err)
	}
	want := last.Seq
	deadline := time.Now().Add(engine.CatchUpDelay / 2)
	for {
		seq, _, _, _ := w.hist.Synced()
		if seq >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("history's mark at %d after %v, want %d: the catch-up waited for its delay", seq, engine.CatchUpDelay/2, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCatchUpLeavesTrimmedVersionsOut checks that the catch-up does not
// save again the versions that retention cut from a file's index before
// the catch-up ran: they were not lost, and saving them again would cost
// an fsync each and bring back versions retention removed.
func TestCatchUpLeavesTrimmedVersionsOut(t *testing.T) {
	const keep = 4
	w, err := Open(t.TempDir(), &Options{KeepVersions: keep})
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("agent")
	for i := range 30 {
		if _, err := s.Write(t.Context(), "a.txt", fmt.Sprintf("version %d\n", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	w.trims.Wait()
	var saves atomic.Int64
	SetFaults(w, nil, func(op, name string) error {
		if op == "fsync" {
			saves.Add(1)
		}
		return nil
	}, nil)
	w.eng.CatchUp(false)
	vs, err := w.History("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) > keep+keep/4 {
		t.Errorf("%d versions after the catch-up, want at most %d", len(vs), keep+keep/4)
	}
	// One fsync of the index, none to save trimmed versions again.
	if n := saves.Load(); n > 1 {
		t.Errorf("the catch-up made %d history fsyncs, want at most 1", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLargeVersionLinesLazy checks that a change displacing content over
// the history's inline limit (copied into an object, or linked when the
// file can be held) saves its version's index line without an fsync: its
// intent names the object, which is durable before the change. The
// catch-up at Close makes the lines durable, and every version loads.
func TestLargeVersionLinesLazy(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// No catch-up before Close, however slow the machine: what is
	// counted is the changes' own fsyncs.
	w.eng.SetCatchUp(0, time.Hour)
	s := w.NewSession("agent")
	sizes := map[string]int{"copied.txt": 64 << 10, "linked.txt": 2 * engine.LinkMin}
	contents := map[string][]string{}
	for name, size := range sizes {
		for i := range 3 {
			c := strings.Repeat(fmt.Sprintf("%s version %d\n", name, i), size/20)
			contents[name] = append(contents[name], c)
		}
		if _, err := s.Write(t.Context(), name, contents[name][0], nil); err != nil {
			t.Fatal(err)
		}
	}
	indexSyncs := countIndexSyncs(w)
	for name := range sizes {
		for _, c := range contents[name][1:] {
			if _, err := s.Write(t.Context(), name, c, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := indexSyncs.Load(); n != 0 {
		t.Errorf("%d index fsyncs for 4 changes of large files, want none before the catch-up", n)
	}
	recs, _, _, err := w.led.Since(ledger.Position{})
	if err != nil {
		t.Fatal(err)
	}
	objects := 0
	for _, r := range recs {
		if r.Outcome == ledger.OutcomePending && r.SHA256Before != "" {
			if !r.DisplacedObject || len(r.Displaced) != 0 {
				t.Errorf("intent %d of %s: displaced_object %v, %d bytes carried; want the object named, no bytes", r.Seq, r.Path, r.DisplacedObject, len(r.Displaced))
			}
			objects++
		}
	}
	if objects != 4 {
		t.Errorf("%d intents name an object, want 4", objects)
	}
	w = closeCaughtUp(t, w, indexSyncs)
	for name := range sizes {
		vs, err := w.History(name)
		// The file's creation, and the two contents displaced.
		if err != nil || len(vs) != 3 {
			t.Fatalf("History(%s) = %d versions, %v; want 3", name, len(vs), err)
		}
		held := map[string]bool{}
		for _, v := range vs {
			_, got, err := w.hist.Load(name, v.ID)
			if err != nil {
				t.Errorf("%s version %s: %v", name, v.ID, err)
			}
			held[string(got)] = true
		}
		if !held[contents[name][0]] || !held[contents[name][1]] {
			t.Errorf("%s: the versions do not hold the two displaced contents", name)
		}
	}
}

// TestCreationVersionsLazy checks that a change creating a file, or
// displacing an empty one, saves its version's index line without an
// fsync: the intent says the file did not exist, or was empty. The
// catch-up at Close makes the lines durable.
func TestCreationVersionsLazy(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("agent")
	indexSyncs := countIndexSyncs(w)
	for _, name := range []string{"a.txt", "sub/b.txt", "empty.txt"} {
		content := "new\n"
		if name == "empty.txt" {
			content = ""
		}
		if _, err := s.Write(t.Context(), name, content, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Write(t.Context(), "empty.txt", "filled\n", nil); err != nil {
		t.Fatal(err)
	}
	if n := indexSyncs.Load(); n != 0 {
		t.Errorf("%d index fsyncs for 3 creations and a write over an empty file, want none before the catch-up", n)
	}
	w = closeCaughtUp(t, w, indexSyncs)
	for name, want := range map[string]int{"a.txt": 1, "sub/b.txt": 1, "empty.txt": 2} {
		vs, err := w.History(name)
		if err != nil || len(vs) != want {
			t.Fatalf("History(%s) = %+v, %v; want %d versions", name, vs, err, want)
		}
		if !vs[len(vs)-1].Absent && !vs[0].Absent {
			t.Errorf("History(%s) = %+v; want the creation's absent version", name, vs)
		}
	}
	vs, _ := w.History("empty.txt")
	for _, v := range vs {
		if !v.Absent {
			if _, got, err := w.hist.Load("empty.txt", v.ID); err != nil || len(got) != 0 {
				t.Errorf("empty.txt version %s = %q, %v; want the empty content", v.ID, got, err)
			}
		}
	}
}

// countIndexSyncs counts the fsyncs of w's history indexes and of their
// directory from now on.
func countIndexSyncs(w *Workspace) *atomic.Int64 {
	var n atomic.Int64
	SetFaults(w, nil, func(op, name string) error {
		if (op == "fsync" || op == "syncfs") && strings.Contains(name, "/index") {
			n.Add(1)
		}
		return nil
	}, nil)
	return &n
}

// closeCaughtUp closes w, checks that its last catch-up fsynced an index
// (counted by syncs), and opens the workspace again, to be closed when the
// test ends.
func closeCaughtUp(t *testing.T, w *Workspace, syncs *atomic.Int64) *Workspace {
	t.Helper()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := syncs.Load(); n < 1 {
		t.Errorf("Close made %d index fsyncs, want the catch-up's", n)
	}
	w, err := Open(w.Dir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestCatchUpManyIndexesOneSyncFS creates more files than engine.FsyncObjects, so
// that their versions' lines wait in as many new indexes, and checks that
// the catch-up makes them durable with one syncfs of the history's file
// system instead of an fsync each, and that a failed syncfs leaves the
// mark where it was, for a later catch-up to do again.
func TestCatchUpManyIndexesOneSyncFS(t *testing.T) {
	dir := t.TempDir()
	if !sharesSyncFS(t, dir) {
		t.Skip("a syncfs may not stand in for fsyncs here: every index is fsynced")
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("agent")
	before, _, _, _ := w.hist.Synced()
	for i := range 3 * engine.FsyncObjects {
		if _, err := s.Write(t.Context(), fmt.Sprintf("f%02d.txt", i), "new\n", nil); err != nil {
			t.Fatal(err)
		}
	}
	_, last, _, err := w.led.Since(ledger.Position{})
	if err != nil {
		t.Fatal(err)
	}
	var fsyncs, syncfs atomic.Int64
	fail := atomic.Bool{}
	fail.Store(true)
	SetFaults(w, nil, func(op, name string) error {
		switch {
		case op == "fsync" && strings.Contains(name, "/index"):
			fsyncs.Add(1)
		case op == "syncfs":
			syncfs.Add(1)
			if fail.Load() {
				return errors.New("injected")
			}
		}
		return nil
	}, nil)
	w.eng.CatchUp(false)
	if seq, _, _, _ := w.hist.Synced(); seq >= last.Seq && before < last.Seq {
		t.Errorf("the mark moved to %d although the indexes' syncfs failed", seq)
	}
	fail.Store(false)
	w.eng.CatchUp(false)
	if seq, _, _, _ := w.hist.Synced(); seq < last.Seq {
		t.Errorf("history's mark at %d after the catch-up, want %d", seq, last.Seq)
	}
	if fsyncs.Load() != 0 || syncfs.Load() != 2 {
		t.Errorf("%d index fsyncs and %d syncfs for %d new indexes in two catch-ups, want none and 2", fsyncs.Load(), syncfs.Load(), 3*engine.FsyncObjects)
	}
}

// TestCatchUpDueUnderManyChanges makes every lazy change start the
// catch-up at once (SetCatchUp(1, 0)) while four sessions change their
// files as fast as they can: a change that finds the catch-up due just
// firing must not fire it a second time (a timer reset after it fired
// runs its function again, and the second run's Done made the wait
// group's counter negative: a panic). Close then waits for them all.
func TestCatchUpDueUnderManyChanges(t *testing.T) {
	w, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.eng.SetCatchUp(1, 0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			s := w.NewSession(fmt.Sprintf("agent-%d", g))
			name := fmt.Sprintf("f%d.txt", g)
			for i := range 60 {
				if _, err := s.Write(t.Context(), name, fmt.Sprintf("version %d of %s\n", i, name), nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
