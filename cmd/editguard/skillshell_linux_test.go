package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// skillShellRecord is what the test compares of a command's ledger record.
type skillShellRecord struct {
	Path, Tool, Session, Outcome string
	Before                       string `json:"sha256_before"`
	After                        string `json:"sha256_after"`
	Version                      string `json:"history_version"`
	Args                         struct {
		Command string `json:"command"`
	} `json:"args"`
}

// TestHookSkillShellCommand feeds editguard-hook a PreSkillShellCommand and
// a PostSkillShellCommand event of Claude Code (the shape skillShellEvents
// describes: the common fields, the skill, and the command at the top
// level) around a command that changes a file, deletes one and creates
// one. The same command through Bash's PreToolUse and PostToolUse in another workspace
// is recorded the same way: the same files, contents and history
// versions, under the session, with the command; only the tool differs.
// The first event starts the hook server, which answers the second.
func TestHookSkillShellCommand(t *testing.T) {
	_, hookBin := hookPrograms(t)
	hookSocketDir(t)
	command := "sed -i 's/draft/final/' notes.md && rm old.txt && echo made > out.txt"
	run := func(skill bool) []skillShellRecord {
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "notes.md"), []byte("a draft\n"), 0o644)
		os.WriteFile(filepath.Join(root, "old.txt"), []byte("old\n"), 0o644)
		ev := func(name string) map[string]any {
			if skill {
				return map[string]any{
					"session_id":      "0b6d3c1e-5f2a-4c8e-9d7b-2a1f6e4c3b90",
					"transcript_path": "/home/u/.claude/projects/p/0b6d3c1e-5f2a-4c8e-9d7b-2a1f6e4c3b90.jsonl",
					"cwd":             root,
					"permission_mode": "default",
					"hook_event_name": name,
					"skill_name":      "release-notes",
					"command":         command,
				}
			}
			return map[string]any{
				"session_id": "0b6d3c1e-5f2a-4c8e-9d7b-2a1f6e4c3b90", "cwd": root, "hook_event_name": name,
				"tool_name": "Bash", "tool_use_id": "toolu_01", "tool_input": map[string]any{"command": command},
			}
		}
		pre, post := "PreToolUse", "PostToolUse"
		if skill {
			pre, post = "PreSkillShellCommand", "PostSkillShellCommand"
		}
		if code, out, errs := fastHook(t, hookBin, root, ev(pre)); code != 0 || out != "" {
			t.Fatalf("%s: exit %d, %q %q; want no answer (the command runs)", pre, code, out, errs)
		}
		waitServer(t, root)
		sh(t, root, command)
		if code, out, errs := fastHook(t, hookBin, root, ev(post)); code != 0 || out != "" {
			t.Fatalf("%s: exit %d, %q %q; want no answer (nothing to tell)", post, code, out, errs)
		}
		code, logOut, errs := cliRun(t, root, "log", "--json")
		if code != 0 {
			t.Fatalf("log: %s", errs)
		}
		var recs []skillShellRecord
		lines := logLines(t, logOut)
		slices.Reverse(lines) // log prints the newest first
		for _, line := range lines {
			var r skillShellRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			recs = append(recs, r)
		}
		return recs
	}
	bash, skill := run(false), run(true)
	if len(skill) != 3 || len(bash) != len(skill) {
		t.Fatalf("records: the skill's command %+v, Bash's %+v; want the 3 changes each", skill, bash)
	}
	for i, r := range skill {
		b := bash[i]
		if r.Tool != skillShellTool || b.Tool != "Bash" {
			t.Errorf("tools %q and %q, want %q and Bash", r.Tool, b.Tool, skillShellTool)
		}
		if r.Session != "claude-0b6d3c1e-5f2a-4c8e-9d7b-2a1f6e4c3b90" || r.Args.Command != command || r.Outcome != "ok" || r.Version == "" {
			t.Errorf("the skill's command's record: %+v", r)
		}
		r.Tool, b.Tool = "", ""
		if r != b {
			t.Errorf("the skill's command recorded %+v, Bash %+v", r, b)
		}
	}
}
