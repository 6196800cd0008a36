package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/hookwire"
)

// TestHookBatch: Claude Code's PostToolBatch through editguard-hook. With
// no command in progress it is answered at once, with nothing, and starts
// no server; after a Bash call whose PreToolUse came and no event after it
// (a call the permissions denied), it ends that command: what changed in
// between is recorded, and no command is left in progress.
func TestHookBatch(t *testing.T) {
	_, hookBin := hookPrograms(t)
	root := t.TempDir()
	hookSocketDir(t) // its cleanup, which stops the server, runs before root's
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a1\n"), 0o644)
	const sid = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"
	batch := func(ids ...string) map[string]any {
		var calls []any
		for _, id := range ids {
			calls = append(calls, map[string]any{"tool_name": "Bash", "tool_use_id": id,
				"tool_input": map[string]any{"command": "echo a2 > a.txt"}, "tool_response": "Permission to use Bash has been denied."})
		}
		return map[string]any{"session_id": sid, "cwd": root, "hook_event_name": "PostToolBatch", "tool_calls": calls}
	}
	if code, out, errs := fastHook(t, hookBin, root, batch("toolu_0")); code != 0 || out != "" || errs != "" {
		t.Fatalf("PostToolBatch with nothing in progress: exit %d, %q %q", code, out, errs)
	}
	sock, _, _, err := hookwire.Socket(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); err == nil {
		t.Errorf("PostToolBatch with nothing in progress started a server")
	}

	pre := map[string]any{"session_id": sid, "cwd": root, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_use_id": "toolu_1", "tool_input": map[string]any{"command": "echo a2 > a.txt"}}
	if code, out, errs := fastHook(t, hookBin, root, pre); code != 0 || out != "" {
		t.Fatalf("PreToolUse: exit %d, %q %q", code, out, errs)
	}
	waitServer(t, root)
	active := filepath.Join(root, hookwire.ActiveCommands)
	if ents, _ := os.ReadDir(active); len(ents) != 1 {
		t.Fatalf("after PreToolUse, %d commands in progress; want 1", len(ents))
	}
	// Someone changes a.txt meanwhile; the command itself never runs.
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("a-person\n"), 0o644)
	if code, out, errs := fastHook(t, hookBin, root, batch("toolu_1")); code != 0 {
		t.Fatalf("PostToolBatch: exit %d, %q %q", code, out, errs)
	}
	if ents, _ := os.ReadDir(active); len(ents) != 0 {
		t.Errorf("after PostToolBatch, %d commands in progress; want none", len(ents))
	}
	code, out, errs := cliRun(t, root, "log")
	if code != 0 || !strings.Contains(out, "a.txt") || !strings.Contains(out, "writer unknown") {
		t.Errorf("log: the change while the command was in progress is not recorded, writer unknown: exit %d\n%s%s", code, out, errs)
	}
}
