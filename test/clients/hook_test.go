package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClaudeCodeHooks runs Claude Code with its own Read, Edit and Write
// and editguard's hooks in the project's settings, as init --hooks
// writes them: a Read then an Edit
// keeps the replaced version in history; an external change that keeps
// the mtime makes the next Edit be denied with STALE_FILE and the person's
// bytes stay; a Write of a new file is recorded; the ledger verifies.
func TestClaudeCodeHooks(t *testing.T) {
	ws, a := claudeHookProject(t)
	initHooks(t, ws, "claude-code")
	newFile := filepath.Join(ws, "b.txt")
	script := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var X = 1", "new_string": "var X = 2"}},
		{
			Tool:  "Edit",
			Input: map[string]any{"file_path": a, "old_string": "var Y = 1", "new_string": "var Y = 2"},
			// A person changes another line and keeps the file's
			// mtime, which Claude Code's own check looks at: the Edit
			// merges over the change, and the model is told.
			Before: personChange(a, "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n"),
		},
		{
			Tool:  "Edit",
			Input: map[string]any{"file_path": a, "old_string": "var X = 2 // reviewed", "new_string": "var X = 3"},
			// A person changes the very line the Edit replaces: refused.
			Before: personChange(a, "package a\n\nvar X = 2 // reviewed twice\n\nvar Y = 2\n"),
		},
		{Tool: "Write", Input: map[string]any{"file_path": newFile, "content": "new\n"}},
	}
	run := runClaudeProject(t, ws, true, script)
	for _, r := range run.Results {
		t.Logf("step %d %s: is_error=%v %q", r.Step, r.Tool, r.IsError, truncate(r.Content, 400))
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if run.Results[1].IsError || run.Results[4].IsError {
		t.Errorf("a guarded Edit or Write was refused: %q / %q", run.Results[1].Content, run.Results[4].Content)
	}
	merged := run.Results[2]
	t.Logf("merged Edit: the model also reads %q", merged.Along)
	if merged.IsError || !strings.Contains(merged.Along, "made over it") || !strings.Contains(merged.Along, "+var X = 2 // reviewed") {
		t.Errorf("the Edit of another line after the external change: is_error=%v %q, along %q; want it made, the model told, with the change",
			merged.IsError, merged.Content, merged.Along)
	}
	stale := run.Results[3]
	if !stale.IsError || !strings.Contains(stale.Content, "STALE_FILE") || !strings.Contains(stale.Content, "reviewed twice") {
		t.Errorf("the Edit of the line someone changed: is_error=%v %q; want STALE_FILE showing the change", stale.IsError, stale.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nvar X = 2 // reviewed twice\n\nvar Y = 2\n" {
		t.Errorf("a.go = %q; both the merged edit and the person's changes must stay", got)
	}
	bin := editguardBin(t)
	for _, c := range [][]string{
		{"history", "a.go"},
		{"history", "b.txt", "--json"},
		{"log"},
		{"verify"},
	} {
		out, err := exec.Command(bin, append([]string{"--root", ws}, c...)...).CombinedOutput()
		t.Logf("editguard %s:\n%s", strings.Join(c, " "), out)
		if err != nil {
			t.Errorf("editguard %s: %v", strings.Join(c, " "), err)
		}
		switch c[0] + c[1%len(c)] {
		case "historya.go":
			if !strings.Contains(string(out), "v000001") {
				t.Errorf("history of a.go lacks the version the Edit replaced")
			}
		case "historyb.txt":
			if !strings.Contains(string(out), `"absent": true`) {
				t.Errorf("history of b.txt does not record that it did not exist")
			}
		}
	}
}

// claudeHookProject returns a new project, its real path, whose shared
// Claude Code settings allow Read, Edit and Write (init then adds the
// hooks to its local settings), and its file a.go.
func claudeHookProject(t testing.TB) (ws, a string) {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a = filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n\nvar Y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write"}},
	}, "", "  ")
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, a
}

// initHooks runs "editguard init CLIENT --hooks" on ws.
func initHooks(t testing.TB, ws, client string) {
	t.Helper()
	t.Cleanup(func() {
		// editguard-hook, which init configured, started a server for ws.
		if stopHookServers(t, ws) == 0 && !t.Failed() && !t.Skipped() {
			t.Errorf("no hook server ran for %s: editguard-hook did not hand the events over", ws)
		}
	})
	out, err := exec.Command(editguardBin(t), "--root", ws, "init", client, "--hooks").CombinedOutput()
	t.Logf("editguard init %s --hooks:\n%s", client, out)
	if err != nil {
		t.Fatalf("editguard init %s --hooks: %v", client, err)
	}
	// init ran the hook command once, which started a server: stopped
	// here, a server at the end is one the client's events started.
	stopHookServers(t, ws)
}

// stopHookServers stops the hook servers editguard-hook started for ws
// ("editguard --root WS hook --serve"), which would otherwise wait some
// minutes for more events.
func stopHookServers(t testing.TB, ws string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
		if len(args) == 5 && filepath.Base(args[0]) == "editguard" && args[1] == "--root" && args[2] == ws && args[3] == "hook" && args[4] == "--serve" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			t.Logf("stopping hook server %d", pid)
			syscall.Kill(pid, syscall.SIGTERM)
			waitExit(t, pid)
			n++
		}
	}
	return n
}

// waitExit waits until the process pid has exited (a zombie counts), so
// that it writes nothing more into a workspace the test is about to
// remove; after a minute it kills it.
func waitExit(t testing.TB, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("hook server %d did not stop in a minute: killed", pid)
			syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}

// hookHistory runs editguard history, log and verify on ws and checks that
// the history of changed lists a version the change replaced and that of
// created records that it did not exist.
func hookHistory(t testing.TB, ws, changed, created string) {
	t.Helper()
	bin := editguardBin(t)
	for _, c := range [][]string{
		{"history", changed},
		{"history", created, "--json"},
		{"log"},
		{"verify"},
	} {
		out, err := exec.Command(bin, append([]string{"--root", ws}, c...)...).CombinedOutput()
		t.Logf("editguard %s:\n%s", strings.Join(c, " "), out)
		if err != nil {
			t.Errorf("editguard %s: %v", strings.Join(c, " "), err)
		}
		switch {
		case c[0] == "history" && c[1] == changed:
			if !strings.Contains(string(out), "v000001") {
				t.Errorf("history of %s lacks the version the change replaced", changed)
			}
		case c[0] == "history":
			if !strings.Contains(string(out), `"absent": true`) {
				t.Errorf("history of %s does not record that it did not exist", created)
			}
		}
	}
}

// personChange is a Step's Before that changes path as a person would,
// keeping its mtime.
func personChange(path, content string) func() error {
	return func() error {
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
		return os.Chtimes(path, st.ModTime(), st.ModTime())
	}
}

// TestGeminiCLIHooks runs Gemini CLI with its own read_file, replace and
// write_file and editguard's hooks in the project's settings, as init
// --hooks writes them, in a trusted folder: a read_file then
// a replace keeps the replaced version in history; after a person's change
// the next replace is denied with STALE_FILE and the person's bytes stay; a
// write_file of a new file is recorded; the ledger verifies.
func TestGeminiCLIHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n\nvar Y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "gemini")
	const reviewed = "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n"
	script := []Step{
		{Tool: "read_file", Input: map[string]any{"file_path": "a.go"}},
		{Tool: "replace", Input: map[string]any{"file_path": "a.go", "instruction": "X is 2", "old_string": "var X = 1", "new_string": "var X = 2"}},
		{
			Tool:   "replace",
			Input:  map[string]any{"file_path": "a.go", "instruction": "Y is 2", "old_string": "var Y = 1", "new_string": "var Y = 2"},
			Before: personChange(a, reviewed),
		},
		{Tool: "write_file", Input: map[string]any{"file_path": "b.txt", "content": "new\n"}},
	}
	run := runGemini(t, ws, script, geminiOptions{project: true, approval: "yolo"})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if run.Results[1].IsError || run.Results[3].IsError {
		t.Errorf("a guarded replace or write_file was refused: %q / %q", run.Results[1].Content, run.Results[3].Content)
	}
	stale := run.Results[2]
	if !stale.IsError || !strings.Contains(stale.Content, "Tool execution blocked: STALE_FILE") || !strings.Contains(stale.Content, "reviewed") {
		t.Errorf("the replace after the person's change: error=%v %q; want STALE_FILE showing the change", stale.IsError, stale.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != reviewed {
		t.Errorf("a.go = %q; the person's change must stay", got)
	}
	hookHistory(t, ws, "a.go", "b.txt")
}

// TestCodexCLIHooks runs Codex CLI with its own apply_patch and
// editguard's hooks in the project's configuration, as init --hooks writes
// them, in a trusted project: a patch of a file keeps the
// replaced version in history; after a person's change to another line the
// next patch merges over it and the model is told, with the change; after
// a change to the line a patch replaces, that patch is blocked with
// STALE_FILE showing the change, and the person's bytes stay; a patch that
// adds a file is recorded; the ledger verifies.
//
// Codex CLI (0.169.0 and 0.171.0) offers apply_patch (a freeform tool) for the models
// it knows, such as gpt-5.5, and runs the hooks of a configuration only
// once they are trusted, or with --dangerously-bypass-hook-trust; the
// sandbox is turned off, as it cannot be set up in every container.
func TestCodexCLIHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n\nvar Y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "codex")
	const reviewed = "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n"
	const person = "package a\n\nvar X = 2 // reviewed\n\nvar Y = 2 // a person\n"
	script := []Step{
		{Tool: "apply_patch", Input: "*** Begin Patch\n*** Update File: a.go\n@@\n-var X = 1\n+var X = 2\n*** End Patch\n"},
		// A person changes another line: the patch merges over it, and
		// the model is told, with the change.
		{Tool: "apply_patch", Input: "*** Begin Patch\n*** Update File: a.go\n@@\n-var Y = 1\n+var Y = 2\n*** End Patch\n", Before: personChange(a, reviewed)},
		// A person changes the line the patch replaces: refused.
		{Tool: "apply_patch", Input: "*** Begin Patch\n*** Update File: a.go\n@@\n-var Y = 2\n+var Y = 3\n*** End Patch\n", Before: personChange(a, person)},
		{Tool: "apply_patch", Input: "*** Begin Patch\n*** Add File: b.txt\n+new\n*** End Patch\n"},
	}
	run := runCodex(t, ws, script, codexOptions{project: true, model: "gpt-5.5",
		args: []string{"--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox"}})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for _, i := range []int{0, 1, 3} {
		if r := run.Results[i]; !strings.Contains(r.Content, "Success.") {
			t.Errorf("step %d: a guarded apply_patch did not succeed: %q", i, r.Content)
		}
	}
	if merged := run.Results[1].Along; !strings.Contains(merged, "made over it") || !strings.Contains(merged, "+var X = 2 // reviewed") {
		t.Errorf("the patch of another line than the person's: the model was told %q; want the merge and the change", merged)
	}
	stale := run.Results[2].Content
	if !strings.HasPrefix(stale, "Command blocked by PreToolUse hook: STALE_FILE a.go") || !strings.Contains(stale, "+var Y = 2 // a person") {
		t.Errorf("the patch of the line the person changed: %q; want STALE_FILE showing the change", stale)
	}
	if got, _ := os.ReadFile(a); string(got) != person {
		t.Errorf("a.go = %q; want the merged patch and both of the person's changes", got)
	}
	hookHistory(t, ws, "a.go", "b.txt")
}
