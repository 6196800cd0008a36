package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runClaudeProject runs Claude Code on workspace with only the workspace's
// own configuration: no --mcp-config, --strict-mcp-config or --allowedTools,
// and ENABLE_TOOL_SEARCH not set in the environment. editguard is on PATH
// as "editguard", as a user would have it. Claude Code's debug log is
// returned in the run's Stderr after its own standard error.
//
// With trusted set, the workspace is recorded as trusted in Claude Code's
// own configuration, as accepting the trust dialog of an interactive run
// does: Claude Code ignores permissions.allow in an untrusted project's
// .claude/settings.json (its deny rules and env apply regardless).
func runClaudeProject(t testing.TB, workspace string, trusted bool, script []Step) *ClientRun {
	t.Helper()
	model := startFakeModel(t, "editguard", script)
	stdout, stderr, err := runClaudeIn(t, workspace, claudeHome(t, workspace, trusted), model.url)
	run := &ClientRun{
		Results:  model.Results(),
		Offered:  model.Offered(),
		Requests: model.Requests(),
		Stdout:   stdout,
		Stderr:   stderr,
	}
	if err != nil {
		dumpRun(t, run)
		t.Fatalf("claude: %v", err)
	}
	if errs := model.Errors(); len(errs) > 0 {
		dumpRun(t, run)
		t.Fatalf("model server: %s", strings.Join(errs, "; "))
	}
	return run
}

// claudeHome returns a new home directory for Claude Code, in which
// workspace is recorded as trusted when trusted is set.
func claudeHome(t testing.TB, workspace string, trusted bool) string {
	t.Helper()
	home := t.TempDir()
	shareKey(t, home)
	if trusted {
		cfg, _ := json.Marshal(map[string]any{"projects": map[string]any{workspace: map[string]any{"hasTrustDialogAccepted": true}}})
		if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, ".claude", ".claude.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// runClaudeIn runs Claude Code headless on workspace with home as its home
// and the model server at url, as runClaudeProject describes, with more
// arguments args; it returns Claude Code's output, its standard error and
// debug log, and the error of the run.
func runClaudeIn(t testing.TB, workspace, home, url string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runClaudeWithPath(t, workspace, home, url, filepath.Dir(editguardBin(t))+string(os.PathListSeparator)+os.Getenv("PATH"), args...)
}

// runClaudeWithPath is runClaudeIn with path as the run's PATH.
func runClaudeWithPath(t testing.TB, workspace, home, url, path string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	exe, pre := claudeCommand(t)
	debugLog := filepath.Join(home, "debug.log")
	os.Remove(debugLog)
	args = append(append(pre,
		"-p", "Work through the task with the tools you have.",
		"--output-format", "stream-json", "--verbose",
		"--debug-file", debugLog,
		"--max-turns", "50",
	), args...)
	ctx, cancel := context.WithTimeout(t.Context(), claudeRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = workspace
	for _, kv := range claudeEnv(home, url) {
		switch {
		case strings.HasPrefix(kv, "ENABLE_TOOL_SEARCH="):
		case strings.HasPrefix(kv, "PATH="):
			cmd.Env = append(cmd.Env, "PATH="+path)
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	killGroupOnCancel(cmd)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err == nil {
		err = ctx.Err()
	}
	debug, _ := os.ReadFile(debugLog)
	return out.String(), errb.String() + "\n--- debug log ---\n" + string(debug), err
}

// TestInitClaudeCode configures a workspace with "editguard init
// claude-code" alone and checks that Claude Code then offers the model
// editguard's tools, not its own file tools, and, once the workspace is
// trusted, runs them without asking.
func TestInitClaudeCode(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Settings of the project's own survive init.
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), []byte("{\n  \"permissions\": {\n    \"allow\": [\"Bash(true)\"]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := editguardBin(t)
	out, err := exec.Command(bin, "--root", ws, "init", "claude-code").CombinedOutput()
	if err != nil {
		t.Fatalf("editguard init claude-code: %v\n%s", err, out)
	}
	t.Logf("editguard init claude-code:\n%s", out)

	script := []Step{
		{Tool: "read_file", Input: map[string]any{"path": "a.txt"}},
		{Tool: "edit_file", Input: map[string]any{"path": "a.txt", "old_string": "hello", "new_string": "bye"}},
	}
	run := runClaudeProject(t, ws, true, script)
	t.Logf("offered tools: %v", run.Offered)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}

	for _, name := range editguardTools(t) {
		if !slices.Contains(run.Offered, "mcp__editguard__"+name) {
			t.Errorf("mcp__editguard__%s is not offered", name)
		}
	}
	for _, name := range []string{"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"} {
		if slices.Contains(run.Offered, name) {
			t.Errorf("the built-in %s is offered although permissions.deny lists it", name)
		}
	}
	for i, r := range run.Results {
		if r.IsError || strings.Contains(strings.ToLower(r.Content), "permission") {
			t.Errorf("step %d (%s): is_error=%v: %s", i, r.Tool, r.IsError, truncate(r.Content, 500))
		}
	}
	if !strings.Contains(run.Results[0].Content, "hello from a") {
		t.Errorf("read_file did not return the file: %s", truncate(run.Results[0].Content, 500))
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "bye from a\n" {
		t.Errorf("a.txt = %q after edit_file", got)
	}
	// The tools were loaded directly because the project's settings set
	// ENABLE_TOOL_SEARCH, not because of the model server's address.
	if !strings.Contains(run.Stderr, "ENABLE_TOOL_SEARCH=false") {
		t.Errorf("the debug log does not show ENABLE_TOOL_SEARCH=false from the project settings")
	}
}
