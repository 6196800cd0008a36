package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellCommandFails: a shell command that changes a file and exits
// with a failure (a failing build or test, a grep that finds nothing),
// run by each client's shell tool under init --hooks, is recorded as the
// one that succeeds is: its changes under its tool, no command left in
// progress, and the model told when it overwrote someone else's change.
// Claude Code sends PostToolUseFailure, not PostToolUse, after a Bash call
// whose command failed.
func TestShellCommandFails(t *testing.T) {
	for _, client := range []string{"claude-code", "gemini", "codex"} {
		t.Run(client, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a1\n"), 0o644)
			if client == "claude-code" {
				settings, _ := json.MarshalIndent(map[string]any{
					"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash"}},
				}, "", "  ")
				os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
				os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644)
			}
			initHooks(t, ws, client)
			tool, hookTool, input := "Bash", "Bash", func(cmd string) any { return map[string]any{"command": cmd, "description": "change a file"} }
			switch client {
			case "gemini":
				tool, hookTool, input = "run_shell_command", "run_shell_command", func(cmd string) any { return map[string]any{"command": cmd} }
			case "codex":
				tool, input = "exec_command", func(cmd string) any { return map[string]any{"cmd": cmd} }
			}
			shared := filepath.Join(ws, "shared.md")
			script := []Step{
				{Tool: tool, Input: input("echo a2 > a.txt && echo new > b.txt && exit 3")},
				{Tool: tool, Input: input("echo c > c.txt")},
				{Tool: tool, Input: input("echo 'the model wrote this' > shared.md")},
				{Tool: tool, Input: input("echo 'the model again' > shared.md; exit 4"), Before: personChange(shared, "a person's change\n")},
			}
			run := runShellClient(t, client, ws, script)
			recs, _ := shellRecords(t, ws, hookTool)
			for _, p := range []string{"a.txt", "b.txt", "c.txt", "shared.md"} {
				if !strings.Contains(recs[p], "echo") {
					t.Errorf("no %s record of %s with its command: %v", hookTool, p, recs)
				}
			}
			if !strings.Contains(recs["a.txt"], "exit 3") {
				t.Errorf("a.txt is recorded as changed by %q, not by the failing command", recs["a.txt"])
			}
			last := run.Results[3]
			text := last.Content + strings.Join(last.Parts, "") + last.Along
			if !strings.Contains(text, "overwrote changes someone else made") || !strings.Contains(text, "shared.md") {
				t.Errorf("the model was not told of the overwritten change: %q", truncate(text, 800))
			}
			out, _ := exec.Command(editguardBin(t), "--root", ws, "log").CombinedOutput()
			t.Logf("editguard log:\n%s", out)
			ents, _ := os.ReadDir(filepath.Join(ws, ".editguard", "checkpoints", "active"))
			for _, e := range ents {
				t.Errorf("a command is still in progress: %s", e.Name())
			}
		})
	}
}

// TestClaudeCodeBashDenied: a Bash call that Claude Code's permissions
// deny (a deny rule, or one that needs an approval nobody gives) gets
// PreToolUse, which begins its command, and no event after it but
// PostToolBatch: the command is ended there, records nothing as the
// command's (it did not run), and does not stay in progress beside the
// commands that follow.
func TestClaudeCodeBashDenied(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a1\n"), 0o644)
	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Bash(sed:*)"}, "deny": []string{"Bash(touch:*)"}},
	}, "", "  ")
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644)
	initHooks(t, ws, "claude-code")
	bash := func(cmd string) Step {
		return Step{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "a command"}}
	}
	script := []Step{
		bash("touch x.txt"),
		bash(`python3 -c "open('y.txt','w').write('y')"`),
		bash("sed -i s/a1/a2/ a.txt"),
	}
	run := runShellClient(t, "claude-code", ws, script)
	for i := range 2 {
		if !run.Results[i].IsError {
			t.Fatalf("step %d ran: %q; want it denied", i, run.Results[i].Content)
		}
	}
	for _, p := range []string{"x.txt", "y.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Fatalf("%s exists: a denied command ran", p)
		}
	}
	recs, _ := shellRecords(t, ws, "Bash")
	if len(recs) != 1 || !strings.Contains(recs["a.txt"], "sed -i") {
		t.Errorf("Bash records: %v; want only a.txt, by sed", recs)
	}
	ents, _ := os.ReadDir(filepath.Join(ws, ".editguard", "checkpoints", "active"))
	for _, e := range ents {
		t.Errorf("a command is still in progress: %s", e.Name())
	}
}
