package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookTurn checks the hook at a turn's start: after it, a file read in
// the turn before must be read again before an Edit; the hook prints
// nothing (the client would add it to the model's context); a read in the
// new turn lets the change through. Another session keeps its reads.
func TestHookTurn(t *testing.T) {
	for _, tc := range []struct {
		client, turn, before, after, read, edit string
		event                                   func(dir, event, tool, path string) map[string]any
	}{
		{"claude-code", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Read", "Edit",
			func(dir, event, tool, path string) map[string]any { return ev(event, tool, path, nil) }},
		{"gemini", "BeforeAgent", "BeforeTool", "AfterTool", "read_file", "replace",
			func(dir, event, tool, path string) map[string]any {
				return geminiEvent(dir, event, tool, map[string]any{"file_path": path}, map[string]any{})
			}},
	} {
		t.Run(tc.client, func(t *testing.T) {
			dir := t.TempDir()
			a := filepath.Join(dir, "a.txt")
			if err := os.WriteFile(a, []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			read := tc.event(dir, tc.after, tc.read, a)
			edit := tc.event(dir, tc.before, tc.edit, a)
			hookRunClient(t, dir, tc.client, read)
			if reason, _ := hookRunClient(t, dir, tc.client, edit); reason != "" {
				t.Fatalf("Edit after a read in the same turn denied: %s", reason)
			}
			turn := tc.event(dir, tc.turn, "", "")
			delete(turn, "tool_name")
			delete(turn, "tool_input")
			turn["prompt"] = "go on"
			if reason, stderr := hookRunClient(t, dir, tc.client, turn); reason != "" || stderr != "" {
				t.Fatalf("turn start answered %q, stderr %q; want nothing", reason, stderr)
			}
			reason, _ := hookRunClient(t, dir, tc.client, edit)
			if !strings.HasPrefix(reason, "NOT_READ") {
				t.Fatalf("Edit after a new turn without a read: reason %q, want NOT_READ", reason)
			}
			other := tc.event(dir, tc.after, tc.read, a)
			other["session_id"] = "another-session"
			hookRunClient(t, dir, tc.client, other)
			otherEdit := tc.event(dir, tc.before, tc.edit, a)
			otherEdit["session_id"] = "another-session"
			hookRunClient(t, dir, tc.client, turn)
			if reason, _ := hookRunClient(t, dir, tc.client, otherEdit); reason != "" {
				t.Fatalf("a turn of one session cleared another's reads: %s", reason)
			}
			hookRunClient(t, dir, tc.client, read)
			if reason, _ := hookRunClient(t, dir, tc.client, edit); reason != "" {
				t.Fatalf("Edit after a read in the new turn denied: %s", reason)
			}
		})
	}
}

// TestInitHooksTurns checks init --hooks --turns: the turn hook is added
// once, with no matcher, beside the tool hooks; --turns needs --hooks and
// a client that has a turn event.
func TestInitHooksTurns(t *testing.T) {
	for client, want := range map[string]struct{ file, event string }{
		"claude-code": {claudeLocalSettings, "UserPromptSubmit"},
		"gemini":      {".gemini/settings.json", "BeforeAgent"},
	} {
		t.Run(client, func(t *testing.T) {
			root := t.TempDir()
			runInitJSON(t, root, client, "--hooks", "--turns")
			groups, _ := get(readJSON(t, root, want.file), "hooks", want.event).([]any)
			if len(groups) != 1 {
				t.Fatalf("hooks.%s = %v, want one group", want.event, groups)
			}
			g := groups[0].(map[string]any)
			hs, _ := g["hooks"].([]any)
			if _, has := g["matcher"]; has || len(hs) != 1 || !isHookCommand(hs[0].(map[string]any)["command"].(string)) {
				t.Errorf("turn group = %v, want editguard's hook with no matcher", g)
			}
			if get(readJSON(t, root, want.file), "hooks", "PreToolUse") == nil && get(readJSON(t, root, want.file), "hooks", "BeforeTool") == nil {
				t.Error("the tool hooks are missing")
			}
			rep := runInitJSON(t, root, client, "--hooks", "--turns")
			if rep.Files[0].Action != "unchanged" {
				t.Errorf("a second init --turns: %+v, want unchanged", rep.Files[0])
			}
		})
	}
	for _, args := range [][]string{{"init", "claude-code", "--turns"}, {"init", "codex", "--hooks", "--turns"}} {
		if code, _, errs := cliRun(t, t.TempDir(), args...); code != exitUsage || !strings.Contains(errs, "--turns needs --hooks") {
			t.Errorf("%v: exit %d, %s; want a usage error", args, code, errs)
		}
	}
}
