package hookwire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTopLevelString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`{"hook_event_name":"PostToolBatch"}`, "PostToolBatch", true},
		{` { "session_id" : "s", "n": 12.5e3, "b": true, "z": null, "hook_event_name" : "PostToolBatch" , "x": 1}`, "PostToolBatch", true},
		{`{"tool_input":{"hook_event_name":"PostToolBatch"},"hook_event_name":"PreToolUse"}`, "PreToolUse", true},
		{`{"tool_input":{"command":"echo '\"hook_event_name\":\"PostToolBatch\"'"},"hook_event_name":"PreToolUse"}`, "PreToolUse", true},
		{`{"a":["}", "{", {"hook_event_name":"PostToolBatch"}],"hook_event_name":"Stop"}`, "Stop", true},
		{`{"tool_input":{"hook_event_name":"PostToolBatch"}}`, "", false},
		{`{"s":"a\\\"b","hook_event_name":"X"}`, "X", true},
		{`{"hook_event_name":"Post\u0054oolBatch"}`, "", false},
		{`{"hook_\u0065vent_name":"PostToolBatch"}`, "", false},
		{`["hook_event_name","PostToolBatch"]`, "", false},
		{`{"hook_event_name":1}`, "", false},
		{`{"a":"unterminated`, "", false},
		{`{"a":{"b":1}`, "", false},
		{``, "", false},
	} {
		got, ok := TopLevelString([]byte(c.in), "hook_event_name")
		if got != c.want || ok != c.ok {
			t.Errorf("TopLevelString(%s) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
		// Where it answers, encoding/json agrees.
		var m map[string]any
		if ok && (json.Unmarshal([]byte(c.in), &m) != nil || m["hook_event_name"] != got) {
			t.Errorf("TopLevelString(%s) = %q, encoding/json says %v", c.in, got, m["hook_event_name"])
		}
	}
}

// FuzzTopLevelString: whatever TopLevelString finds in valid JSON is what
// encoding/json finds there.
func FuzzTopLevelString(f *testing.F) {
	f.Add(`{"hook_event_name":"PostToolBatch","tool_calls":[{"tool_name":"Bash"}]}`)
	f.Add(`{"x":{"hook_event_name":"A"},"hook_event_name":"B"}`)
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := TopLevelString([]byte(s), "hook_event_name")
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(s), &m) != nil {
			return // not JSON: no promise
		}
		var v string
		if json.Unmarshal(m["hook_event_name"], &v) != nil || v != got {
			t.Fatalf("TopLevelString(%q) = %q; encoding/json: %s", s, got, m["hook_event_name"])
		}
	})
}

func TestNothingToEnd(t *testing.T) {
	root := t.TempDir()
	batch := []byte(`{"session_id":"s","hook_event_name":"PostToolBatch","tool_calls":[]}`)
	pre := []byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}`)
	if !NothingToEnd(root, batch) {
		t.Error("no state directory: something to end")
	}
	if NothingToEnd(root, pre) {
		t.Error("PreToolUse has nothing to end")
	}
	active := filepath.Join(root, ActiveCommands)
	os.MkdirAll(active, 0o755)
	if !NothingToEnd(root, batch) {
		t.Error("an empty active directory: something to end")
	}
	os.WriteFile(filepath.Join(active, "h-1.json"), []byte("{}"), 0o600)
	if NothingToEnd(root, batch) {
		t.Error("a command in progress: nothing to end")
	}
	// Not a directory (a link, a FIFO): not told, so not nothing.
	os.RemoveAll(active)
	os.Symlink(t.TempDir(), active)
	if NothingToEnd(root, batch) {
		t.Error("a link in place of the active directory: nothing to end")
	}
	if NothingToEnd(filepath.Join(root, "missing"), batch) {
		t.Error("a root that does not exist: nothing to end")
	}
	if strings.Contains(ActiveCommands, "..") {
		t.Fatal(ActiveCommands)
	}
}
