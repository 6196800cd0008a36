package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hookRaw feeds one event to "editguard hook" and returns its stdout.
func hookRaw(t *testing.T, dir, client string, event map[string]any) string {
	t.Helper()
	data, _ := json.Marshal(event)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--root", dir, "hook", "--client", client}, bytes.NewReader(data), &out, &errb); code != 0 {
		t.Fatalf("hook exited %d: %s %s", code, out.String(), errb.String())
	}
	if errb.Len() > 0 {
		t.Logf("hook stderr: %s", errb.String())
	}
	return out.String()
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// TestHookShellTools: a client's shell tool runs between two checkpoints.
// Every file its command changes is recorded with the command, and when
// the command overwrote a person's change to a file the session had read,
// the answer after the tool tells the model, in the client's protocol,
// which file and how to get the person's version back.
func TestHookShellTools(t *testing.T) {
	for _, tc := range []struct {
		client, before, after, tool string
		id                          bool // the client sends tool_use_id
	}{
		{"claude-code", "PreToolUse", "PostToolUse", "Bash", true},
		{"gemini", "BeforeTool", "AfterTool", "run_shell_command", false},
		{"codex", "PreToolUse", "PostToolUse", "Bash", true},
	} {
		t.Run(tc.client, func(t *testing.T) {
			dir := t.TempDir()
			a := filepath.Join(dir, "a.txt")
			os.WriteFile(a, []byte("as read\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
			readTool := map[string]string{"claude-code": "Read", "gemini": "read_file"}[tc.client]
			if readTool != "" {
				hookRaw(t, dir, tc.client, map[string]any{"session_id": "s1", "hook_event_name": tc.after, "tool_name": readTool,
					"tool_input": map[string]any{"file_path": a}, "cwd": dir})
			} else {
				// Codex reads through its shell.
				shell := func(cmd, id string) string {
					ev := map[string]any{"session_id": "s1", "tool_name": tc.tool, "tool_input": map[string]any{"command": cmd}, "cwd": dir, "tool_use_id": id}
					ev["hook_event_name"] = tc.before
					hookRaw(t, dir, tc.client, ev)
					sh(t, dir, cmd)
					ev["hook_event_name"] = tc.after
					return hookRaw(t, dir, tc.client, ev)
				}
				shell("cat a.txt", "call-0")
			}
			os.WriteFile(a, []byte("a person's change\n"), 0o644)
			command := "sed -i 's/.*/overwritten/' a.txt && rm b.txt && echo new > c.txt"
			ev := map[string]any{"session_id": "s1", "tool_name": tc.tool, "tool_input": map[string]any{"command": command}, "cwd": dir}
			if tc.id {
				ev["tool_use_id"] = "call-1"
			}
			ev["hook_event_name"] = tc.before
			if out := hookRaw(t, dir, tc.client, ev); out != "" {
				t.Fatalf("before the shell tool: %q, want no answer (the tool runs)", out)
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
			if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.Specific.Event != tc.after ||
				!strings.Contains(resp.Specific.Context, "replaced a.txt") || !strings.Contains(resp.Specific.Context, "editguard restore a.txt v") {
				t.Fatalf("after the shell tool: %q (%v); want additionalContext naming a.txt and its restore", out, err)
			}
			if strings.Contains(resp.Specific.Context, "b.txt") {
				t.Errorf("b.txt, which nobody else changed, is named: %q", resp.Specific.Context)
			}
			var log bytes.Buffer
			if code := cli(t, dir, &log, "log"); code != 0 {
				t.Fatal(log.String())
			}
			if !strings.Contains(log.String(), "ok (writer unknown)") {
				t.Errorf("log does not show the command's changes as made by a writer unknown:\n%s", log.String())
			}
			for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
				if !strings.Contains(log.String(), p) || !strings.Contains(log.String(), "sed -i") {
					t.Errorf("log does not show %s changed by the command:\n%s", p, log.String())
				}
			}
			var hist bytes.Buffer
			if code := cli(t, dir, &hist, "history", "a.txt", "--json"); code != 0 || !strings.Contains(hist.String(), tc.tool) {
				t.Fatalf("history a.txt: %s", hist.String())
			}
			// The person's version comes back with a guarded restore.
			var h struct {
				Versions []struct {
					ID string `json:"version"`
				} `json:"versions"`
			}
			if err := json.Unmarshal(hist.Bytes(), &h); err != nil || len(h.Versions) == 0 {
				t.Fatalf("history a.txt --json: %v\n%s", err, hist.String())
			}
			vs := h.Versions
			var res bytes.Buffer
			sessionFlag := "--session=" + map[string]string{"claude-code": "claude", "gemini": "gemini", "codex": "codex"}[tc.client] + "-s1"
			// Who wrote what the command left is not known: the
			// session reads it first, as the notice says.
			if code := cli(t, dir, &res, sessionFlag, "restore", "a.txt", vs[0].ID, "--yes"); code == 0 || !strings.Contains(res.String(), "NOT_READ") {
				t.Fatalf("restore before a read: exit %d, want NOT_READ\n%s", code, res.String())
			}
			res.Reset()
			if code := cli(t, dir, &res, sessionFlag, "read", "a.txt"); code != 0 {
				t.Fatalf("read: %s", res.String())
			}
			if code := cli(t, dir, &res, sessionFlag, "restore", "a.txt", vs[0].ID, "--yes"); code != 0 {
				t.Fatalf("restore: %s", res.String())
			}
			if b, _ := os.ReadFile(a); string(b) != "a person's change\n" {
				t.Errorf("a.txt after restore = %q", b)
			}
		})
	}
}
