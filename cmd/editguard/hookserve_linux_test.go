package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/hookwire"
)

// hookPrograms returns the paths of copies of editguard and
// editguard-hook in one directory of the test's own, as go install puts
// them (copyPrograms).
func hookPrograms(t testing.TB) (editguardBin, hookBin string) {
	t.Helper()
	return copyPrograms(t)
}

// hookSocketDir gives the test a socket directory of its own (through
// XDG_RUNTIME_DIR), and stops every hook server started in it at the end.
func hookSocketDir(t *testing.T) string {
	t.Helper()
	run, err := os.MkdirTemp("", "eghk")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Cleanup(func() {
		locks, _ := filepath.Glob(filepath.Join(run, "editguard", "*.lock"))
		for _, l := range locks {
			if pid := serverPID(l); pid > 0 && pid != os.Getpid() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		os.RemoveAll(run)
	})
	return filepath.Join(run, "editguard")
}

// serverPID returns the pid a hook server wrote into its lock file, if it
// still holds the lock.
func serverPID(lock string) int {
	data, _ := os.ReadFile(lock)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if pid <= 0 || !alive(pid) {
		return 0
	}
	return pid
}

// alive reports whether process pid runs (a zombie does not: a server
// whose parent exited may wait for a container's init to reap it).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// fastHook runs the editguard-hook program at bin with one Claude Code
// event and returns its exit code, stdout and stderr.
func fastHook(t *testing.T, bin, root string, event map[string]any, env ...string) (int, string, string) {
	t.Helper()
	data, _ := json.Marshal(event)
	cmd := exec.Command(bin, "--root", root)
	cmd.Stdin = bytes.NewReader(data)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// waitServer waits until the hook server of root listens, and returns its
// pid.
func waitServer(t *testing.T, root string) int {
	t.Helper()
	sock, _, _, err := hookwire.Socket(root)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Lstat(sock); err == nil && fi.Mode().Type() == os.ModeSocket {
			// The socket may be a stopped server's, not yet replaced
			// by the one holding the lock: ready once it answers.
			if pid := serverPID(sock + ".lock"); pid > 0 {
				if c, err := net.Dial("unix", sock); err == nil {
					c.Close()
					return pid
				}
			}
		}
	}
	t.Fatal("no hook server started")
	return 0
}

// TestHookServer runs editguard-hook as a client would: the first event is
// answered by editguard hook itself and starts the server; the next ones
// are answered by the server, with the same answers; a replaced program or
// state directory makes the server step aside.
func TestHookServer(t *testing.T) {
	egBin, hookBin := hookPrograms(t)
	sockDir := hookSocketDir(t)
	root := t.TempDir()
	a := filepath.Join(root, "a.go")
	os.WriteFile(a, []byte("package a\n\nvar X = 1\n"), 0o644)

	// No server yet: editguard hook answers (NOT_READ), and a server
	// starts.
	code, out, _ := fastHook(t, hookBin, root, ev("PreToolUse", "Edit", a, nil))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "NOT_READ") {
		t.Fatalf("first event: exit %d, %s", code, out)
	}
	pid := waitServer(t, root)

	// From here on only the server can answer: this copy of
	// editguard-hook has no editguard next to it, and none on PATH.
	lone := filepath.Join(t.TempDir(), "editguard-hook")
	data, _ := os.ReadFile(hookBin)
	os.WriteFile(lone, data, 0o755)
	noPath := "PATH=" + t.TempDir()

	if code, out, errs := fastHook(t, lone, root, ev("PostToolUse", "Read", a, nil), noPath); code != 0 || out != "" {
		t.Fatalf("Read through the server: exit %d, %q %q", code, out, errs)
	}
	if code, out, _ := fastHook(t, lone, root, ev("PreToolUse", "Edit", a, nil), noPath); code != 0 || out != "" {
		t.Fatalf("Edit after the Read: exit %d, %q", code, out)
	}
	os.WriteFile(a, []byte("package a\n\nvar X = 2\n"), 0o644)
	if code, out, _ := fastHook(t, lone, root, ev("PostToolUse", "Edit", a, nil), noPath); code != 0 || out != "" {
		t.Fatalf("after the Edit: exit %d, %q", code, out)
	}
	// A change by someone else, then an Edit: STALE_FILE from the server.
	os.WriteFile(a, []byte("package a\n\nvar X = 3 // a person\n"), 0o644)
	code, out, _ = fastHook(t, lone, root, ev("PreToolUse", "Edit", a, nil), noPath)
	if code != 0 || !strings.Contains(out, "STALE_FILE") || !strings.Contains(out, "a person") {
		t.Fatalf("stale Edit: exit %d, %s", code, out)
	}
	// The ledger has the Edit, from the server's workspace; history has
	// what it replaced.
	var log bytes.Buffer
	if c := cli(t, root, &log, "log", "--json"); c != 0 || !strings.Contains(log.String(), `"tool":"hook:Edit","path":"a.go","args":{"path":"`+a+`"},"observed"`) {
		t.Fatalf("log: exit %d\n%s", c, log.String())
	}
	var hist bytes.Buffer
	if c := cli(t, root, &hist, "history", "a.go"); c != 0 || !strings.Contains(hist.String(), "v0") {
		t.Fatalf("history: exit %d\n%s", c, hist.String())
	}

	// Parallel events (a client's parallel tool calls) are all answered.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := ev("PostToolUse", "Read", a, nil)
			e["session_id"] = "parallel-" + strconv.Itoa(i)
			if code, out, errs := fastHook(t, lone, root, e, noPath); code != 0 || out != "" {
				t.Errorf("parallel Read %d: exit %d, %q %q", i, code, out, errs)
			}
		}()
	}
	wg.Wait()

	// From here on, a session that has read nothing: NOT_READ, whoever
	// answers.
	unread := ev("PreToolUse", "Edit", a, nil)
	unread["session_id"] = "never-read"
	notRead := func(what string, bin string, env ...string) {
		t.Helper()
		if code, out, errs := fastHook(t, bin, root, unread, env...); code != 0 || !strings.Contains(out, "NOT_READ") {
			t.Fatalf("%s: exit %d, %q %q", what, code, out, errs)
		}
	}

	// The state directory replaced under the server: it must not write
	// into the old one. It asks the client to run editguard hook, which
	// this copy cannot find: exit 2, which every client takes as "blocked".
	state := filepath.Join(root, ".editguard")
	if err := os.Rename(state, state+".old"); err != nil {
		t.Fatal(err)
	}
	code, _, errs := fastHook(t, lone, root, unread, noPath)
	if code != 2 || !strings.Contains(errs, "cannot find the editguard program") {
		t.Fatalf("after the state directory moved: exit %d, %q", code, errs)
	}
	waitGone(t, pid)
	os.Rename(state+".old", state)
	// With editguard next to it, the event is answered, and a new server
	// starts.
	notRead("after the server stopped", hookBin)
	pid = waitServer(t, root)
	notRead("the new server", lone, noPath)

	// A new editguard program: the running server steps aside, and the
	// new program answers.
	data, _ = os.ReadFile(egBin)
	os.Remove(egBin)
	os.WriteFile(egBin, data, 0o755)
	notRead("after a new program", hookBin)
	waitGone(t, pid)

	// A socket directory others can enter is not used: the event is
	// answered by editguard hook, and no server is started.
	for _, l := range mustGlob(t, filepath.Join(sockDir, "*.lock")) {
		if pid := serverPID(l); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
			waitGone(t, pid)
		}
	}
	os.Chmod(sockDir, 0o755)
	notRead("open socket directory", hookBin)
	time.Sleep(300 * time.Millisecond)
	for _, l := range mustGlob(t, filepath.Join(sockDir, "*.lock")) {
		if serverPID(l) > 0 {
			t.Fatal("a server started in a socket directory open to other users")
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitGone waits for process pid to exit.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return
		}
	}
	t.Fatalf("hook server %d still runs", pid)
}

// TestHookServerIdle: a server stops when no event comes.
func TestHookServerIdle(t *testing.T) {
	hookSocketDir(t)
	root := t.TempDir()
	done := make(chan int)
	go func() {
		var out, errb bytes.Buffer
		done <- run(t.Context(), []string{"--root", root, "hook", "--serve", "--idle", "200ms"}, nil, &out, &errb)
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("an idle server did not stop")
	}
	sock, _, _, _ := hookwire.Socket(root)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
}
