package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookRun feeds one Claude Code hook event to "editguard hook" and returns
// the denial reason ("" when the tool is let through) and stderr.
func hookRun(t *testing.T, dir string, event map[string]any, flags ...string) (string, string) {
	t.Helper()
	data, _ := json.Marshal(event)
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--root", dir, "hook"}, flags...), bytes.NewReader(data), &out, &errb)
	if code != 0 {
		t.Fatalf("hook exited %d: %s %s", code, out.String(), errb.String())
	}
	if out.Len() == 0 {
		return "", errb.String()
	}
	var resp struct {
		Out struct {
			Event, Decision, Reason string
		} `json:"hookSpecificOutput"`
	}
	var raw map[string]map[string]string
	if err := json.Unmarshal(out.Bytes(), &raw); err != nil {
		t.Fatalf("hook output %q is not JSON: %v", out.String(), err)
	}
	h := raw["hookSpecificOutput"]
	resp.Out.Event, resp.Out.Decision, resp.Out.Reason = h["hookEventName"], h["permissionDecision"], h["permissionDecisionReason"]
	if resp.Out.Event != "PreToolUse" || resp.Out.Decision != "deny" || resp.Out.Reason == "" {
		t.Fatalf("hook output %q is not a PreToolUse denial with a reason", out.String())
	}
	return resp.Out.Reason, errb.String()
}

func ev(event, tool, path string, extra map[string]any) map[string]any {
	input := map[string]any{"file_path": path}
	for k, v := range extra {
		input[k] = v
	}
	return map[string]any{"session_id": "3f2a-session", "hook_event_name": event, "tool_name": tool, "tool_input": input,
		"transcript_path": "/tmp/t.jsonl", "cwd": "/"}
}

func TestHookClaudeCode(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An Edit of a file the session has not read is denied.
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil)); !strings.HasPrefix(reason, "NOT_READ") || !strings.Contains(reason, "Read") {
		t.Fatalf("unread Edit: reason %q", reason)
	}
	// Read, then Edit: let through, the old content kept, the change recorded.
	hookRun(t, dir, ev("PostToolUse", "Read", a, nil))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil)); reason != "" {
		t.Fatalf("Edit after a Read denied: %s", reason)
	}
	os.WriteFile(a, []byte("package a\n\nvar X = 2\n"), 0o644) // the tool's write
	hookRun(t, dir, ev("PostToolUse", "Edit", a, map[string]any{"old_string": "1", "new_string": "2"}))
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--root", dir, "history", "a.go"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), "v000001") {
		t.Fatalf("history after a guarded Edit: %d %s %s", code, out.String(), errb.String())
	}
	// The read moved with the change: a second Edit needs no Read.
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil)); reason != "" {
		t.Fatalf("second Edit denied: %s", reason)
	}
	hookRun(t, dir, ev("PostToolUse", "Edit", a, nil)) // the tool changed nothing

	// A change by someone else that keeps the mtime is still seen.
	st, _ := os.Stat(a)
	os.WriteFile(a, []byte("package a\n\nvar X = 3 // a person\n"), 0o644)
	os.Chtimes(a, st.ModTime(), st.ModTime())
	reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil))
	if !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+var X = 3 // a person") {
		t.Fatalf("stale Edit: reason %q", reason)
	}
	if b, _ := os.ReadFile(a); string(b) != "package a\n\nvar X = 3 // a person\n" {
		t.Fatalf("the person's bytes were not kept: %q", b)
	}

	// A Write of a new file: history records that it did not exist.
	n := filepath.Join(dir, "sub", "new.txt")
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", n, nil)); reason != "" {
		t.Fatalf("Write of a new file denied: %s", reason)
	}
	os.MkdirAll(filepath.Dir(n), 0o755)
	os.WriteFile(n, []byte("new\n"), 0o644)
	hookRun(t, dir, ev("PostToolUse", "Write", n, nil))
	out.Reset()
	if code := run(context.Background(), []string{"--root", dir, "history", "sub/new.txt", "--json"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), `"absent": true`) {
		t.Fatalf("history of the new file: %d %s", code, out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"--root", dir, "verify"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("verify: %d %s %s", code, out.String(), errb.String())
	}

	// Protected paths are denied; paths outside the root are not ours.
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", filepath.Join(dir, ".editguard", "ledger.jsonl"), nil)); reason == "" {
		t.Fatal("a Write into .editguard was let through")
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", filepath.Join(t.TempDir(), "elsewhere.txt"), nil)); reason != "" {
		t.Fatalf("a Write outside the root was denied: %s", reason)
	}
	// Other tools pass untouched.
	if reason, _ := hookRun(t, dir, map[string]any{"session_id": "x", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "ls"}}); reason != "" {
		t.Fatalf("Bash denied: %s", reason)
	}
}

// TestHookFailsClosed: a hook that cannot understand its event denies the
// tool, unless --fail-open is given.
func TestHookFailsClosed(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	run(context.Background(), []string{"--root", dir, "hook"}, strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"Edit"`), &out, &errb)
	if !strings.Contains(out.String(), `"permissionDecision":"deny"`) {
		t.Fatalf("a broken event was not denied: %q %q", out.String(), errb.String())
	}
	out.Reset()
	run(context.Background(), []string{"--root", dir, "hook", "--fail-open"}, strings.NewReader(`{"hook_event_name":"PreToolUse"`), &out, &errb)
	if out.Len() != 0 {
		t.Fatalf("--fail-open denied: %q", out.String())
	}

}

// TestHookSessions: two sessions of the agent keep their own reads.
func TestHookSessions(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	os.WriteFile(a, []byte("one\n"), 0o644)
	s1, s2 := ev("PostToolUse", "Read", a, nil), ev("PostToolUse", "Read", a, nil)
	s2["session_id"] = "other-session"
	hookRun(t, dir, s1)
	hookRun(t, dir, s2)
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil)); reason != "" {
		t.Fatal(reason)
	}
	os.WriteFile(a, []byte("two\n"), 0o644)
	hookRun(t, dir, ev("PostToolUse", "Edit", a, nil))
	pre := ev("PreToolUse", "Edit", a, nil)
	pre["session_id"] = "other-session"
	if reason, _ := hookRun(t, dir, pre); !strings.HasPrefix(reason, "STALE_FILE") {
		t.Fatalf("the other session's stale Edit: %q", reason)
	}
}
