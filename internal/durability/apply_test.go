package durability_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/testutil"
)

// bigVersionFile is file f at version v: a first line naming the version,
// then about n bytes that are the same in every version.
func bigVersionFile(f string, v, n int) string {
	body := fmt.Sprintf("%s body line, the same in every version\n", f)
	return fmt.Sprintf("%s version %08d\n", f, v) + strings.Repeat(body, n/len(body))
}

// applyWorker applies patches that move three files from version v to v+1
// together, until it is killed.
func applyWorker(dir string) error {
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return err
	}
	s := w.NewSession("applier")
	names := []string{"one.txt", "two.txt", "three.txt"}
	if err := os.WriteFile(os.Getenv(testutil.WorkerOutEnv)+".ready", nil, 0o644); err != nil {
		return err
	}
	for {
		v, err := fileVersion(filepath.Join(dir, names[0]))
		if err != nil {
			return err
		}
		for _, n := range names {
			if _, err := s.Read(ctx, n, &editguard.ReadOptions{Limit: 1}); err != nil {
				return err
			}
		}
		if _, err := s.ApplyPatch(ctx, versionPatch(names, v), nil); err != nil {
			return err
		}
	}
}

// versionPatch moves each file from version v to v+1.
func versionPatch(names []string, v int) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n")
	for _, n := range names {
		fmt.Fprintf(&b, "*** Update File: %s\n@@\n-%s version %08d\n+%s version %08d\n", n, n, v, n, v+1)
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

func fileVersion(p string) (int, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	i := strings.LastIndex(line, " ")
	return strconv.Atoi(line[i+1:])
}

// TestKill9DuringApply kills processes applying patches to three files at
// random moments: 60 kills on 1 MiB files by default, 200 on 4 MiB files
// with EDITGUARD_FULL=1 (see docs/RELIABILITY.md). After every kill, opening the workspace (which rolls
// back an unfinished transaction) must find the three files at one and the
// same version, each whole; and no journal or temporary file may remain
// after the next successful patch.
func TestKill9DuringApply(t *testing.T) {
	size, kills, budget := 1<<20, 60, 60*time.Second
	switch {
	case os.Getenv("EDITGUARD_FULL") != "":
		size, kills, budget = 4<<20, 200, 10*time.Minute
	case testing.Short():
		size, kills, budget = 256<<10, 30, 20*time.Second
	}
	_, dir := testutil.NewWorkspace(t)
	names := []string{"one.txt", "two.txt", "three.txt"}
	for _, n := range names {
		testutil.WriteFile(t, dir, n, bigVersionFile(n, 0, size))
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	start := func() *exec.Cmd {
		out := filepath.Join(t.TempDir(), "out")
		cmd := testutil.StartWorker(t, "apply", dir, "", out)
		waitFor(t, func() bool { _, err := os.Stat(out + ".ready"); return err == nil })
		return cmd
	}
	// Calibrate: how long one patch of the three files takes here, so
	// that the kills spread over whole transactions.
	cmd := start()
	t0 := time.Now()
	waitFor(t, func() bool { v, _ := fileVersion(filepath.Join(dir, names[0])); return v >= 3 })
	perPatch := time.Since(t0) / 3
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if w, err := editguard.Open(dir, nil); err == nil {
		w.Close()
	}
	t.Logf("one patch of three %d KiB files takes about %v", size>>10, perPatch)
	deadline := time.Now().Add(budget)
	seen := map[int]bool{}
	done := 0
	// On a busy machine a kill may often land outside a patch: the kills
	// go on past the budget, up to a longer deadline, until they have
	// seen patches in progress.
	hardDeadline := deadline.Add(2 * time.Minute)
	for ; done < kills && time.Now().Before(deadline) || len(seen) < 3 && time.Now().Before(hardDeadline); done++ {
		cmd := start()
		time.Sleep(time.Duration(rng.Int64N(int64(3 * perPatch))))
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("worker ended before the kill: %v\n%s", err, cmd.Stdout)
		}
		w, err := editguard.Open(dir, nil)
		if err != nil {
			t.Fatalf("after kill %d: Open: %v", done, err)
		}
		w.Close()
		v0 := -1
		for _, n := range names {
			data, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatalf("after kill %d: %v", done, err)
			}
			v, err := fileVersion(filepath.Join(dir, n))
			if err != nil || string(data) != bigVersionFile(n, v, size) {
				t.Fatalf("after kill %d: %s is not one whole version (%v)", done, n, err)
			}
			if v0 >= 0 && v != v0 {
				t.Fatalf("after kill %d: mixed state: %s at version %d, %s at %d", done, names[0], v0, n, v)
			}
			v0 = v
		}
		seen[v0] = true
	}
	if len(seen) < 3 {
		t.Errorf("only versions %v were seen after %d kills: the kills did not land on running patches", seen, done)
	}
	t.Logf("%d kills; %d distinct versions seen, never a mixed state", done, len(seen))

	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("after")
	for _, n := range names {
		if _, err := s.Read(ctx, n, &editguard.ReadOptions{Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	v, _ := fileVersion(filepath.Join(dir, names[0]))
	if _, err := s.ApplyPatch(ctx, versionPatch(names, v), nil); err != nil {
		t.Fatal(err)
	}
	if j := testutil.Journals(t, dir); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
	testutil.AssertNoTemp(t, dir)
	if _, err := editguard.VerifyDir(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("VerifyDir: %v", err)
	}
}

// TestApplyPatchFaultAtEveryStep fails each file-system call of a patch's
// commit in turn (and each step of its history saves): every time the
// tree is either all as before (with an error) or all as after (without),
// and no journal is left. The patch of four files fsyncs each; the one of
// ten makes them durable with one syncfs (bulk), which is failed too.
func TestApplyPatchFaultAtEveryStep(t *testing.T) {
	t.Run("four files", func(t *testing.T) {
		faultEveryStep(t, func(t *testing.T) (*editguard.Workspace, string, *editguard.Session, string, map[string]string) {
			w, dir, s := testutil.ApplyWorkspace(t)
			return w, dir, s, testutil.ApplyPatchText, testutil.ApplyAfter
		})
	})
	t.Run("ten files", func(t *testing.T) {
		faultEveryStep(t, func(t *testing.T) (*editguard.Workspace, string, *editguard.Session, string, map[string]string) {
			return testutil.BulkPatch(t, 10)
		})
	})
}

func faultEveryStep(t *testing.T, setup func(t *testing.T) (*editguard.Workspace, string, *editguard.Session, string, map[string]string)) {
	ctx := context.Background()
	// Count the calls of a clean run.
	calls, histSteps, syncfs := 0, 0, 0
	{
		w, _, s, patch, _ := setup(t)
		testutil.SetFaults(w, func(c *atomicfile.Call) error {
			calls++
			if c.Op == "syncfs" {
				syncfs++
			}
			return nil
		}, func(op, name string) error { histSteps++; return nil }, nil)
		if _, err := s.ApplyPatch(ctx, patch, nil); err != nil {
			t.Fatal(err)
		}
	}
	if calls < 10 || histSteps < 5 {
		t.Fatalf("a clean run made %d calls and %d history steps: the hooks do not see the commit", calls, histSteps)
	}
	failed, succeeded := 0, 0
	check := func(t *testing.T, dir string, before, after map[string]string, err error) {
		t.Helper()
		got := fmt.Sprint(testutil.Tree(t, dir))
		switch {
		case err != nil && got == fmt.Sprint(before):
			failed++
		case err == nil && got == fmt.Sprint(after):
			succeeded++
		default:
			t.Fatalf("error %v, and the tree is neither before nor after:\n%s", err, got)
		}
		if j := testutil.Journals(t, dir); len(j) != 0 {
			t.Fatalf("journals left: %v", j)
		}
	}
	for k := 1; k <= calls; k++ {
		t.Run(fmt.Sprintf("call %d", k), func(t *testing.T) {
			w, dir, s, patch, after := setup(t)
			before := testutil.Tree(t, dir)
			n := 0
			testutil.SetFaults(w, func(c *atomicfile.Call) error {
				if n++; n == k {
					return syscall.EIO
				}
				return nil
			}, nil, nil)
			_, err := s.ApplyPatch(ctx, patch, nil)
			testutil.SetFaults(w, nil, nil, nil)
			check(t, dir, before, after, err)
		})
	}
	for k := 1; k <= histSteps; k++ {
		t.Run(fmt.Sprintf("history step %d", k), func(t *testing.T) {
			w, dir, s, patch, after := setup(t)
			before := testutil.Tree(t, dir)
			n := 0
			testutil.SetFaults(w, nil, func(op, name string) error {
				if n++; n == k {
					return syscall.EIO
				}
				return nil
			}, nil)
			_, err := s.ApplyPatch(ctx, patch, nil)
			testutil.SetFaults(w, nil, nil, nil)
			check(t, dir, before, after, err)
		})
	}
	t.Logf("%d commit calls (%d of them syncfs) and %d history steps each failed in turn: %d times all before, %d times all after (a fault after the swap is a warning)", calls, syncfs, histSteps, failed, succeeded)
}
