package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHookToldOfRecoveredCommand: a command of a Claude Code session that
// never reported its end (here an exec in that session, killed with
// SIGKILL with its command after the command changed a file) is ended by
// the next Bash call's checkpoint, and that call's PreToolUse answer tells
// the model: the command, the file it changed, and that its read of the
// file no longer counts; the call after it hears nothing more.
func TestHookToldOfRecoveredCommand(t *testing.T) {
	egBin, hookBin := hookPrograms(t)
	root := t.TempDir()
	hookSocketDir(t) // its cleanup, which stops the server, runs before root's
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a1\n"), 0o644)
	const sid = "6f1d2c3b-4a5e-4f60-8b7c-9d0e1f2a3b4c"
	killedExec(t, egBin, root, "claude-"+sid)

	ev := func(session, id string) map[string]any {
		return map[string]any{"session_id": session, "cwd": root, "hook_event_name": "PreToolUse",
			"tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": "ls"}}
	}
	code, out, errs := fastHook(t, hookBin, root, ev(sid, "toolu_1"))
	if code != 0 {
		t.Fatalf("PreToolUse: exit %d, %q %q", code, out, errs)
	}
	for _, want := range []string{`"hookEventName":"PreToolUse"`, "never reported its end", "echo a2", "changed a.txt", "read a file again"} {
		if !strings.Contains(out, want) {
			t.Errorf("PreToolUse's answer does not say %q: %s", want, out)
		}
	}
	// Told once: the command is ended.
	if code, out, errs := fastHook(t, hookBin, root, ev(sid, "toolu_2")); code != 0 || out != "" {
		t.Errorf("the next Bash call: exit %d, %q %q; want no answer", code, out, errs)
	}
}

// killedExec runs an exec in root under session whose command changes
// a.txt, then kills it and its command with SIGKILL, leaving the command
// unended.
func killedExec(t *testing.T, egBin, root, session string) {
	t.Helper()
	ran := filepath.Join(t.TempDir(), "ran")
	if err := unix.Mkfifo(ran, 0o600); err != nil {
		t.Fatal(err)
	}
	ex := exec.Command(egBin, "--root", root, "--session", session, "exec", "--isolate=off", "--",
		"sh", "-c", "echo a2 > a.txt && echo > "+ran+" && exec sleep 600")
	ex.Dir = root
	ex.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(ran) // until the command has changed a.txt
	if err != nil {
		syscall.Kill(-ex.Process.Pid, syscall.SIGKILL)
		ex.Wait()
		t.Fatal(err)
	}
	f.Close()
	syscall.Kill(-ex.Process.Pid, syscall.SIGKILL)
	ex.Wait()
}

// TestExecToldOfRecoveredCommand: an exec that begins after another was
// killed with its command says on stderr that it ended that command, and
// records its change as the killed command's.
func TestExecToldOfRecoveredCommand(t *testing.T) {
	egBin, _ := hookPrograms(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a1\n"), 0o644)
	killedExec(t, egBin, root, "agent-1")
	t.Chdir(root)
	code, out, errs := cliRun(t, root, "--session", "agent-2", "exec", "--isolate=off", "--", "true")
	if code != 0 {
		t.Fatalf("exec: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "an earlier command of session agent-1 never reported its end") || !strings.Contains(errs, "1 change(s)") {
		t.Errorf("exec does not tell of the killed command: %q", errs)
	}
	code, out, _ = cliRun(t, root, "log", "--session", "agent-1")
	if code != 0 || !strings.Contains(out, "a.txt") {
		t.Errorf("the killed command's change is not recorded under its session:\n%s", out)
	}
}
