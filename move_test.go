package editguard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

func exists(t *testing.T, dir, name string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

func TestMove(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "alpha\n")
	writeFile(t, dir, "b.txt", "beta\n")
	s := w.NewSession("agent")

	if _, err := s.Move(ctx, "a.txt", "sub/c.txt", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("move without a read: %v, want NOT_READ", err)
	}
	// A partial read of the source is enough: a move discards nothing.
	if _, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(ctx, "a.txt", "b.txt", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("move onto an existing file: %v, want STALE_FILE", err)
	}
	if _, err := s.Move(ctx, "a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true}); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("overwrite of an unread destination: %v, want NOT_READ", err)
	}
	if _, err := s.Move(ctx, "a.txt", ".git/config", nil); errorCode(err) != editguard.CodeProtectedPath {
		t.Fatalf("move into .git: %v, want PROTECTED_PATH", err)
	}
	if _, err := s.Move(ctx, "a.txt", "../out.txt", nil); errorCode(err) != editguard.CodeOutsideRoot {
		t.Fatalf("move out of the root: %v, want OUTSIDE_ROOT", err)
	}
	if _, err := s.Move(ctx, "a.txt", ".editguard/x", nil); err == nil {
		t.Fatal("move into .editguard succeeded")
	}
	dry, err := s.Move(ctx, "a.txt", "sub/c.txt", &editguard.MoveOptions{DryRun: true})
	if err != nil || !dry.DryRun || exists(t, dir, "sub") {
		t.Fatalf("dry run = %+v, %v (sub exists %v)", dry, err, exists(t, dir, "sub"))
	}
	res, err := s.Move(ctx, "a.txt", "sub/c.txt", nil)
	if err != nil || !res.Created || res.MovedFrom != "a.txt" || res.SourceVersion == "" || res.BackupVersion == "" {
		t.Fatalf("Move = %+v, %v", res, err)
	}
	if exists(t, dir, "a.txt") || readFile(t, dir, "sub/c.txt") != "alpha\n" {
		t.Fatal("the file did not move")
	}
	// The baseline followed the file: it can be edited at once, and the
	// old name is unknown to the session.
	if _, err := s.Edit(ctx, "sub/c.txt", []editguard.Edit{{OldString: "alpha", NewString: "ALPHA"}}, nil); err != nil {
		t.Fatalf("edit after the move: %v", err)
	}
	// History: the source's version restores the file under its old name
	// (no read needed: it does not exist), the destination's records that
	// it did not exist.
	other := w.NewSession("other")
	if _, err := other.Restore(ctx, "a.txt", res.SourceVersion, nil); err != nil || readFile(t, dir, "a.txt") != "alpha\n" {
		t.Fatalf("restore of the source: %v", err)
	}
	vs, err := w.History("sub/c.txt")
	if err != nil || len(vs) != 2 || !vs[1].Absent || vs[1].ID != res.BackupVersion {
		t.Fatalf("history of the destination = %+v, %v", vs, err)
	}

	// Overwrite, after reading the destination in full.
	if _, err := s.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	res, err = s.Move(ctx, "a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true})
	if err != nil || res.Created || res.BackupVersion == "" {
		t.Fatalf("overwriting Move = %+v, %v", res, err)
	}
	if exists(t, dir, "a.txt") || readFile(t, dir, "b.txt") != "alpha\n" {
		t.Fatal("the overwriting move did not happen")
	}
	if _, err := other.Restore(ctx, "b.txt", res.BackupVersion, &editguard.RestoreOptions{Precondition: &editguard.Precondition{ExpectedSHA256: res.SHA256}}); err != nil || readFile(t, dir, "b.txt") != "beta\n" {
		t.Fatalf("restore of the displaced destination: %v", err)
	}

	// A source changed since the read is refused, and nothing moves.
	writeFile(t, dir, "d.txt", "delta\n")
	if _, err := s.Read(ctx, "d.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "d.txt", "changed\n")
	if _, err := s.Move(ctx, "d.txt", "e.txt", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("move of a changed source: %v, want STALE_FILE", err)
	}
	if exists(t, dir, "e.txt") {
		t.Fatal("e.txt created by a refused move")
	}

	// The ledger verifies, history included, and replays.
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	rp, err := w.NewReplayer("agent")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []editguard.Code{editguard.CodeNotRead, editguard.CodeStaleFile} {
		if _, err := rp.Move("a.txt", [2]string{"sub/c.txt", "b.txt"}[i], nil); errorCode(err) != want {
			t.Fatalf("replayed call %d: %v, want %s", i, err, want)
		}
	}
}

// TestMoveOppositeDirections runs moves between two directories in both
// directions at once: the locks are taken in one order, so none deadlocks.
func TestMoveOppositeDirections(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	for i := range 20 {
		writeFile(t, dir, filepathJoin("x", i), "x\n")
		writeFile(t, dir, filepathJoin("y", i), "y\n")
	}
	done := make(chan error, 2)
	for _, dirs := range [][2]string{{"x", "y"}, {"y", "x"}} {
		go func() {
			s := w.NewSession("mover-" + dirs[0])
			for i := range 20 {
				src, dst := filepathJoin(dirs[0], i), filepathJoin(dirs[1], i+100)
				if _, err := s.Move(ctx, src, dst, &editguard.MoveOptions{Precondition: &editguard.Precondition{ExpectedSizeBytes: ptr(int64(2))}}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func filepathJoin(d string, i int) string { return fmt.Sprintf("%s/f%d.txt", d, i) }

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
	if err := os.WriteFile(os.Getenv(workerOutEnv)+".ready", nil, 0o644); err != nil {
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
	_, dir := newWorkspace(t)
	content := strings.Repeat("a line of the file that moves\n", 2000)
	writeFile(t, dir, "x/f.txt", content)
	if err := os.MkdirAll(filepath.Join(dir, "y"), 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	where := map[string]int{}
	for i := range kills {
		out := filepath.Join(t.TempDir(), "out")
		cmd := startWorker(t, "move", dir, "", out)
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
