package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShellReads(t *testing.T) {
	for cmd, want := range map[string]string{
		"cat a.go":               "[{a.go true false}]",
		"cat -n a.go 'b c.txt'":  "[{a.go true true} {b c.txt true true}]",
		"head -n 20 a.go":        "[{a.go false false}]",
		"head -5 a.go":           "[{a.go false false}]",
		"tail -n +3 a.go":        "[{a.go false false}]",
		"sed -n '10,20p' a.go":   "[{a.go false false}]",
		"sed -n 5p a.go":         "[{a.go false false}]",
		"grep -n func a.go b.go": "[{a.go false false} {b.go false false}]",
		"wc -l a.go":             "[{a.go false false}]",
		"less a.go":              "[{a.go true false}]",
		"cat a.go > b.go":        "[]",
		"cat a.go | head":        "[]",
		"cat $HOME/a":            "[]",
		"cat *.go":               "[]",
		"cat a.go; rm a.go":      "[]",
		"sed -i 's/a/b/' a.go":   "[]",
		"sed -n 's/a/b/p' a.go":  "[]",
		"cat --show-all a.go":    "[]",
		"head -n a.go":           "[]",
		"grep -r x .":            "[]",
		`cat "a $b"`:             "[]",
		"cat 'unterminated":      "[]",
		"cat -":                  "[]",
		"echo hi":                "[]",
		"FOO=1 cat a.go":         "[]",
		"cat":                    "[]",
		"grep pattern":           "[]",
		"cat a.go && echo done":  "[]",
		"cat `ls`":               "[]",
		"cat a.go\nrm a.go":      "[]",
		"grep -- -n a.go":        "[{a.go false false}]",
		"cat \"plain name.txt\"": "[{plain name.txt true false}]",
		"nl a.go":                "[{a.go true true}]",
		"tail -c 100 a.go":       "[{a.go false false}]",
		"head -n 10 a.go b.go":   "[{a.go false false} {b.go false false}]",
		"more a.go":              "[{a.go true false}]",
		"sed -n '1,$p' a.go":     "[{a.go false false}]",
	} {
		got := fmt.Sprint(shellReads(cmd))
		if got != want {
			t.Errorf("shellReads(%q) = %s, want %s", cmd, got, want)
		}
	}
}

// TestHookShellReadIsARead: under Claude Code's hooks, "cat f" through Bash
// is a read of f, so an Edit of f after it is let through; "head" is a
// partial read, enough for an Edit but not a Write.
func TestHookShellReadIsARead(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(dir, f), []byte(strings.Repeat("line\n", 30)), 0o644)
	}
	for i, c := range []string{"cat a.txt", "head -n 5 b.txt"} {
		ev := map[string]any{"session_id": "3f2a-session", "tool_name": "Bash", "tool_input": map[string]any{"command": c}, "cwd": dir, "tool_use_id": fmt.Sprint("r", i)}
		ev["hook_event_name"] = "PreToolUse"
		hookRaw(t, dir, "claude-code", ev)
		ev["hook_event_name"] = "PostToolUse"
		hookRaw(t, dir, "claude-code", ev)
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", filepath.Join(dir, "a.txt"), nil)); reason != "" {
		t.Errorf("Edit after cat: %s", reason)
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", filepath.Join(dir, "a.txt"), nil)); reason != "" {
		t.Errorf("Write after cat: %s", reason)
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Edit", filepath.Join(dir, "b.txt"), nil)); reason != "" {
		t.Errorf("Edit after head: %s", reason)
	}
	if reason, _ := hookRun(t, dir, ev("PreToolUse", "Write", filepath.Join(dir, "b.txt"), nil)); !strings.Contains(reason, "NOT_READ") && !strings.Contains(reason, "partial") {
		t.Errorf("Write after head (a partial read): %q, want it denied", reason)
	}
}
