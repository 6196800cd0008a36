package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIsolationSweep: an exec killed (SIGKILL) after it made its overlay's
// directories and before a command's record named them (killed during the
// command's first checkpoint) leaves them behind; the next isolation made
// under the same directory removes them, even with the overlay's work
// directory left unreadable as the kernel makes it, and removes nothing
// else: not the directories of an exec still at work (its lock held), and
// not those a command's record names (claimed: recovery's to remove).
func TestIsolationSweep(t *testing.T) {
	if os.Getenv("EDITGUARD_SWEEP_CHILD") != "" {
		// The killed exec: make the directories, say where, and wait
		// for the kill.
		iso, err := newIsolation(os.Getenv("EDITGUARD_SWEEP_ROOT"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(iso.work, "work"), 0); err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString(iso.dir + "\n")
		os.Stdin.Read(make([]byte, 1))
		t.Fatal("not killed")
	}
	root, base := t.TempDir(), t.TempDir()
	t.Setenv("EDITGUARD_ISOLATE_DIR", base)
	child := exec.Command(os.Args[0], "-test.run=^TestIsolationSweep$")
	child.Env = append(os.Environ(), "EDITGUARD_SWEEP_CHILD=1", "EDITGUARD_SWEEP_ROOT="+root)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("the child made no isolation: %v", err)
	}
	killed := strings.TrimSuffix(line, "\n")
	if filepath.Dir(killed) != base {
		t.Fatalf("the child's isolation is %s, not under %s", killed, base)
	}

	// The child is at work: its directories stay.
	working, err := newIsolation(root)
	if err != nil {
		t.Fatal(err)
	}
	defer working.discard()
	exists(t, killed, true)

	// A claimed isolation: a command's record names it.
	claimed, err := newIsolation(root)
	if err != nil {
		t.Fatal(err)
	}
	claimed.claim()
	defer claimed.discard()

	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	exists(t, killed, true) // nothing sweeps until the next isolation

	next, err := newIsolation(root)
	if err != nil {
		t.Fatal(err)
	}
	defer next.discard()
	exists(t, killed, false)
	for _, iso := range []*isolation{working, claimed, next} {
		exists(t, iso.upper, true)
		exists(t, iso.work, true)
	}
	if _, err := os.Stat(filepath.Join(claimed.dir, pendingName)); !os.IsNotExist(err) {
		t.Errorf("a claimed isolation keeps its %s: %v", pendingName, err)
	}

	// An exec that ends discards its own, lock and all; the next sweep
	// finds nothing of it.
	working.discard()
	exists(t, working.dir, false)
	ents, _ := os.ReadDir(base)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 {
		t.Errorf("left under the isolation directory: %v; want the claimed and the last one's", names)
	}
}

func exists(t *testing.T, p string, want bool) {
	t.Helper()
	_, err := os.Lstat(p)
	if got := err == nil; got != want {
		t.Errorf("%s exists: %v, want %v (%v)", p, got, want, err)
	}
}
