package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHookShellHostileNames: a client's shell command, guarded by its
// hooks, overwrites a person's work in a file whose name is not UTF-8 and
// creates one whose name holds a newline and a terminal escape. Every
// change is recorded under the exact name, verify passes, and the
// person's version comes back byte for byte through the CLI, which takes
// the name as its argument.
func TestHookShellHostileNames(t *testing.T) {
	dir := t.TempDir()
	latin := "caf\xe9.txt"
	escape := "n\nl\x1b]52;c;aGk=\x07"
	if err := os.WriteFile(filepath.Join(dir, latin), []byte("a person's work\n"), 0o644); err != nil {
		t.Skip("the file system refuses non-UTF-8 names:", err)
	}
	command := `printf 'agent\n' > "$(printf 'caf\351.txt')" && printf 'x' > "$(printf 'n\nl\033]52;c;aGk=\007')"`
	ev := map[string]any{"session_id": "s1", "tool_name": "Bash", "tool_input": map[string]any{"command": command}, "cwd": dir, "tool_use_id": "call-1"}
	ev["hook_event_name"] = "PreToolUse"
	hookRaw(t, dir, "claude-code", ev)
	sh(t, dir, command)
	ev["hook_event_name"] = "PostToolUse"
	hookRaw(t, dir, "claude-code", ev)
	for _, name := range []string{latin, escape} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("the command did not make %q: %v", name, err)
		}
	}

	verify := func(step string) {
		t.Helper()
		var out bytes.Buffer
		if code := cli(t, dir, &out, "verify"); code != 0 {
			t.Fatalf("verify after %s: %d\n%s", step, code, out.String())
		}
	}
	verify("the command")

	var log bytes.Buffer
	if code := cli(t, dir, &log, "log", "--json"); code != 0 {
		t.Fatal(log.String())
	}
	seen := map[string]bool{}
	for _, line := range logLines(t, log.String()) {
		var r struct {
			Path    string `json:"path"`
			PathHex string `json:"path_hex"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		p := r.Path
		if r.PathHex != "" {
			b, err := hex.DecodeString(r.PathHex)
			if err != nil {
				t.Fatal(err)
			}
			p = string(b)
		}
		seen[p] = true
	}
	for _, name := range []string{latin, escape} {
		if !seen[name] {
			t.Errorf("log --json has no record of %q: %v", name, seen)
		}
	}

	var hist bytes.Buffer
	if code := cli(t, dir, &hist, "history", latin, "--json"); code != 0 {
		t.Fatalf("history: %s", hist.String())
	}
	var h struct {
		Versions []struct {
			ID string `json:"version"`
		} `json:"versions"`
	}
	err := json.Unmarshal(hist.Bytes(), &h)
	vs := h.Versions
	if err != nil || len(vs) != 1 {
		t.Fatalf("history of %q: %s (%v), want the person's version", latin, hist.String(), err)
	}
	var res bytes.Buffer
	if code := cli(t, dir, &res, "--session=claude-s1", "read", latin); code != 0 {
		t.Fatalf("read: %s", res.String())
	}
	if code := cli(t, dir, &res, "--session=claude-s1", "restore", latin, vs[0].ID, "--yes"); code != 0 {
		t.Fatalf("restore: %s", res.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, latin)); string(b) != "a person's work\n" {
		t.Fatalf("after the restore %q holds %q", latin, b)
	}
	verify("the restore")

	// The command's changes were made while nothing told its writes from
	// anyone else's: rewind leaves them unless forced.
	res.Reset()
	if code := cli(t, dir, &res, "rewind", "--session", "claude-s1", "--yes"); code != 3 || !strings.Contains(res.String(), "by the command or by someone else") {
		t.Fatalf("rewind without --force: exit %d, want 3 with the writer unknown named\n%s", code, res.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, escape)); err != nil {
		t.Fatalf("the refused rewind removed %q: %v", escape, err)
	}
	res.Reset()
	if code := cli(t, dir, &res, "rewind", "--session", "claude-s1", "--force", "--yes"); code != 0 {
		t.Fatalf("rewind --force: %s", res.String())
	}
	verify("the rewind")
	if _, err := os.Lstat(filepath.Join(dir, escape)); !os.IsNotExist(err) {
		t.Errorf("the rewind left %q, which the command created (%v)", escape, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, latin)); string(b) != "a person's work\n" {
		t.Errorf("after the rewind %q holds %q, want the person's work", latin, b)
	}
}
