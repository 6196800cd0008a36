package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pathWithoutEditguard is this process's PATH without the directories that
// hold an editguard or editguard-hook program.
func pathWithoutEditguard() string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		_, err1 := os.Stat(filepath.Join(d, "editguard"))
		_, err2 := os.Stat(filepath.Join(d, "editguard-hook"))
		if err1 != nil && err2 != nil {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// editguardWithPath runs editguard with args and PATH set to path, and
// returns its exit code and output.
func editguardWithPath(t testing.TB, path string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(editguardBin(t), args...)
	cmd.Env = append(os.Environ(), "PATH="+path)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// initBareNamesMissing runs "editguard init CLIENT --bare-names" (and
// args) on ws with neither program on PATH: init writes the names alone,
// then finds it cannot run them, and must say so and exit 1. doctor then
// reports the same problem.
func initBareNamesMissing(t testing.TB, ws, client string, args ...string) {
	t.Helper()
	path := pathWithoutEditguard()
	code, out := editguardWithPath(t, path, append([]string{"--root", ws, "init", client, "--bare-names"}, args...)...)
	t.Logf("editguard init %s %s --bare-names, editguard not on PATH: exit %d\n%s", client, strings.Join(args, " "), code, out)
	if code != 1 || !strings.Contains(out, "editguard: the setup init wrote does not work: ") || !strings.Contains(out, "by its name alone, and it is not on this PATH") ||
		!strings.Contains(out, "is not guarded by editguard") {
		t.Errorf("init with the programs missing: exit %d, want 1 and the reason", code)
	}
	code, out = editguardWithPath(t, path, "--root", ws, "doctor", client)
	t.Logf("editguard doctor %s, editguard not on PATH: exit %d\n%s", client, code, out)
	if code != 1 || !strings.Contains(out, "PROBLEM "+client+" program: ") {
		t.Errorf("doctor with the programs missing: exit %d, want 1 and a program problem", code)
	}
	// With the programs on PATH, the same configuration works.
	code, out = editguardWithPath(t, filepath.Dir(editguardBin(t))+string(os.PathListSeparator)+path, "--root", ws, "doctor", client)
	t.Cleanup(func() { stopHookServers(t, ws) })
	t.Logf("editguard doctor %s, editguard on PATH: exit %d\n%s", client, code, out)
	if code != 0 || strings.Contains(out, "PROBLEM") {
		t.Errorf("doctor with the programs on PATH: exit %d, want 0", code)
	}
}

// A bare-names setup whose programs are not on the client's PATH: init and
// doctor say so (initBareNamesMissing), and the client, run with that PATH,
// must fail closed or show why. The hook commands init writes end in
// "|| exit 2", so a hook program the shell cannot find blocks the tool with
// the shell's message, which the model reads and the transcript shows;
// without it Claude Code and Codex let the tool through unguarded.

// TestMissingClaudeCodeHooks: Claude Code blocks a Write when
// editguard-hook cannot be started, and the person's change stays.
func TestMissingClaudeCodeHooks(t *testing.T) {
	ws, a := claudeHookProject(t)
	initBareNamesMissing(t, ws, "claude-code", "--hooks")

	const person = "package a\n\nvar X = 1 // a person's change\n"
	script := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{Tool: "Write", Input: map[string]any{"file_path": a, "content": "package a\n\nvar X = 2\n"}, Before: personChange(a, person)},
	}
	model := startFakeModel(t, "editguard", script)
	stdout, stderr, err := runClaudeWithPath(t, ws, claudeHome(t, ws, true), model.url, pathWithoutEditguard())
	run := &ClientRun{Results: model.Results(), Offered: model.Offered(), Requests: model.Requests(), Stdout: stdout, Stderr: stderr}
	if err != nil || len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("claude: %v; %d results for %d steps", err, len(run.Results), len(script))
	}
	logRun(t, run)
	w := run.Results[1]
	if !w.IsError || !strings.Contains(w.Content, "editguard-hook: not found") || !strings.Contains(run.Results[0].Along, "editguard-hook: not found") {
		t.Errorf("the Write with editguard-hook missing: is_error=%v %q; want it blocked with the reason", w.IsError, w.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != person {
		t.Errorf("a.go = %q; the person's change must stay", got)
	}
}

// TestMissingCodexHooks: Codex blocks apply_patch when editguard-hook
// cannot be started (init codex writes the MCP server and the hooks).
func TestMissingCodexHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	const before = "package a\n\nvar X = 1\n"
	if err := os.WriteFile(a, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	initBareNamesMissing(t, ws, "codex")
	script := []Step{
		{Tool: "apply_patch", Input: "*** Begin Patch\n*** Update File: a.go\n@@\n-var X = 1\n+var X = 2\n*** End Patch\n"},
	}
	run := runCodex(t, ws, script, codexOptions{project: true, noEditguard: true, model: "gpt-5.5",
		args: []string{"--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox"}})
	logRun(t, run)
	for _, l := range strings.Split(run.Stdout+run.Stderr, "\n") {
		if strings.Contains(l, "editguard") {
			t.Logf("codex: %s", truncate(l, 600))
		}
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if r := run.Results[0].Content; !strings.HasPrefix(r, "Command blocked by PreToolUse hook: ") || !strings.Contains(r, "editguard-hook: command not found") {
		t.Errorf("apply_patch with editguard-hook missing: %q; want it blocked with the reason", r)
	}
	if got, _ := os.ReadFile(a); string(got) != before {
		t.Errorf("a.go = %q; the blocked patch changed it", got)
	}
}

// TestMissingGeminiHooks: Gemini CLI blocks write_file when editguard-hook
// cannot be started.
func TestMissingGeminiHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	const before = "package a\n\nvar X = 1\n"
	if err := os.WriteFile(a, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	initBareNamesMissing(t, ws, "gemini", "--hooks")
	script := []Step{
		{Tool: "read_file", Input: map[string]any{"file_path": "a.go"}},
		{Tool: "write_file", Input: map[string]any{"file_path": "a.go", "content": "package a\n\nvar X = 2\n"}},
	}
	run := runGemini(t, ws, script, geminiOptions{project: true, approval: "yolo", noEditguard: true})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for i, r := range run.Results {
		if !r.IsError || !strings.Contains(r.Content, "editguard-hook: command not found") {
			t.Errorf("step %d (%s) with editguard-hook missing: error=%v %q; want it blocked with the reason", i, r.Tool, r.IsError, r.Content)
		}
	}
	if got, _ := os.ReadFile(a); string(got) != before {
		t.Errorf("a.go = %q; the blocked write_file changed it", got)
	}
}

// TestMissingClaudeCodeServer: with the MCP server's program not on its
// PATH, Claude Code does not stop: it reports the server as failed in its
// session's init message, and goes on without editguard's tools (nor its
// own file tools, which the configuration turns off).
func TestMissingClaudeCodeServer(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	initBareNamesMissing(t, ws, "claude-code")
	// Claude Code's own Read is denied by the configuration: the model has
	// neither its tool nor editguard's.
	model := startFakeModel(t, "editguard", []Step{{Tool: "Bash", Input: map[string]any{"command": "true"}}})
	stdout, stderr, err := runClaudeWithPath(t, ws, claudeHome(t, ws, true), model.url, pathWithoutEditguard())
	run := &ClientRun{Offered: model.Offered(), Requests: model.Requests(), Stdout: stdout, Stderr: stderr}
	if err != nil {
		dumpRun(t, run)
		t.Fatalf("claude: %v", err)
	}
	var status string
	for _, line := range strings.Split(stdout, "\n") {
		var msg struct {
			Type, Subtype string
			MCPServers    []struct{ Name, Status string } `json:"mcp_servers"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Type == "system" && msg.Subtype == "init" {
			for _, s := range msg.MCPServers {
				if s.Name == "editguard" {
					status = s.Status
				}
			}
		}
	}
	t.Logf("offered: %v; editguard's status in the init message: %q", run.Offered, status)
	if status != "failed" {
		dumpRun(t, run)
		t.Errorf("the init message gives editguard's status as %q, want failed", status)
	}
	if len(run.Offered) == 0 {
		t.Errorf("the model was offered no tools at all")
	}
	for _, name := range run.Offered {
		if strings.HasPrefix(name, "mcp__editguard__") || name == "Read" || name == "Write" || name == "Edit" {
			t.Errorf("%s is offered", name)
		}
	}
}
