package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// claudeRead is Claude Code 2.1's PostToolUse event of Read as it sends
// one: the input, and the tool_response with the lines the model got.
func claudeRead(path string, input map[string]any, content string, startLine, totalLines int) map[string]any {
	e := ev("PostToolUse", "Read", path, input)
	e["tool_use_id"] = "toolu_01Wjvsy48zPF76nJNsEcFfpM"
	e["tool_response"] = map[string]any{"type": "text", "file": map[string]any{
		"filePath": path, "content": content, "numLines": strings.Count(content, "\n") + 1,
		"startLine": startLine, "totalLines": totalLines,
	}}
	return e
}

// TestHookReadIsWhatTheModelSaw: a person's save between Claude Code's
// Read and the hook after it is not taken for what the model read. The
// read is of the version the tool showed: the Edit and the Write that
// follow are refused as STALE_FILE with the person's change, whose bytes
// stay, and the ledger's record of the refusal says the read showed
// another version.
func TestHookReadIsWhatTheModelSaw(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.go")
	seen := "package a\n\nvar X = 1\n"
	person := "package a\n\nvar X = 1 // a person's\n"
	os.WriteFile(a, []byte(person), 0o644) // saved after the tool read seen
	hookRun(t, dir, claudeRead(a, nil, seen, 1, 4))

	reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", a, map[string]any{"old_string": "var X = 1", "new_string": "var X = 2"}))
	if !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+var X = 1 // a person's") || !strings.Contains(reason, "read_shown") {
		t.Fatalf("Edit after a Read that showed another version: %q, want STALE_FILE with the person's change", reason)
	}
	if b, _ := os.ReadFile(a); string(b) != person {
		t.Fatalf("the person's bytes were not kept: %q", b)
	}
	led, err := os.ReadFile(filepath.Join(dir, ".editguard", "ledger.jsonl"))
	if err != nil || !strings.Contains(string(led), `"error_code":"STALE_FILE"`) || !strings.Contains(string(led), "read_shown") {
		t.Fatalf("the ledger does not record the refusal as of another version read (%v):\n%s", err, led)
	}

	// The same for a whole-file Write, in a session of its own.
	w := claudeRead(a, nil, seen, 1, 4)
	w["session_id"] = "other-session"
	hookRun(t, dir, w)
	pre := ev("PreToolUse", "Write", a, map[string]any{"content": "package a\n"})
	pre["session_id"] = "other-session"
	if reason, _ := hookRun(t, dir, pre); !strings.HasPrefix(reason, "STALE_FILE") {
		t.Fatalf("Write after a Read that showed another version: %q, want STALE_FILE", reason)
	}

	// A ranged Read that showed another version: refused too, without a
	// diff (the session saw that version only in part).
	b := filepath.Join(dir, "b.txt")
	os.WriteFile(b, []byte("1\ntwo by a person\n3\n"), 0o644)
	hookRun(t, dir, claudeRead(b, map[string]any{"offset": 2, "limit": 1}, "2", 2, 4))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", b, map[string]any{"old_string": "3", "new_string": "three"})); !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "only part of a version") {
		t.Fatalf("Edit after a ranged Read that showed another version: %q, want STALE_FILE", reason)
	}
}

// TestHookReadShownMatches: a Read whose response is what the file holds
// is a read of the file, as before: full when it showed every line (also
// in the numbered form of older versions, and for a CRLF file, whose
// lines the model gets without "\r"), partial when offset and limit left
// lines out, so that a Write needs a full read and an Edit does not.
func TestHookReadShownMatches(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.go")
	os.WriteFile(a, []byte("package a\r\n\r\nvar X = 1\r\n"), 0o644)
	hookRun(t, dir, claudeRead(a, nil, "package a\n\nvar X = 1\n", 1, 4))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", a, map[string]any{"content": "x\n"})); reason != "" {
		t.Fatalf("Write after a Read that showed the file: %s", reason)
	}

	n := filepath.Join(dir, "n.txt")
	os.WriteFile(n, []byte("one\ntwo\n"), 0o644)
	hookRun(t, dir, claudeRead(n, nil, "     1→one\n     2→two\n     3→", 1, 3))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", n, map[string]any{"content": "x\n"})); reason != "" {
		t.Fatalf("Write after a numbered Read that showed the file: %s", reason)
	}

	b := filepath.Join(dir, "b.txt")
	os.WriteFile(b, []byte("1\n2\n3\n"), 0o644)
	hookRun(t, dir, claudeRead(b, map[string]any{"offset": 2, "limit": 1}, "2", 2, 4))
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", b, map[string]any{"content": "x\n"})); !strings.HasPrefix(reason, "NOT_READ") || !strings.Contains(reason, "partial_read") {
		t.Fatalf("Write after a ranged Read: %q, want NOT_READ (partial_read)", reason)
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", b, map[string]any{"old_string": "2", "new_string": "two"})); reason != "" {
		t.Fatalf("Edit after a ranged Read: %s", reason)
	}

	// Claude Code's answer for a file unchanged since the model's last
	// Read keeps that read: here, the partial one.
	hookRun(t, dir, ev("PostToolUse", "Edit", b, nil)) // the Edit did not run
	unchanged := ev("PostToolUse", "Read", b, map[string]any{"offset": 2, "limit": 1})
	unchanged["tool_response"] = map[string]any{"type": "file_unchanged", "file": map[string]any{"filePath": b}}
	hookRun(t, dir, unchanged)
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", b, map[string]any{"content": "x\n"})); !strings.HasPrefix(reason, "NOT_READ") {
		t.Fatalf("Write after a Read answered file_unchanged: %q, want the earlier partial read to stand", reason)
	}
}

// TestHookGeminiReadShown: Gemini CLI's read_file answers with the lines
// in llmContent; a person's save between the tool and the hook makes the
// replace that follows STALE_FILE, and a ranged read's header is read.
func TestHookGeminiReadShown(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo by a person\n"), 0o644)
	hookRunClient(t, dir, "gemini", geminiEvent(dir, "AfterTool", "read_file", map[string]any{"file_path": "a.txt"}, map[string]any{"llmContent": "one\ntwo\n", "returnDisplay": ""}))
	replace := map[string]any{"file_path": "a.txt", "instruction": "x", "old_string": "one", "new_string": "1"}
	if reason, _ := hookRunClient(t, dir, "gemini", geminiEvent(dir, "BeforeTool", "replace", replace, nil)); !strings.HasPrefix(reason, "STALE_FILE") || !strings.Contains(reason, "+two by a person") {
		t.Fatalf("replace after a read_file that showed another version: %q, want STALE_FILE with the change", reason)
	}

	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("1\n2\n3\n"), 0o644)
	content := "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-2 of 4 total lines.\nAction: To read more of the file, you can use the 'start_line' and 'end_line' parameters in a subsequent 'read_file' call. For example, to read the next section of the file, use start_line: 3.\n\n--- FILE CONTENT (truncated) ---\n2"
	hookRunClient(t, dir, "gemini", geminiEvent(dir, "AfterTool", "read_file", map[string]any{"file_path": "b.txt", "start_line": 2, "end_line": 2}, map[string]any{"llmContent": content, "returnDisplay": "Read lines 2-2 of 4 from b.txt"}))
	if reason, _ := hookRunClient(t, dir, "gemini", geminiEvent(dir, "BeforeTool", "replace", map[string]any{"file_path": "b.txt", "instruction": "x", "old_string": "2", "new_string": "two"}, nil)); reason != "" {
		t.Fatalf("replace after a ranged read_file that showed the file: %s", reason)
	}
	if reason, _ := hookRunClient(t, dir, "gemini", geminiEvent(dir, "BeforeTool", "write_file", map[string]any{"file_path": "b.txt", "content": "x\n"}, nil)); !strings.Contains(reason, "partial_read") {
		t.Fatalf("write_file after a ranged read_file: %q, want NOT_READ (partial_read)", reason)
	}
}

// TestHookShellReadLongerThanShown: Claude Code shows the model 30,000
// characters of a command's output at most, so "cat" of a file of 40,000
// is a partial read (an Edit goes through, a Write needs a full read),
// as a Read of part of it is; of a short file, a full one.
func TestHookShellReadLongerThanShown(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz.....\n", 1000)[:40_000]), 0o644)
	os.WriteFile(filepath.Join(dir, "small.txt"), []byte("short\n"), 0o644)
	// 11,000 characters of 3 bytes: 33,000 bytes, under 30,000 characters.
	os.WriteFile(filepath.Join(dir, "wide.txt"), []byte(strings.Repeat("€", 11_000)+"\n"), 0o644)
	// 28,000 characters in 4,000 lines: with a number before each line
	// (cat -n), 56,000.
	os.WriteFile(filepath.Join(dir, "lines.txt"), []byte(strings.Repeat("abcdef\n", 4000)), 0o644)
	for i, c := range []string{"cat big.txt", "cat small.txt", "cat wide.txt", "cat lines.txt", "cat -n lines.txt", "cat lines.txt big.txt"} {
		e := map[string]any{"session_id": fmt.Sprint("s", i), "tool_name": "Bash", "tool_input": map[string]any{"command": c}, "cwd": dir, "tool_use_id": fmt.Sprint("r", i)}
		e["hook_event_name"] = "PreToolUse"
		hookRaw(t, dir, "claude-code", e)
		e["hook_event_name"] = "PostToolUse"
		e["tool_response"] = map[string]any{"stdout": "(as shown)", "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}
		hookRaw(t, dir, "claude-code", e)
	}
	check := func(session, file, tool string, denied bool) {
		t.Helper()
		pre := ev("PreToolUse", tool, filepath.Join(dir, file), map[string]any{"old_string": "0", "new_string": "1", "content": "x\n"})
		pre["session_id"] = session
		reason, _ := hookRun(t, dir, pre)
		if denied && (!strings.HasPrefix(reason, "NOT_READ") || !strings.Contains(reason, "partial_read")) || !denied && reason != "" {
			t.Errorf("%s of %s after the command of %s: %q, want denied=%v (partial read)", tool, file, session, reason, denied)
		}
	}
	check("s0", "big.txt", "Edit", false)
	check("s0", "big.txt", "Write", true)
	check("s1", "small.txt", "Write", false)
	check("s2", "wide.txt", "Write", false)
	check("s3", "lines.txt", "Write", false)
	check("s4", "lines.txt", "Write", true)
	// One output for both files: past the limit, neither is read whole.
	check("s5", "lines.txt", "Write", true)
	check("s5", "big.txt", "Write", true)

	if got := utf16Len("a€😀"); got != 4 {
		t.Errorf("utf16Len(a€😀) = %d, want 4", got)
	}
}
