package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// TestExecUsesHookServerJournal: with a hook server serving the root,
// exec has the server take both its checkpoints, from the server's change
// journal, and records what the command changed; with EDITGUARD_NO_WATCH=1
// exec takes them itself, both full scans, and records the same.
func TestExecUsesHookServerJournal(t *testing.T) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		t.Skip(editguard.NoWatchEnv + "=1: the journal is what this tests")
	}
	hookSocketDir(t)
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	// The server's workspace is w, whose checkpoints are counted.
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var out, errb bytes.Buffer
		done <- serveHooks(ctx, &env{root: dir, sessionName: defaultSession, stdin: strings.NewReader(""), stdout: &out, stderr: &errb, ws: w}, time.Hour)
	}()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(20 * time.Second); hookServerJournal(dir) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the hook server's journal does not answer")
		}
	}
	exec := func(script string) string {
		t.Helper()
		var out bytes.Buffer
		e := &env{root: dir, sessionName: defaultSession, stdin: strings.NewReader(""), stdout: &out, stderr: &out}
		defer e.close()
		if err := runExec(context.Background(), e, []string{"--", "sh", "-c", script}); err != nil {
			t.Fatalf("exec %s: %v\n%s", script, err, out.String())
		}
		return out.String()
	}
	exec("echo b > a.txt")
	full0, j0 := w.CheckpointScans()
	out := exec("echo c > a.txt; mkdir -p d/e; echo x > d/e/y")
	full, j := w.CheckpointScans()
	if full != full0 || j != j0+2 {
		t.Fatalf("second exec: %d full scans, %d from the journal; want 0 and 2", full-full0, j-j0)
	}
	for _, want := range []string{"changed a.txt", "created d/e/y"} {
		if !strings.Contains(out, want) {
			t.Fatalf("exec's summary lacks %q:\n%s", want, out)
		}
	}
	t.Setenv(editguard.NoWatchEnv, "1")
	full0, j0 = w.CheckpointScans()
	out = exec("rm d/e/y")
	if full, j := w.CheckpointScans(); j != j0 || full != full0 {
		t.Fatalf("with %s=1: the server took %d full scans, %d from the journal; want none (exec takes them)", editguard.NoWatchEnv, full-full0, j-j0)
	}
	if !strings.Contains(out, "deleted d/e/y") {
		t.Fatalf("exec's summary lacks the deletion:\n%s", out)
	}
}
