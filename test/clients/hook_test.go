package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeHooks runs Claude Code with its own Read, Edit and Write
// and editguard's hooks in the project's settings: a Read then an Edit
// keeps the replaced version in history; an external change that keeps
// the mtime makes the next Edit be denied with STALE_FILE and the person's
// bytes stay; a Write of a new file is recorded; the ledger verifies.
func TestClaudeCodeHooks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n\nvar Y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := []map[string]any{{
		"matcher": "Read|Write|Edit|MultiEdit|NotebookEdit",
		"hooks":   []map[string]any{{"type": "command", "command": `editguard --root "$CLAUDE_PROJECT_DIR" hook`}},
	}}
	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write"}},
		"hooks":       map[string]any{"PreToolUse": hook, "PostToolUse": hook},
	}, "", "  ")
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(ws, "b.txt")
	script := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var X = 1", "new_string": "var X = 2"}},
		{
			Tool:  "Edit",
			Input: map[string]any{"file_path": a, "old_string": "var Y = 1", "new_string": "var Y = 2"},
			// A person changes the file and keeps its mtime, which
			// Claude Code's own check looks at.
			Before: func() error {
				st, err := os.Stat(a)
				if err != nil {
					return err
				}
				if err := os.WriteFile(a, []byte("package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n"), 0o644); err != nil {
					return err
				}
				return os.Chtimes(a, st.ModTime(), st.ModTime().Add(0*time.Second))
			},
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
	if run.Results[1].IsError || run.Results[3].IsError {
		t.Errorf("a guarded Edit or Write was refused: %q / %q", run.Results[1].Content, run.Results[3].Content)
	}
	stale := run.Results[2]
	if !stale.IsError || !strings.Contains(stale.Content, "STALE_FILE") || !strings.Contains(stale.Content, "reviewed") {
		t.Errorf("the Edit after the external change: is_error=%v %q; want STALE_FILE showing the change", stale.IsError, stale.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n" {
		t.Errorf("a.go = %q; the person's change must stay", got)
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
