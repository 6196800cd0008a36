package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// hookRun feeds one Claude Code hook event to "editguard hook" and returns
// the denial reason ("" when the tool is let through) and stderr.
func hookRun(t *testing.T, dir string, event map[string]any, flags ...string) (string, string) {
	t.Helper()
	return hookRunClient(t, dir, "claude-code", event, flags...)
}

// hookRunClient feeds one hook event of client to "editguard hook" and
// returns the denial reason ("" when the tool is let through) and stderr.
// A denial must be in the client's protocol: Claude Code's and Codex's
// hookSpecificOutput with permissionDecision "deny", or Gemini CLI's
// decision "deny".
func hookRunClient(t *testing.T, dir, client string, event map[string]any, flags ...string) (string, string) {
	t.Helper()
	data, _ := json.Marshal(event)
	var out, errb bytes.Buffer
	args := append([]string{"--root", dir, "hook", "--client", client}, flags...)
	if code := run(context.Background(), args, bytes.NewReader(data), &out, &errb); code != 0 {
		t.Fatalf("hook exited %d: %s %s", code, out.String(), errb.String())
	}
	if out.Len() == 0 {
		return "", errb.String()
	}
	var resp struct {
		Specific *struct {
			Event    string `json:"hookEventName"`
			Decision string `json:"permissionDecision"`
			Reason   string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
		Decision *string `json:"decision"`
		Reason   string  `json:"reason"`
	}
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("hook output %q is not JSON: %v", out.String(), err)
	}
	switch h := resp.Specific; {
	case client == "gemini":
		if resp.Decision == nil || *resp.Decision != "deny" || resp.Reason == "" || h != nil {
			t.Fatalf("hook output %q is not a Gemini CLI denial with a reason", out.String())
		}
		return resp.Reason, errb.String()
	case h == nil || h.Event != "PreToolUse" || h.Decision != "deny" || h.Reason == "" || resp.Decision != nil:
		t.Fatalf("hook output %q is not a PreToolUse denial with a reason", out.String())
	}
	return resp.Specific.Reason, errb.String()
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

// geminiEvent is a Gemini CLI 0.61.0 hook event as it sends one: the
// tool's file_path as the model gave it (here relative to cwd), and after
// the tool its tool_response.
func geminiEvent(dir, event, tool string, input, response map[string]any) map[string]any {
	ev := map[string]any{
		"session_id":      "c0ce7737-13da-4a2c-9d41-3e612b234d24",
		"transcript_path": filepath.Join(dir, "session.jsonl"),
		"cwd":             dir,
		"hook_event_name": event,
		"timestamp":       "2026-11-23T12:18:31.096Z",
		"tool_name":       tool,
		"tool_input":      input,
	}
	if response != nil {
		ev["tool_response"] = response
	}
	return ev
}

func TestHookGemini(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	replace := map[string]any{"file_path": "a.txt", "instruction": "x", "old_string": "two", "new_string": "three"}
	hook := func(event, tool string, input, response map[string]any) string {
		t.Helper()
		reason, _ := hookRunClient(t, dir, "gemini", geminiEvent(dir, event, tool, input, response))
		return reason
	}

	// A replace of a file the session has not read is denied, in Gemini
	// CLI's words; so is one after a read_file that failed.
	if reason := hook("BeforeTool", "replace", replace, nil); !strings.HasPrefix(reason, "NOT_READ a.txt") || !strings.Contains(reason, "read_file") {
		t.Fatalf("unread replace: reason %q", reason)
	}
	hook("AfterTool", "read_file", map[string]any{"file_path": "a.txt"},
		map[string]any{"llmContent": "", "returnDisplay": "Error reading file", "error": map[string]any{"message": "EACCES", "type": "read_content_failure"}})
	if reason := hook("BeforeTool", "replace", replace, nil); !strings.HasPrefix(reason, "NOT_READ") {
		t.Fatalf("replace after a failed read_file: reason %q", reason)
	}

	// read_file, then replace: let through, the old content kept.
	hook("AfterTool", "read_file", map[string]any{"file_path": "a.txt"}, map[string]any{"llmContent": "one\ntwo\n", "returnDisplay": ""})
	if reason := hook("BeforeTool", "replace", replace, nil); reason != "" {
		t.Fatalf("replace after read_file denied: %s", reason)
	}
	os.WriteFile(a, []byte("one\nthree\n"), 0o644) // the tool's write
	hook("AfterTool", "replace", replace, map[string]any{"llmContent": "Successfully modified file: " + a + " (1 replacements).", "returnDisplay": map[string]any{"fileName": "a.txt"}})
	var out, errb bytes.Buffer
	if code := cli(t, dir, &out, "history", "a.txt", "--json"); code != 0 || !strings.Contains(out.String(), `"op": "hook:replace"`) {
		t.Fatalf("history after a guarded replace: %d %s", code, out.String())
	}

	// A person's change since: STALE_FILE with the change; the bytes stay.
	os.WriteFile(a, []byte("one\nthree\nfour // a person\n"), 0o644)
	reason := hook("BeforeTool", "replace", map[string]any{"file_path": a, "instruction": "x", "old_string": "three", "new_string": "3"}, nil)
	if !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+four // a person") || !strings.Contains(reason, "replace needs no new read") {
		t.Fatalf("stale replace: reason %q", reason)
	}
	if b, _ := os.ReadFile(a); string(b) != "one\nthree\nfour // a person\n" {
		t.Fatalf("the person's bytes were not kept: %q", b)
	}

	// read_file of some lines is a partial read: write_file needs a full one.
	b := filepath.Join(dir, "b.txt")
	os.WriteFile(b, []byte("1\n2\n3\n"), 0o644)
	hook("AfterTool", "read_file", map[string]any{"file_path": b, "start_line": 2, "end_line": 2},
		map[string]any{"llmContent": "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-2 of 4 total lines.\n", "returnDisplay": "Read lines 2-2 of 4 from b.txt"})
	if reason := hook("BeforeTool", "write_file", map[string]any{"file_path": "b.txt", "content": "x\n"}, nil); !strings.HasPrefix(reason, "NOT_READ") || !strings.Contains(reason, "partial_read") {
		t.Fatalf("write_file after a partial read_file: reason %q", reason)
	}
	if reason := hook("BeforeTool", "replace", map[string]any{"file_path": "b.txt", "instruction": "x", "old_string": "2", "new_string": "two"}, nil); reason != "" {
		t.Fatalf("replace after a partial read_file denied: %s", reason)
	}
	hook("AfterTool", "read_file", map[string]any{"file_path": "b.txt", "start_line": 1, "end_line": 3}, map[string]any{"llmContent": "1\n2\n3\n"})
	if reason := hook("BeforeTool", "write_file", map[string]any{"file_path": "b.txt", "content": "x\n"}, nil); reason != "" {
		t.Fatalf("write_file after read_file of every line denied: %s", reason)
	}

	// write_file of a new file: history records that it did not exist.
	newFile := map[string]any{"file_path": "sub/new.txt", "content": "hello\n"}
	if reason := hook("BeforeTool", "write_file", newFile, nil); reason != "" {
		t.Fatalf("write_file of a new file denied: %s", reason)
	}
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "new.txt"), []byte("hello\n"), 0o644)
	hook("AfterTool", "write_file", newFile, map[string]any{"llmContent": "Successfully created and wrote to new file"})
	out.Reset()
	if code := cli(t, dir, &out, "history", "sub/new.txt", "--json"); code != 0 || !strings.Contains(out.String(), `"absent": true`) {
		t.Fatalf("history of the new file: %d %s", code, out.String())
	}
	if code := cli(t, dir, &errb, "verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, errb.String())
	}

	// Other tools pass untouched; a broken event before a tool is denied.
	if reason := hook("BeforeTool", "run_shell_command", map[string]any{"command": "rm a.txt"}, nil); reason != "" {
		t.Fatalf("run_shell_command denied: %s", reason)
	}
	out.Reset()
	run(context.Background(), []string{"--root", dir, "hook", "--client", "gemini"}, strings.NewReader(`{"hook_event_name":"BeforeTool"`), &out, &errb)
	if !strings.Contains(out.String(), `"decision":"deny"`) {
		t.Fatalf("a broken event was not denied: %q", out.String())
	}
}

// cli runs the editguard command line args on dir and returns the exit
// code, with the output in out.
func cli(t *testing.T, dir string, out *bytes.Buffer, args ...string) int {
	t.Helper()
	var errb bytes.Buffer
	code := run(context.Background(), append([]string{"--root", dir}, args...), strings.NewReader(""), out, &errb)
	out.Write(errb.Bytes())
	return code
}

// codexEvent is a Codex CLI 0.169.0 hook event of apply_patch as it sends
// one: the patch is tool_input.command, and after the tool its output is
// tool_response, a string.
func codexEvent(dir, event, patch string) map[string]any {
	ev := map[string]any{
		"session_id":      "01a20853-ac3b-7fc2-ad4c-b6de0db2fe89",
		"turn_id":         "01a20853-ad18-7633-a178-58811ea87fbe",
		"transcript_path": filepath.Join(dir, "rollout.jsonl"),
		"cwd":             dir,
		"hook_event_name": event,
		"model":           "gpt-5.5",
		"permission_mode": "bypassPermissions",
		"tool_name":       "apply_patch",
		"tool_input":      map[string]any{"command": patch},
		"tool_use_id":     "call_script_000",
	}
	if event == "PostToolUse" {
		ev["tool_response"] = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nM a.txt\n"
	}
	return ev
}

func TestHookCodex(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hook := func(event, patch string) string {
		t.Helper()
		reason, _ := hookRunClient(t, dir, "codex", codexEvent(dir, event, patch))
		return reason
	}
	var out bytes.Buffer

	// Codex has no read a hook sees: a patch of a file the session has
	// not seen goes through, and what the file held is kept.
	update := "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+three\n*** End Patch\n"
	if reason := hook("PreToolUse", update); reason != "" {
		t.Fatalf("a patch of an unseen file was denied: %s", reason)
	}
	os.WriteFile(a, []byte("one\nthree\n"), 0o644) // apply_patch's write
	hook("PostToolUse", update)
	if code := cli(t, dir, &out, "history", "a.txt", "--json"); code != 0 || !strings.Contains(out.String(), `"op": "hook:apply_patch"`) {
		t.Fatalf("history after a guarded apply_patch: %d %s", code, out.String())
	}

	// The session has seen the file now: a person's change since is
	// STALE_FILE, in Codex's words, and the bytes stay.
	os.WriteFile(a, []byte("one\nthree\nfour // a person\n"), 0o644)
	next := "*** Begin Patch\n*** Update File: " + a + "\n@@\n-one\n+1\n*** End Patch\n" // an absolute path, which Codex accepts
	reason := hook("PreToolUse", next)
	if !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+four // a person") || !strings.Contains(reason, "apply_patch needs no new read") {
		t.Fatalf("stale apply_patch: reason %q", reason)
	}
	if b, _ := os.ReadFile(a); string(b) != "one\nthree\nfour // a person\n" {
		t.Fatalf("the person's bytes were not kept: %q", b)
	}
	// The refusal showed the change: the same patch goes through now.
	if reason := hook("PreToolUse", next); reason != "" {
		t.Fatalf("the patch after the refusal was denied: %s", reason)
	}

	// One patch adds, deletes, and moves: every file is kept first, and
	// one stale file denies the whole patch.
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
	multi := "*** Begin Patch\n*** Add File: sub/new.txt\n+new\n*** Delete File: old.txt\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-b\n+c\n*** End Patch\n"
	if reason := hook("PreToolUse", multi); reason != "" {
		t.Fatalf("the patch of new files was denied: %s", reason)
	}
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "new.txt"), []byte("new\n"), 0o644)
	os.Remove(filepath.Join(dir, "old.txt"))
	os.Remove(filepath.Join(dir, "b.txt"))
	os.WriteFile(filepath.Join(dir, "c.txt"), []byte("c\n"), 0o644)
	hook("PostToolUse", multi)
	for _, c := range []struct{ file, want string }{
		{"sub/new.txt", `"absent": true`},
		{"old.txt", `"op": "hook:apply_patch"`},
		{"b.txt", `"op": "hook:apply_patch"`},
		{"c.txt", `"absent": true`},
	} {
		out.Reset()
		if code := cli(t, dir, &out, "history", c.file, "--json"); code != 0 || !strings.Contains(out.String(), c.want) {
			t.Errorf("history of %s: %d %s; want %s", c.file, code, out.String(), c.want)
		}
	}
	os.WriteFile(filepath.Join(dir, "c.txt"), []byte("c by a person\n"), 0o644)
	both := "*** Begin Patch\n*** Add File: d.txt\n+d\n*** Update File: c.txt\n@@\n-c by a person\n+c\n*** End Patch\n"
	if reason := hook("PreToolUse", both); !strings.HasPrefix(reason, "STALE_FILE c.txt") {
		t.Fatalf("a patch with one stale file: reason %q", reason)
	}
	out.Reset()
	if code := cli(t, dir, &out, "log"); code != 0 || !strings.Contains(out.String(), "c.txt") {
		t.Fatalf("log: %d %s", code, out.String())
	}
	out.Reset()
	if code := cli(t, dir, &out, "verify"); code != 0 {
		t.Fatalf("verify: %d %s", code, out.String())
	}

	// Shell commands are not a file tool a hook can guard.
	bash := codexEvent(dir, "PreToolUse", "")
	bash["tool_name"], bash["tool_input"] = "Bash", map[string]any{"command": "rm a.txt"}
	if reason, _ := hookRunClient(t, dir, "codex", bash); reason != "" {
		t.Fatalf("Bash denied: %s", reason)
	}
}

// TestHookSubagent: a subagent's events carry its parent's session_id and
// its own agent_id; the subagent has a session of its own, so a file the
// parent read is not read for the subagent, and the subagent's change is
// one the parent has not seen.
func TestHookSubagent(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	os.WriteFile(a, []byte("one\n"), 0o644)
	sub := func(e map[string]any) map[string]any {
		e["agent_id"], e["agent_type"] = "a649ec796f8311e5d", "general-purpose"
		return e
	}
	hookRun(t, dir, ev("PostToolUse", "Read", a, nil))
	if reason, _ := hookRun(t, dir, sub(ev("PreToolUse", "Edit", a, nil))); !strings.HasPrefix(reason, "NOT_READ") {
		t.Fatalf("the subagent's Edit after the parent's Read: %q, want NOT_READ", reason)
	}
	hookRun(t, dir, sub(ev("PostToolUse", "Read", a, nil)))
	if reason, _ := hookRun(t, dir, sub(ev("PreToolUse", "Edit", a, nil))); reason != "" {
		t.Fatalf("the subagent's Edit after its Read: %s", reason)
	}
	os.WriteFile(a, []byte("two\n"), 0o644)
	hookRun(t, dir, sub(ev("PostToolUse", "Edit", a, nil)))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, nil)); !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+two") {
		t.Fatalf("the parent's Edit after the subagent's: %q, want STALE_FILE with the change", reason)
	}

	// Names too long for a session name keep apart.
	long := strings.Repeat("x", 70)
	n1, n2 := hookSessionName("claude", long, "a1"), hookSessionName("claude", long, "a2")
	if len(n1) > 64 || n1 == n2 {
		t.Errorf("hookSessionName of long ids = %q, %q; want distinct names of at most 64 characters", n1, n2)
	}
	if got := hookSessionName("claude", "3f2a-session", ""); got != "claude-3f2a-session" {
		t.Errorf("hookSessionName() = %q, want claude-3f2a-session", got)
	}
}

func TestSessionPart(t *testing.T) {
	re := regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	for _, s := range []string{"", "3f2a-session", "a b\tc", "über/../x", "a\xffb\xfe\xfdc", "-._", "日本語", "id:1/2"} {
		if got, want := sessionPart(s), re.ReplaceAllString(s, "-"); got != want {
			t.Errorf("sessionPart(%q) = %q, want %q", s, got, want)
		}
	}
}
