package durability_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// moveWorker moves f.txt between the directories x and y until it is
// killed.
func moveWorker(dir string) error {
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return err
	}
	s := w.NewSession("mover")
	from, to := "x/f.txt", "y/f.txt"
	if _, err := os.Stat(filepath.Join(dir, from)); err != nil {
		from, to = to, from
	}
	if _, err := s.Read(ctx, from, &editguard.ReadOptions{Limit: 1}); err != nil {
		return err
	}
	if err := os.WriteFile(os.Getenv(testutil.WorkerOutEnv)+".ready", nil, 0o644); err != nil {
		return err
	}
	for {
		if _, err := s.Move(ctx, from, to, nil); err != nil {
			return err
		}
		from, to = to, from
	}
}

// TestKill9DuringMove kills a process that moves a file back and forth
// between two directories with SIGKILL at random moments. After every kill
// the content must be whole under exactly one of the two names, and the
// ledger, once the next Open has recovered, must say it is there.
func TestKill9DuringMove(t *testing.T) {
	kills := 120
	if testing.Short() {
		kills = 30
	}
	_, dir := testutil.NewWorkspace(t)
	content := strings.Repeat("a line of the file that moves\n", 2000)
	testutil.WriteFile(t, dir, "x/f.txt", content)
	if err := os.MkdirAll(filepath.Join(dir, "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	where := map[string]int{}
	// On a busy machine a kill may often land before the worker's first
	// move: the kills go on past their number, up to a deadline, until
	// the file has been seen under both names.
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < kills || len(where) < 2 && time.Now().Before(deadline); i++ {
		out := filepath.Join(t.TempDir(), "out")
		cmd := testutil.StartWorker(t, "move", dir, "", out)
		waitFor(t, func() bool { _, err := os.Stat(out + ".ready"); return err == nil })
		time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("worker ended before the kill: %v\n%s", err, cmd.Stdout)
		}
		var found []string
		for _, name := range []string{"x/f.txt", "y/f.txt"} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != content {
				t.Fatalf("after kill %d: %s holds %d bytes, not the whole content", i, name, len(data))
			}
			found = append(found, name)
		}
		if len(found) != 1 {
			t.Fatalf("after kill %d: the content is under %v, want exactly one name", i, found)
		}
		where[found[0]]++
		// The ledger accounts for every move made, the one killed
		// before its records included: after the next Open, its last
		// recorded destination is where the file is.
		w, err := editguard.Open(dir, nil)
		if err != nil {
			t.Fatalf("after kill %d: Open: %v", i, err)
		}
		last := "x/f.txt"
		w.Log(editguard.LogFilter{Tool: "move_file"}, func(r *editguard.LedgerRecord) error {
			if r.Outcome == "ok" && r.SHA256After != "" {
				last = r.Path
			}
			return nil
		})
		w.Close()
		if last != found[0] {
			t.Fatalf("after kill %d: the file is at %s, but the ledger's last move took it to %s", i, found[0], last)
		}
	}
	if len(where) < 2 {
		t.Errorf("the content was only ever found at %v: the kills did not land on moves", where)
	}
	t.Logf("%d kills; content found at %v", kills, where)
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir after the kills: %v", err)
	}
}
