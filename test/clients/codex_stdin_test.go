package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodexWriteStdin: Codex's write_stdin types into a command session
// exec_command left running (here an interactive sh on a terminal), which
// can change files. Codex 0.171.0 sends no hook event for write_stdin, not
// even to a hook whose matcher matches every tool; the PostToolUse of the
// exec_command that opened the session comes when its process exits (here
// after the write_stdin that typed exit), with the exec_command's own
// input. So editguard's checkpoint around that exec_command spans the
// session: what the model typed into it is recorded, when the session
// ends, as the exec_command's change (tool Bash, its command "sh"), and a
// command run after it is checkpointed on its own.
func TestCodexWriteStdin(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "codex")
	// A second hook for every event and tool, beside editguard's, that
	// logs what Codex sends.
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cfg := filepath.Join(ws, ".codex", "config.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"PreToolUse", "PostToolUse"} {
		b = append(b, "\n[[hooks."+ev+"]]\nmatcher = \".*\"\n[[hooks."+ev+".hooks]]\ntype = \"command\"\ncommand = \"sh -c 'cat >> "+events+"; echo >> "+events+"'\"\n"...)
	}
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sid := &codexSession{events: events}
	script := []Step{
		{Tool: "exec_command", Input: map[string]any{"cmd": "sh", "tty": true, "yield_time_ms": 500}},
		{Tool: "write_stdin", Input: map[string]any{"session_id": sid, "chars": "echo typed > w.txt\n", "yield_time_ms": 1000}},
		{Tool: "write_stdin", Input: map[string]any{"session_id": sid, "chars": "exit\n", "yield_time_ms": 1000}},
		{Tool: "exec_command", Input: map[string]any{"cmd": "echo after > after.txt"}},
	}
	run := runCodex(t, ws, script, codexOptions{project: true, model: "gpt-5.5",
		args: []string{"--dangerously-bypass-hook-trust", "--dangerously-bypass-approvals-and-sandbox"}})
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if !strings.Contains(run.Results[1].Content, "Process running with session ID") || !strings.Contains(run.Results[2].Content, "Process exited with code 0") {
		t.Fatalf("write_stdin did not reach the session: %q, %q", truncate(run.Results[1].Content, 400), truncate(run.Results[2].Content, 400))
	}
	if got, err := os.ReadFile(filepath.Join(ws, "w.txt")); err != nil || string(got) != "typed\n" {
		t.Fatalf("w.txt, which the model typed into the session: %q, %v", got, err)
	}

	// What Codex sent: no event for write_stdin; the exec_command's
	// PostToolUse once its session exited, before the next command's.
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, line := range strings.Split(string(data), "\n") {
		var ev struct {
			Event string `json:"hook_event_name"`
			Tool  string `json:"tool_name"`
			ID    string `json:"tool_use_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event != "" {
			seen = append(seen, ev.Event+" "+ev.Tool+" "+ev.ID)
		}
	}
	want := []string{"PreToolUse Bash " + codexCallID(0), "PostToolUse Bash " + codexCallID(0), "PreToolUse Bash " + codexCallID(3), "PostToolUse Bash " + codexCallID(3)}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("Codex's hook events:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}

	// The typed change is the session's exec_command's, recorded.
	recs, _ := shellRecords(t, ws, "Bash")
	if recs["w.txt"] != "sh" || recs["after.txt"] != "echo after > after.txt" {
		t.Errorf("the ledger's Bash records: %v; want w.txt by the command sh, after.txt by its own", recs)
	}
	out, _ := exec.Command(editguardBin(t), "--root", ws, "log").CombinedOutput()
	t.Logf("ledger:\n%s", out)
}

// codexSession is a write_stdin's session_id: the one Codex gave the
// command session the first exec_command opened, which is random. Codex
// writes it into the session's transcript, whose path its hooks' events
// carry; the fake model reads it when it sends the call.
type codexSession struct{ events string }

func (c *codexSession) MarshalJSON() ([]byte, error) {
	b, _ := os.ReadFile(c.events)
	m := regexp.MustCompile(`"transcript_path":"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		return []byte("0"), nil
	}
	tr, _ := os.ReadFile(string(m[1]))
	id := regexp.MustCompile(`session ID (\d+)`).FindSubmatch(tr)
	if id == nil {
		return []byte("0"), nil
	}
	return id[1], nil
}
