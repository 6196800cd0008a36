package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/testutil"
)

// lostWorkRepo makes a git repository with f.txt and g.txt committed, and
// a person's uncommitted change to f.txt.
func lostWorkRepo(t *testing.T) string {
	t.Helper()
	testutil.RequireGit(t)
	dir := t.TempDir()
	testutil.GitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("committed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "g.txt"), []byte("g\n"), 0o644)
	testutil.GitIn(t, dir, "add", "-A")
	testutil.GitIn(t, dir, "commit", "-qm", "files")
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("a person's uncommitted work\n"), 0o644)
	return dir
}

var restoreLine = regexp.MustCompile(`editguard restore f\.txt (v[0-9]+)`)

// TestHookShellUncommittedWork: a shell tool's (or a Claude Code skill's
// shell command's) git checkout -- f.txt over a
// person's uncommitted change to a file the session never read is told to
// the model after the tool, in each client's protocol, with the history
// version that restores the work; g.txt, which the command changed from
// what HEAD holds, is not named; restoring the version brings the work
// back.
func TestHookShellUncommittedWork(t *testing.T) {
	for _, tc := range []struct{ client, before, after, tool string }{
		{"claude-code", "PreToolUse", "PostToolUse", "Bash"},
		{"claude-code", "PreToolUse", "PostToolUse", "PowerShell"},
		{"claude-code", "PreSkillShellCommand", "PostSkillShellCommand", ""}, // a skill's !`command`
		{"gemini", "BeforeTool", "AfterTool", "run_shell_command"},
		{"codex", "PreToolUse", "PostToolUse", "Bash"},
	} {
		t.Run(tc.client+"-"+tc.before+"-"+tc.tool, func(t *testing.T) {
			dir := lostWorkRepo(t)
			command := "git checkout -- f.txt && echo more >> g.txt"
			ev := map[string]any{"session_id": "s1", "tool_name": tc.tool, "tool_input": map[string]any{"command": command}, "cwd": dir, "tool_use_id": "call-1"}
			if tc.tool == "" {
				ev = map[string]any{"session_id": "s1", "cwd": dir, "skill_name": "tidy", "command": command}
			}
			ev["hook_event_name"] = tc.before
			if out := hookRaw(t, dir, tc.client, ev); out != "" {
				t.Fatalf("before the shell tool: %q, want no answer", out)
			}
			sh(t, dir, command)
			ev["hook_event_name"] = tc.after
			out := hookRaw(t, dir, tc.client, ev)
			var resp struct {
				Specific struct {
					Event   string `json:"hookEventName"`
					Context string `json:"additionalContext"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.Specific.Event != tc.after {
				t.Fatalf("after the shell tool: %q (%v)", out, err)
			}
			text := resp.Specific.Context
			m := restoreLine.FindStringSubmatch(text)
			if !strings.Contains(text, "discarded uncommitted work that this session did not write") || !strings.Contains(text, "- replaced f.txt;") || m == nil {
				t.Fatalf("additionalContext does not tell of f.txt's uncommitted work and its version:\n%s", text)
			}
			if strings.Contains(text, "g.txt") || strings.Contains(text, "overwrote") {
				t.Errorf("the notice names more than the discarded work:\n%s", text)
			}
			var res bytes.Buffer
			session := "--session=" + map[string]string{"claude-code": "claude", "gemini": "gemini", "codex": "codex"}[tc.client] + "-s1"
			// Read first, as the notice says: the writer of what the
			// command left is not known.
			if code := cli(t, dir, &res, session, "read", "f.txt"); code != 0 {
				t.Fatalf("read: %s", res.String())
			}
			if code := cli(t, dir, &res, session, "restore", "f.txt", m[1], "--yes"); code != 0 {
				t.Fatalf("restore %s: %s", m[1], res.String())
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(b) != "a person's uncommitted work\n" {
				t.Errorf("f.txt after the restore = %q", b)
			}
		})
	}
}

// TestExecUncommittedWork: exec of git checkout -- f.txt over a person's
// uncommitted change names the file and its restore on stderr and exits
// 5; with --json the change says uncommitted, and so do the totals. A
// command that changes only files equal to HEAD exits 0.
func TestExecUncommittedWork(t *testing.T) {
	dir := lostWorkRepo(t)
	t.Chdir(dir)
	var out bytes.Buffer
	code := cli(t, dir, &out, "exec", "--", "git", "checkout", "--", "f.txt")
	if code != exitOverwrote || !strings.Contains(out.String(), "discarding uncommitted work this session did not write") || restoreLine.FindString(out.String()) == "" {
		t.Fatalf("exec git checkout over uncommitted work: exit %d, want %d with the restore named\n%s", code, exitOverwrote, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "exec", "--", "sh", "-c", "echo more >> g.txt"); code != 0 {
		t.Fatalf("exec over a file equal to HEAD: exit %d\n%s", code, out.String())
	}

	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a person's untracked notes\n"), 0o644)
	out.Reset()
	code = cli(t, dir, &out, "exec", "--json", "--", "rm", "notes.txt")
	var res struct {
		Result struct {
			Changes []struct {
				Path          string `json:"path"`
				Uncommitted   bool   `json:"uncommitted"`
				BackupVersion string `json:"backup_version"`
			} `json:"changes"`
			Totals struct {
				Uncommitted int `json:"uncommitted"`
			} `json:"totals"`
		} `json:"result"`
	}
	if i := strings.Index(out.String(), "{"); i >= 0 {
		json.Unmarshal(out.Bytes()[i:], &res)
	}
	ch := res.Result.Changes
	if code != exitOverwrote || len(ch) != 1 || ch[0].Path != "notes.txt" || !ch[0].Uncommitted || ch[0].BackupVersion == "" || res.Result.Totals.Uncommitted != 1 {
		t.Fatalf("exec --json rm of a person's untracked file: exit %d\n%s", code, out.String())
	}
}
