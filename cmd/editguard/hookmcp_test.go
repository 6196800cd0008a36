package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHookMCP sends Claude Code's events to "hook --mcp" as its mcp_tool
// hooks do, each field interpolated into a string: a Read is recorded, an
// Edit after another program changed the same line is denied with
// STALE_FILE, an Edit after a new Read is let through and recorded, and
// an Edit of a file never read is denied with NOT_READ.
func TestHookMCP(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	e := &env{root: dir, sessionName: defaultSession, stderr: &stderr}
	if _, err := e.workspace(); err != nil {
		t.Fatal(err)
	}
	defer e.ws.Close()
	var pending sync.WaitGroup
	srv := newHookMCPServer(e, false, &pending)
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "claude-code"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != hookToolName {
		t.Fatalf("tools = %+v, %v; want the one tool %q", tools, err, hookToolName)
	}
	// call sends an event as Claude Code's interpolation makes it: every
	// value a string, objects as JSON text.
	call := func(event, tool string, input, response map[string]any) string {
		t.Helper()
		in, _ := json.Marshal(input)
		args := map[string]any{"hook_event_name": event, "session_id": "3f2a", "agent_id": "", "tool_name": tool,
			"cwd": dir, "tool_input": string(in), "tool_use_id": "toolu_1"}
		if response != nil {
			out, _ := json.Marshal(response)
			args["tool_response"] = string(out)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: hookToolName, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			t.Fatalf("%s %s: error result %+v", event, tool, res.Content)
		}
		pending.Wait()
		if len(res.Content) != 1 {
			t.Fatalf("%s %s: content %+v", event, tool, res.Content)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	edit := map[string]any{"file_path": "a.go", "old_string": "var X = 1", "new_string": "var X = 2"}
	if out := call("PostToolUse", "Read", map[string]any{"file_path": a}, map[string]any{"type": "text"}); out != "" {
		t.Errorf("the Read's answer = %q, want none", out)
	}
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := call("PreToolUse", "Edit", edit, nil); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "STALE_FILE") {
		t.Errorf("the Edit after another program's change: %q, want a denial with STALE_FILE", out)
	}
	call("PostToolUse", "Read", map[string]any{"file_path": a}, map[string]any{"type": "text"})
	edit["old_string"] = "var X = 10"
	if out := call("PreToolUse", "Edit", edit, nil); out != "" {
		t.Errorf("the Edit after a new Read: %q, want it let through", out)
	}
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 2\n"), 0o644); err != nil { // the tool's write
		t.Fatal(err)
	}
	call("PostToolUse", "Edit", edit, map[string]any{"filePath": a})
	if out := call("PreToolUse", "Write", map[string]any{"file_path": filepath.Join(dir, "b.go"), "content": "x"}, nil); out != "" {
		t.Errorf("a Write of a new file: %q, want it let through", out)
	}
	os.WriteFile(filepath.Join(dir, "c.go"), []byte("c\n"), 0o644)
	if out := call("PreToolUse", "Edit", map[string]any{"file_path": "c.go", "old_string": "c", "new_string": "d"}, nil); !strings.Contains(out, "NOT_READ") {
		t.Errorf("an Edit of a file never read: %q, want NOT_READ", out)
	}
	var log bytes.Buffer
	if code := run(ctx, []string{"--root", dir, "log", "--json"}, nil, &log, &stderr); code != 0 {
		t.Fatalf("log: %s", stderr.String())
	}
	if !strings.Contains(log.String(), `"tool":"hook:Edit","path":"a.go","args":{"path":"a.go"},`) || !strings.Contains(log.String(), `"outcome":"ok"`) {
		t.Errorf("the ledger has no record of the Edit:\n%s", log.String())
	}
}
