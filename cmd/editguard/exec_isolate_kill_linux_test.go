package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestExecIsolatedKilled: editguard exec, running a command isolated, is
// killed with SIGKILL while the command runs. The command goes on (it
// waits on a FIFO outside the tree), a person saves files in the tree (one
// in place, one by rename, as editors do), the command writes more and
// ends. The next editguard process to begin a command (here another exec),
// or state, finds the killed exec's command from its active record and
// ends it: the
// command's changes, in the overlay's upper layer, are put into the tree
// and recorded as its own (unended), the person's saves are not recorded
// and stay through rewind of the session, the session's reads do not move
// to them, and the overlay's directories are removed (but for a
// conflict's version: a file both changed keeps the person's, and the
// command's stays in the upper layer, named by the recovered result).
func TestExecIsolatedKilled(t *testing.T) {
	needIsolation(t)
	for _, conflict := range []bool{false, true} {
		name := "apart"
		if conflict {
			name = "conflict"
		}
		t.Run(name, func(t *testing.T) { testExecIsolatedKilled(t, conflict) })
	}
}

func testExecIsolatedKilled(t *testing.T, conflict bool) {
	dir, sync, isoBase := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(dir)
	t.Setenv("EDITGUARD_ISOLATE_DIR", isoBase)
	for name, data := range map[string]string{"f.txt": "f1\n", "gone.txt": "gone\n", "p.txt": "p1\n", "r.txt": "r1\n", "both.txt": "b1\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	for _, f := range []string{"f.txt", "p.txt", "r.txt", "both.txt"} {
		if code, out, errs := cliRun(t, dir, "read", f); code != 0 {
			t.Fatalf("read %s: exit %d\n%s%s", f, code, out, errs)
		}
	}
	ran, proceed := filepath.Join(sync, "ran"), filepath.Join(sync, "go")
	for _, f := range []string{ran, proceed} {
		if err := unix.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	late := "echo late > late.txt"
	if conflict {
		late += "\necho both-cmd > both.txt"
	}
	script := `echo f-cmd > f.txt
echo new > new.txt
rm gone.txt
echo ran > "$RAN"
read x < "$GO"
` + late
	cmd := editguardProcess(t, "--root", dir, "exec", "--isolate=on", "--", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RAN="+ran, "GO="+proceed)
	// A file, not a pipe: the command outlives exec and would hold a
	// pipe's writing end, and Wait with it.
	out, err := os.Create(filepath.Join(sync, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	// The command says it ran its first writes; should exec end first,
	// the FIFO is opened for writing here so that the read returns.
	said := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(ran)
		said <- b
	}()
	select {
	case b := <-said:
		if string(b) != "ran\n" {
			t.Fatalf("the command said %q", b)
		}
	case err := <-waited:
		if f, err := os.OpenFile(ran, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("exec ended before the command ran: %v\n%s", err, b)
	}
	// The command's first writes are in its overlay, not in the tree.
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "f1\n" {
		t.Fatalf("f.txt in the tree while the isolated command runs: %q", got)
	}
	act := activeRecord(t, dir)
	if act.Isolation == nil || act.Isolation.PID <= 0 || act.Isolation.Dir == "" {
		t.Fatalf("the command's active record does not say it runs isolated: %+v", act)
	}
	pidfd, err := unix.PidfdOpen(act.Isolation.PID, 0)
	if err != nil {
		t.Fatalf("pidfd_open of the command's process %d: %v", act.Isolation.PID, err)
	}
	defer unix.Close(pidfd)

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited

	// The person saves: p.txt in place, r.txt by rename, both.txt in
	// place (which the command then writes too, in the conflict case).
	os.WriteFile(filepath.Join(dir, "p.txt"), []byte("p-person\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".r.txt.swp"), []byte("r-person\n"), 0o644)
	if err := os.Rename(filepath.Join(dir, ".r.txt.swp"), filepath.Join(dir, "r.txt")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "both.txt"), []byte("b-person\n"), 0o644)

	// The command goes on, and ends.
	if err := os.WriteFile(proceed, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			break
		}
	}
	// Nothing of it reached the tree.
	if _, err := os.Lstat(filepath.Join(dir, "late.txt")); err == nil {
		t.Fatal("late.txt is in the tree before recovery")
	}

	// The next editguard process to begin a command ends it; or state,
	// which ends what recovery has left.
	if !conflict {
		if code, o, e := cliRun(t, dir, "exec", "--isolate=off", "--", "true"); code != 0 {
			t.Fatalf("the next exec: exit %d\n%s%s", code, o, e)
		}
	} else {
		code, o, e := cliRun(t, dir, "state")
		if code != 0 {
			t.Fatalf("state: exit %d\n%s%s", code, o, e)
		}
		kept := filepath.Join(act.Isolation.Dir, "upper", "both.txt")
		for _, want := range []string{"ended command " + act.ID, "4 change(s) recorded as its own (editguard log lists them), 3 made by someone else", "changed both.txt, but someone else had changed it meanwhile: their version stays; the command's is kept at " + kept} {
			if !strings.Contains(o, want) {
				t.Errorf("state does not say %q:\n%s", want, o)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, ".editguard", "checkpoints", "active", act.ID+".json")); err == nil {
		t.Errorf("the killed exec's command is still in progress after the next exec")
	}
	want := map[string]string{"f.txt": "f-cmd\n", "new.txt": "new\n", "late.txt": "late\n", "p.txt": "p-person\n", "r.txt": "r-person\n", "both.txt": "b-person\n"}
	for name, data := range want {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%s after recovery: %q, %v; want %q", name, got, err, data)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "gone.txt")); err == nil {
		t.Error("gone.txt, which the command removed, is still in the tree")
	}

	recorded := map[string]bool{}
	for _, r := range execLedger(t, dir) {
		if r.Tool == "exec" && r.Outcome == "ok" {
			recorded[r.Path] = true
		}
	}
	for _, p := range []string{"f.txt", "new.txt", "gone.txt", "late.txt"} {
		if !recorded[p] {
			t.Errorf("the command's change of %s is not in the ledger: %v", p, recorded)
		}
	}
	for _, p := range []string{"p.txt", "r.txt", "both.txt"} {
		if recorded[p] {
			t.Errorf("the person's save of %s is in the ledger as the command's", p)
		}
	}

	// The overlay: gone, or only the conflict's version kept.
	var left []string
	filepath.Walk(act.Isolation.Dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(act.Isolation.Dir, p)
			left = append(left, rel)
		}
		return nil
	})
	if conflict {
		if got, err := os.ReadFile(filepath.Join(act.Isolation.Dir, "upper", "both.txt")); err != nil || string(got) != "both-cmd\n" || len(left) != 1 {
			t.Errorf("the command's version of both.txt is not kept alone in the upper layer: %q, %v; left %q", got, err, left)
		}
	} else if _, err := os.Lstat(act.Isolation.Dir); err == nil {
		t.Errorf("the overlay's directory %s is still there: %q", act.Isolation.Dir, left)
	}

	// The session's reads did not move to the person's saves.
	for _, f := range []string{"p.txt", "r.txt"} {
		if code, out, errs := cliRun(t, dir, "write", f); code != exitConflict {
			t.Errorf("write of %s, which the session read before the person's save: exit %d, want %d\n%s%s", f, code, exitConflict, out, errs)
		}
	}
	// rewind of the session undoes the command's changes, not the person's.
	if code, out, errs := cliRun(t, dir, "rewind", "--session", defaultSession, "--yes"); code != 0 {
		t.Fatalf("rewind: exit %d\n%s%s", code, out, errs)
	}
	for name, data := range map[string]string{"f.txt": "f1\n", "gone.txt": "gone\n", "p.txt": "p-person\n", "r.txt": "r-person\n", "both.txt": "b-person\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != data {
			t.Errorf("%s after rewind: %q, %v; want %q", name, got, err, data)
		}
	}
	for _, name := range []string{"new.txt", "late.txt"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s, which the command created, is still there after rewind", name)
		}
	}
}

// activeRecord returns the one command in progress in the workspace dir,
// as its active record says.
func activeRecord(t *testing.T, dir string) (act struct {
	ID        string `json:"id"`
	Isolation *struct {
		Dir string `json:"dir"`
		PID int    `json:"pid"`
	} `json:"isolation"`
}) {
	t.Helper()
	active := filepath.Join(dir, ".editguard", "checkpoints", "active")
	ents, err := os.ReadDir(active)
	if err != nil || len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), ".json") {
		t.Fatalf("want one active record in %s: %v, %v", active, ents, err)
	}
	b, err := os.ReadFile(filepath.Join(active, ents[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &act); err != nil {
		t.Fatalf("active record: %v\n%s", err, b)
	}
	return act
}
