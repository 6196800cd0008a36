//go:build linux

package editguard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpTake takes a checkpoint from prev (named prevName) as BeginCommand
// does, saves and remembers it, and returns it with its name.
func cpTake(t *testing.T, w *Workspace, prev *cpManifest, prevName string) (*cpManifest, string) {
	t.Helper()
	ctx := context.Background()
	cp, unlock, err := w.lockCheckpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	m, _, mark, err := cp.checkpoint(ctx, w, prev, prevName)
	if err != nil {
		t.Fatal(err)
	}
	name, sum, err := cp.saveManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	cp.remember(name, sum, m, mark)
	cp.setLast(name)
	return m, name
}

// fullScan is what a full scan from prev makes now.
func fullScan(t *testing.T, w *Workspace, prev *cpManifest) *cpManifest {
	t.Helper()
	ctx := context.Background()
	cp, unlock, err := w.lockCheckpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	m, _, err := cp.scan(ctx, w, prev)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameManifest(t *testing.T, round int, got, want *cpManifest) {
	t.Helper()
	gf, wf := filesOf(got), filesOf(want)
	if !reflect.DeepEqual(gf, wf) {
		for p, e := range wf {
			if g, ok := gf[p]; !ok || g != e {
				t.Errorf("round %d: %q: journal %+v (%v), full scan %+v", round, p, g, ok, e)
			}
		}
		for p := range gf {
			if _, ok := wf[p]; !ok {
				t.Errorf("round %d: %q in the journal's checkpoint only", round, p)
			}
		}
		t.FailNow()
	}
	if got.numFiles() != len(gf) {
		t.Fatalf("round %d: the checkpoint counts %d files and has %d", round, got.numFiles(), len(gf))
	}
	if !slices.Equal(got.Unchecked, want.Unchecked) || got.Exclude != want.Exclude || got.Index != want.Index {
		t.Fatalf("round %d: unchecked %q, full scan %q (exclude %v, index %v)", round, got.Unchecked, want.Unchecked, got.Exclude == want.Exclude, got.Index == want.Index)
	}
	if paths := slices.Sorted(mapKeys(gf)); !slices.Equal(got.sortedPaths(), paths) {
		t.Fatalf("round %d: the journal's checkpoint lists its paths out of order or wrong", round)
	}
}

// TestJournalCheckpointIsAFullScan: after random changes of every kind (files
// written, removed, renamed, chmodded, made links, grown past the size
// limit; directories made, removed, renamed, moved in from outside, turned
// into files and back; ignored files and directories), the checkpoint the
// journal's changes make is the one a full scan makes, round after round,
// and a full scan from the last checkpoint is the one from none.
func TestJournalCheckpointIsAFullScan(t *testing.T) {
	if watchDisabled() {
		t.Skip(NoWatchEnv + "=1: the journal is what this tests")
	}
	dir, outside := t.TempDir(), t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "ign/\n*.log\n")
	for i := range 40 {
		write(fmt.Sprintf("d%d/s%d/f%d.txt", i%4, i%3, i), fmt.Sprint("file ", i))
	}
	write("ign/x.txt", "ignored")
	w, err := Open(dir, &Options{MaxFileSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Watch(); err != nil {
		t.Fatal(err)
	}
	prev, prevName := cpTake(t, w, nil, "")
	rng := rand.New(rand.NewPCG(1, uint64(os.Getpid())))
	files := func() []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !strings.Contains(p, StateDir) && d.Name() != ".gitignore" {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	dirs := func() []string {
		var out []string
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && p != dir && !strings.Contains(p, StateDir) {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, rel)
			}
			return nil
		})
		return out
	}
	pick := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return s[rng.IntN(len(s))]
	}
	rounds := 40
	if testing.Short() {
		rounds = 15
	}
	for round := range rounds {
		for range 1 + rng.IntN(6) {
			name := fmt.Sprintf("n%d-%d", round, rng.IntN(1000))
			switch op := rng.IntN(14); op {
			case 0, 1:
				write(pick(files()), fmt.Sprint("changed ", rng.IntN(3)))
			case 2:
				write(filepath.Join(pick(dirs()), name+".txt"), "new")
			case 3:
				os.Remove(filepath.Join(dir, pick(files())))
			case 4:
				os.Rename(filepath.Join(dir, pick(files())), filepath.Join(dir, pick(dirs()), name))
			case 5:
				os.Chmod(filepath.Join(dir, pick(files())), 0o600+os.FileMode(rng.IntN(2))*0o100)
			case 6:
				d := filepath.Join(dir, pick(dirs()), name)
				os.MkdirAll(filepath.Join(d, "deep"), 0o755)
				os.WriteFile(filepath.Join(d, "deep", "f"), []byte("in a new directory"), 0o644)
			case 7:
				if d := pick(dirs()); d != "none" && d != "ign" {
					os.RemoveAll(filepath.Join(dir, d))
				}
			case 8:
				if d := pick(dirs()); d != "none" && d != "ign" {
					os.Rename(filepath.Join(dir, d), filepath.Join(dir, name))
				}
			case 9:
				o := filepath.Join(outside, name)
				os.MkdirAll(filepath.Join(o, "a", "b"), 0o755)
				os.WriteFile(filepath.Join(o, "a", "b", "g"), []byte("moved in"), 0o644)
				os.WriteFile(filepath.Join(o, "top"), []byte("moved in"), 0o644)
				if err := os.Rename(o, filepath.Join(dir, pick(dirs()), name)); err != nil {
					os.Rename(o, filepath.Join(dir, name))
				}
			case 10:
				f := pick(files())
				if f != ".gitignore" {
					os.Remove(filepath.Join(dir, f))
					os.MkdirAll(filepath.Join(dir, f), 0o755)
					os.WriteFile(filepath.Join(dir, f, "inside"), []byte("was a file"), 0o644)
				}
			case 11:
				os.Symlink("d0", filepath.Join(dir, pick(dirs()), name))
				write(filepath.Join(pick(dirs()), name+".log"), "ignored")
			case 12:
				write(pick(files()), strings.Repeat("past the size limit ", 10))
			case 13:
				write(filepath.Join("ign", name), "ignored dir")
			}
		}
		before := w.jr.dirtyScans.Load()
		got, name := cpTake(t, w, prev, prevName)
		if w.jr.dirtyScans.Load() != before+1 {
			t.Fatalf("round %d: the checkpoint was a full scan (%v)", round, w.jr.own.wt.Err())
		}
		full := fullScan(t, w, prev)
		sameManifest(t, round, got, full)
		// A full scan with a stat cache is made from it (its unchanged
		// files left in the base they share): the one made from nothing.
		sameManifest(t, round, full, fullScan(t, w, nil))
		// Written as a delta on prev, it reads back, down its chain, as
		// another process reads it: the same manifest.
		data, err := os.ReadFile(filepath.Join(dir, StateDir, checkpointDir, "manifests", name))
		if err != nil || !strings.HasPrefix(string(data), deltaMagic) {
			t.Fatalf("round %d: manifest not written as a delta (%v)", round, err)
		}
		w.jr.mu.Lock()
		w.jr.cache, w.jr.bases = nil, nil
		w.jr.mu.Unlock()
		cp, unlock, err := w.lockCheckpoints(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		cp.sweepManifests() // keeps the chain under the last
		back, err := cp.loadManifest(name, "")
		unlock()
		if err != nil {
			t.Fatalf("round %d: the delta does not read back: %v", round, err)
		}
		sameManifest(t, round, back, got)
		if back.StartNS != got.StartNS {
			t.Fatalf("round %d: read back start %d, want %d", round, back.StartNS, got.StartNS)
		}
		// A delta sits on a full manifest, never on another delta.
		cp, unlock, err = w.lockCheckpoints(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		base := cp.baseOf(name)
		baseData, err := os.ReadFile(filepath.Join(dir, StateDir, checkpointDir, "manifests", base))
		unlock()
		if err != nil || !strings.HasPrefix(string(baseData), manifestMagic) {
			t.Fatalf("round %d: the delta's base %q is not a full manifest (%v)", round, base, err)
		}
		prev, prevName = back, name
	}
}

// changeLines is a command result's changes as "op path" lines, in order.
func changeLines(res *CommandResult) []string {
	var out []string
	for _, c := range res.Changes {
		out = append(out, c.Op+" "+c.Path)
	}
	slices.Sort(out)
	return out
}

// TestJournalFallsBack: when the journal cannot vouch for a command's
// time (an overflow, its watcher closed, a watch that cannot be added, a
// file system mounted inside the tree, which no watch reports),
// End scans in full and records what the command did; a directory moved
// in, or a burst of creates, is recorded from the journal or the scan
// alike, file by file.
func TestJournalFallsBack(t *testing.T) {
	if watchDisabled() {
		t.Skip(NoWatchEnv + "=1: the journal is what this tests")
	}
	ctx := context.Background()
	burst := 5000
	if testing.Short() {
		burst = 1500
	}
	for _, tc := range []struct {
		name string
		full bool // End must scan in full
		// during changes the tree while the command runs and returns the
		// changes End must record.
		during func(t *testing.T, w *Workspace, dir string) []string
	}{
		{"overflow", true, func(t *testing.T, w *Workspace, dir string) []string {
			os.WriteFile(filepath.Join(dir, "a/f1"), []byte("changed"), 0o644)
			w.jr.own.wt.Inject(fmt.Errorf("inotify: %w", errOverflowForTest))
			os.WriteFile(filepath.Join(dir, "a/new"), []byte("new"), 0o644)
			return []string{"changed a/f1", "created a/new"}
		}},
		{"watcher closed", true, func(t *testing.T, w *Workspace, dir string) []string {
			w.jr.own.wt.Close()
			os.Remove(filepath.Join(dir, "a/f2"))
			return []string{"deleted a/f2"}
		}},
		{"watch limit", true, func(t *testing.T, w *Workspace, dir string) []string {
			w.jr.faultOn.Store(true)
			os.MkdirAll(filepath.Join(dir, "a/sub/deeper"), 0o755)
			os.WriteFile(filepath.Join(dir, "a/sub/deeper/x"), []byte("x"), 0o644)
			return []string{"created a/sub/deeper/x"}
		}},
		{"directory moved in", false, func(t *testing.T, w *Workspace, dir string) []string {
			out := t.TempDir()
			os.MkdirAll(filepath.Join(out, "m/n"), 0o755)
			os.WriteFile(filepath.Join(out, "m/n/y"), []byte("y"), 0o644)
			os.WriteFile(filepath.Join(out, "m/z"), []byte("z"), 0o644)
			if err := os.Rename(filepath.Join(out, "m"), filepath.Join(dir, "a/m")); err != nil {
				t.Fatal(err)
			}
			return []string{"created a/m/n/y", "created a/m/z"}
		}},
		{"bind mount", true, func(t *testing.T, w *Workspace, dir string) []string {
			src := t.TempDir()
			os.WriteFile(filepath.Join(src, "mounted"), []byte("m"), 0o644)
			os.MkdirAll(filepath.Join(dir, "a/mnt"), 0o755)
			if err := syscall.Mount(src, filepath.Join(dir, "a/mnt"), "", syscall.MS_BIND, ""); err != nil {
				t.Skipf("cannot bind mount here: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(filepath.Join(dir, "a/mnt"), syscall.MNT_DETACH) })
			// The directory's event is seen; what the mount brings is not.
			return []string{"created a/mnt/mounted"}
		}},
		{"burst of creates", false, func(t *testing.T, w *Workspace, dir string) []string {
			var want []string
			for i := range burst {
				p := fmt.Sprintf("b/%05d", i)
				if err := os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644); err != nil {
					t.Fatal(err)
				}
				want = append(want, "created "+p)
			}
			return want
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "a"), 0o755)
			os.MkdirAll(filepath.Join(dir, "b"), 0o755)
			for _, f := range []string{"a/f1", "a/f2", "b/f3"} {
				os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644)
			}
			w, err := Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			w.jr.fault = func(rel string) error {
				if w.jr.faultOn.Load() {
					return fmt.Errorf("watch %s: %w", rel, errNoSpaceForTest)
				}
				return nil
			}
			if _, err := w.Watch(); err != nil {
				t.Fatal(err)
			}
			s := w.NewSession("s")
			c0, _ := s.BeginCommand(ctx, "first", nil) // the last checkpoint, with a mark
			c0.End(ctx)
			c, err := s.BeginCommand(ctx, tc.name, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.during(t, w, dir)
			full, dirty := w.jr.fullScans.Load(), w.jr.dirtyScans.Load()
			res, err := c.End(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Totals.Recorded != len(want) || res.Totals.Created+res.Totals.Changed+res.Totals.Deleted != len(want) {
				t.Fatalf("recorded %d, totals %+v, want %d changes", res.Totals.Recorded, res.Totals, len(want))
			}
			if len(want) > len(res.Changes) {
				want = want[:len(res.Changes)] // the result lists the first ones
			}
			if got := changeLines(res); !slices.Equal(got, want) {
				t.Fatalf("recorded %d changes %.10q, want %d %.10q", len(got), got, len(want), want)
			}
			tookFull := w.jr.fullScans.Load() > full
			switch {
			case tc.full && !tookFull:
				t.Fatal("End used the journal that could not vouch")
			case !tc.full && tc.name != "burst of creates" && w.jr.dirtyScans.Load() == dirty:
				t.Fatal("End scanned in full with a journal that vouches")
			}
			t.Logf("End scanned in full: %v", tookFull)
		})
	}
}

var (
	errOverflowForTest = errors.New("event queue overflow")
	errNoSpaceForTest  = errors.New("no space left on device")
)

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestJournalCheckpointAfterIndexChange: when git's index changes between
// two checkpoints (git add, commit, rm --cached, reset, a stat refresh), a
// checkpoint from the journal checks the files whose listed blob moved,
// found against the manifest's entries (indexMoved), and is still the one
// a full scan makes, without scanning in full.
func TestJournalCheckpointAfterIndexChange(t *testing.T) {
	if watchDisabled() {
		t.Skip(NoWatchEnv + "=1: the journal is what this tests")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.fsmonitor=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(rel, s string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		write(fmt.Sprintf("d%d/f%d.txt", i%3, i), fmt.Sprint("file ", i))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "one")
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Watch(); err != nil {
		t.Fatal(err)
	}
	prev, prevName := cpTake(t, w, nil, "")
	steps := []func(){
		func() { write("d0/f0.txt", "changed"); git("add", "d0/f0.txt") },
		func() { git("commit", "-qm", "two") },
		func() { git("rm", "-q", "--cached", "d1/f1.txt") },
		func() { write("d2/f2.txt", "changed, not added") },
		func() { git("add", "-A") },
		func() { git("reset", "-q", "HEAD~1") },
		func() {
			os.Chtimes(filepath.Join(dir, "d1/f4.txt"), time.Now(), time.Now())
			git("status", "--porcelain")
		},
		func() { write("d0/new.txt", "new"); git("add", "d0/new.txt"); git("commit", "-qm", "three") },
	}
	for round, step := range steps {
		step()
		before := w.jr.dirtyScans.Load()
		got, name := cpTake(t, w, prev, prevName)
		if w.jr.dirtyScans.Load() != before+1 {
			t.Fatalf("round %d: the checkpoint was a full scan", round)
		}
		full := fullScan(t, w, prev)
		sameManifest(t, round, got, full)
		// A full scan with a stat cache is made from it (its unchanged
		// files left in the base they share): the one made from nothing.
		sameManifest(t, round, full, fullScan(t, w, nil))
		backed := 0
		for _, e := range got.allFiles() {
			if e.Backed {
				backed++
			}
		}
		if backed == 0 {
			t.Fatalf("round %d: no file is backed by git", round)
		}
		prev, prevName = got, name
	}
}

// TestDeltaOnAKeptBase: a delta on a full manifest whose files this
// process keeps (as a hook server keeps its base when an exec writes a
// delta on it) reads without reading the full manifest again.
func TestDeltaOnAKeptBase(t *testing.T) {
	if watchDisabled() {
		t.Skip(NoWatchEnv + "=1: the journal is what this tests")
	}
	dir := t.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte(fmt.Sprint(i)), 0o644)
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Watch(); err != nil {
		t.Fatal(err)
	}
	first, firstName := cpTake(t, w, nil, "")
	os.WriteFile(filepath.Join(dir, "f3"), []byte("changed"), 0o644)
	second, name := cpTake(t, w, first, firstName)
	if second.base != first.base {
		t.Fatal("the second checkpoint does not share the first's base")
	}
	// Forget the manifests, and take the full one away: only the kept
	// base can give the delta its files.
	w.jr.mu.Lock()
	w.jr.cache = nil
	w.jr.mu.Unlock()
	if err := os.Remove(filepath.Join(dir, StateDir, checkpointDir, "manifests", firstName)); err != nil {
		t.Fatal(err)
	}
	cp, unlock, err := w.lockCheckpoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	back, err := cp.loadManifest(name, "")
	if err != nil {
		t.Fatalf("the delta on a kept base does not read: %v", err)
	}
	if back.base != first.base || !reflect.DeepEqual(filesOf(back), filesOf(second)) {
		t.Fatal("the delta read back is not the second checkpoint on the kept base")
	}
	w.jr.mu.Lock()
	w.jr.cache, w.jr.kept = nil, nil
	w.jr.mu.Unlock()
	if _, err := cp.loadManifest(name, ""); err == nil {
		t.Fatal("a delta whose base is neither kept nor on disk read")
	}
}
