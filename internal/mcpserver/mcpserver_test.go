package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newWorkspace makes a workspace holding files.
func newWorkspace(t testing.TB, opts *editguard.Options, files map[string]string) *editguard.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := editguard.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func newServer(t testing.TB, ws *editguard.Workspace, approve string) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(ws, &mcpserver.Options{Approve: approve})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// legacyVersion is the latest protocol revision with sessions: the tests
// that connect with it check what clients of the earlier revisions see.
const legacyVersion = "2025-11-25"

// connect starts one MCP session of srv over in-memory transports at
// legacyVersion and returns the client's end.
func connect(t testing.TB, srv *mcpserver.Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectAt(t, srv, copts, legacyVersion)
}

// connectAt is connect at protocol revision version.
func connectAt(t testing.TB, srv *mcpserver.Server, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.NewMCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) protocol error: %v", name, err)
	}
	return res
}

// textOnly are the tools whose result the model reads as text alone: no
// structuredContent, the facts in _meta.
var textOnly = map[string]bool{"read_file": true, "write_file": true, "edit_file": true, "delete_file": true, "move_file": true, "restore_file": true,
	"read_multiple_files": true, "directory_tree": true, "file_diff": true, "find_files": true, "search_text": true, "apply_patch": true, "undo_patch": true,
	"list_directory": true, "file_info": true, "file_history": true}

// ok calls a tool that must succeed and returns its structured content, or
// for a text-only tool the result in _meta.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res := callTool(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", name, args, text(res))
	}
	if text(res) == "" {
		t.Errorf("%s: no text content", name)
	}
	if textOnly[name] {
		if res.StructuredContent != nil {
			t.Errorf("%s: structuredContent %v, want none (clients would show it instead of the text)", name, res.StructuredContent)
		}
		m, isMap := res.Meta[mcpserver.MetaResult].(map[string]any)
		if !isMap {
			t.Fatalf("%s: _meta[%s] is %T, want an object", name, mcpserver.MetaResult, res.Meta[mcpserver.MetaResult])
		}
		for _, big := range []string{"content", "diff"} {
			if _, has := m[big]; has {
				t.Errorf("%s: _meta result has %q, want it only in the text", name, big)
			}
		}
		m["text"] = text(res) // for the tests
		return m
	}
	m, isMap := res.StructuredContent.(map[string]any)
	if !isMap {
		t.Fatalf("%s: structuredContent is %T, want an object", name, res.StructuredContent)
	}
	return m
}

// fails calls a tool that must fail with code and returns the error object.
func fails(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, code editguard.Code) map[string]any {
	t.Helper()
	res := callTool(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want isError with %s: %s", name, args, code, text(res))
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: error has structuredContent %v, want the text alone", name, res.StructuredContent)
	}
	e, isMap := res.Meta[mcpserver.MetaError].(map[string]any)
	if !isMap {
		t.Fatalf("%s: error _meta[%s] is %T, want the error object", name, mcpserver.MetaError, res.Meta[mcpserver.MetaError])
	}
	if e["code"] != string(code) {
		t.Fatalf("%s(%v) error code = %v, want %s; error %v", name, args, e["code"], code, e)
	}
	// _meta holds the whole error object; the text renders it for the
	// model: the code and the message first, the hint last.
	msg, _ := e["message"].(string)
	hint, _ := e["recovery_hint"].(string)
	if msg == "" || hint == "" {
		t.Errorf("%s: error _meta %v lacks the message or the recovery hint", name, e)
	}
	if !strings.HasPrefix(text(res), string(code)) || !strings.Contains(text(res), ": "+msg+"\n") || !strings.HasSuffix(text(res), "\nhint: "+hint+"\n") {
		t.Errorf("%s: text content %q does not give the code, the message %q and the hint %q", name, text(res), msg, hint)
	}
	return e
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, isText := c.(*mcp.TextContent); isText {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func readDisk(t *testing.T, ws *editguard.Workspace, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestListTools(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, nil)
	cs := connect(t, newServer(t, ws, mcpserver.ApproveAuto), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type annot struct{ readOnly, destructive bool }
	want := map[string]annot{
		"read_file": {true, false}, "list_directory": {true, false}, "file_info": {true, false}, "file_history": {true, false},
		"edit_file": {false, true}, "write_file": {false, true}, "delete_file": {false, true}, "move_file": {false, true}, "create_directory": {false, false},
		"read_multiple_files": {true, false}, "directory_tree": {true, false}, "file_diff": {true, false}, "find_files": {true, false}, "search_text": {true, false}, "list_allowed_directories": {true, false}, "apply_patch": {false, true}, "undo_patch": {false, true}, "restore_file": {false, true}, "begin_turn": {false, false}, "begin_session": {false, false},
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		w, known := want[tool.Name]
		if !known {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w.readOnly || a.DestructiveHint == nil || *a.DestructiveHint != w.destructive {
			t.Errorf("%s annotations = %+v, want readOnly %v destructive %v", tool.Name, a, w.readOnly, w.destructive)
		}
		schema, _ := tool.InputSchema.(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if schema["type"] != "object" || schema["additionalProperties"] != false || props == nil {
			t.Errorf("%s input schema = %v, want a closed object schema", tool.Name, tool.InputSchema)
		}
		if !slices.Contains([]string{"begin_turn", "begin_session", "move_file", "read_multiple_files", "directory_tree", "find_files", "search_text", "list_allowed_directories", "apply_patch", "undo_patch"}, tool.Name) && props["path"] == nil {
			t.Errorf("%s input schema has no path property", tool.Name)
		}
		if tool.Title == "" {
			t.Errorf("%s has no title", tool.Name)
		}
		if (tool.OutputSchema != nil) == textOnly[tool.Name] {
			t.Errorf("%s output schema = %v; want one exactly for the tools with structured results", tool.Name, tool.OutputSchema)
		}
		if len(tool.Description) < 80 {
			t.Errorf("%s description %q is too thin for a model", tool.Name, tool.Description)
		}
	}
	if len(names) != len(want) {
		t.Errorf("tools = %v, want %d tools", names, len(want))
	}
	edit := res.Tools[slices.IndexFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "edit_file" })]
	if !strings.Contains(edit.Description, "STALE_FILE") || !strings.Contains(edit.Description, "read_file") {
		t.Errorf("edit_file description does not say how to recover from STALE_FILE: %q", edit.Description)
	}
}

func TestTwoClientsConflict(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"src/a.go": "package a\n\nvar X = 1\n"})
	srv := newServer(t, ws, mcpserver.ApproveAuto)
	a, b := connect(t, srv, nil), connect(t, srv, nil)

	r := ok(t, a, "read_file", map[string]any{"path": "src/a.go"})
	if !strings.HasSuffix(r["text"].(string), "     1\tpackage a\n     2\t\n     3\tvar X = 1\n") || r["total_lines"] != 3.0 || r["line_ending"] != "lf" {
		t.Errorf("read_file = %v", r)
	}
	ok(t, b, "read_file", map[string]any{"path": "src/a.go"})
	m := ok(t, a, "edit_file", map[string]any{"path": "src/a.go", "old_string": "X = 1", "new_string": "X = 2"})
	if d, _ := m["text"].(string); !strings.Contains(d, "+var X = 2") {
		t.Errorf("edit diff = %q", d)
	}
	e := fails(t, b, "edit_file", map[string]any{"path": "src/a.go", "old_string": "X = 1", "new_string": "X = 3"}, editguard.CodeStaleFile)
	details, _ := e["details"].(map[string]any)
	if details["reason"] != "modified" || details["current_sha256"] != m["sha256"] {
		t.Errorf("stale details = %v, want reason modified and current_sha256 %v", details, m["sha256"])
	}
	if got := readDisk(t, ws, "src/a.go"); got != "package a\n\nvar X = 2\n" {
		t.Fatalf("after the refused edit the file is %q, want a's edit kept", got)
	}
	// The recovery the error names: read again, redo.
	ok(t, b, "read_file", map[string]any{"path": "src/a.go"})
	ok(t, b, "edit_file", map[string]any{"path": "src/a.go", "old_string": "X = 2", "new_string": "X = 3"})
	if got := readDisk(t, ws, "src/a.go"); got != "package a\n\nvar X = 3\n" {
		t.Errorf("after recovery the file is %q", got)
	}
	// a's baseline is now stale too.
	fails(t, a, "write_file", map[string]any{"path": "src/a.go", "content": "clobber\n"}, editguard.CodeStaleFile)
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, &editguard.Options{Deny: []string{".git/**", "vendor/**"}},
		map[string]string{"a.txt": "a\n", ".git/config": "[core]\n", "vendor/lib.go": "package lib\n"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(ws.Dir(), "escape")); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, newServer(t, ws, mcpserver.ApproveAuto), nil)
	tests := []struct {
		tool string
		args map[string]any
		code editguard.Code
	}{
		{"edit_file", map[string]any{"path": "a.txt", "old_string": "a", "new_string": "b"}, editguard.CodeNotRead},
		{"write_file", map[string]any{"path": "a.txt", "content": "b\n"}, editguard.CodeNotRead},
		{"read_file", map[string]any{"path": "../outside"}, editguard.CodeOutsideRoot},
		{"read_file", map[string]any{"path": "escape"}, editguard.CodeOutsideRoot},
		{"write_file", map[string]any{"path": filepath.Join(outside, "new"), "content": "x"}, editguard.CodeOutsideRoot},
		{"list_directory", map[string]any{"path": ".."}, editguard.CodeOutsideRoot},
		{"write_file", map[string]any{"path": ".git/hooks/pre-commit", "content": "evil"}, editguard.CodeProtectedPath},
		{"write_file", map[string]any{"path": "vendor/new.go", "content": "x"}, editguard.CodeProtectedPath},
		{"read_file", map[string]any{"path": ".editguard/ledger.jsonl"}, editguard.CodeProtectedPath},
		{"read_file", map[string]any{"path": "a.txt", "bogus": true}, editguard.CodeInvalidArgument},
		{"read_file", map[string]any{"path": 12}, editguard.CodeInvalidArgument},
	}
	for _, tt := range tests {
		fails(t, cs, tt.tool, tt.args, tt.code)
	}
	// Reading a denied path is allowed; changing it is not, even after a read.
	ok(t, cs, "read_file", map[string]any{"path": "vendor/lib.go"})
	fails(t, cs, "edit_file", map[string]any{"path": "vendor/lib.go", "old_string": "lib", "new_string": "x"}, editguard.CodeProtectedPath)
	for name, want := range map[string]string{"a.txt": "a\n", ".git/config": "[core]\n", "vendor/lib.go": "package lib\n"} {
		if got := readDisk(t, ws, name); got != want {
			t.Errorf("%s = %q after refusals, want %q", name, got, want)
		}
	}
	for _, name := range []string{".git/hooks/pre-commit", "vendor/new.go", filepath.Join(outside, "new")} {
		if !filepath.IsAbs(name) {
			name = filepath.Join(ws.Dir(), name)
		}
		if _, err := os.Stat(name); err == nil {
			t.Errorf("%s was created", name)
		}
	}
}

func TestDryRun(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\ntwo\n"})
	cs := connect(t, newServer(t, ws, mcpserver.ApproveAuto), nil)
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"edit_file", map[string]any{"path": "a.txt", "old_string": "two", "new_string": "2", "dry_run": true}},
		{"write_file", map[string]any{"path": "a.txt", "content": "new\n", "dry_run": true}},
		{"write_file", map[string]any{"path": "b.txt", "content": "new\n", "dry_run": true}},
	} {
		m := ok(t, cs, c.tool, c.args)
		if m["dry_run"] != true || m["bytes_written"] != 0.0 || !strings.Contains(m["text"].(string), "\n@@ ") {
			t.Errorf("%s dry run = %v, want dry_run, nothing written, a diff", c.tool, m)
		}
	}
	if got := readDisk(t, ws, "a.txt"); got != "one\ntwo\n" {
		t.Errorf("a.txt = %q after dry runs", got)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "b.txt")); err == nil {
		t.Error("a dry run created b.txt")
	}
}

// elicitingClient answers every approval question with action and the
// approve field, and records the questions.
type elicitingClient struct {
	action  string
	approve bool

	mu        sync.Mutex
	questions []*mcp.ElicitParams
}

func (c *elicitingClient) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		c.mu.Lock()
		c.questions = append(c.questions, req.Params)
		c.mu.Unlock()
		if c.action != "accept" {
			return &mcp.ElicitResult{Action: c.action}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": c.approve}}, nil
	}}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		client  *elicitingClient // nil: a client without elicitation
		written bool
	}{
		{"accept", &elicitingClient{action: "accept", approve: true}, true},
		{"accept without approve", &elicitingClient{action: "accept", approve: false}, false},
		{"decline", &elicitingClient{action: "decline"}, false},
		{"cancel", &elicitingClient{action: "cancel"}, false},
		{"no elicitation", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, nil, map[string]string{"g.txt": "keep me\n"})
			var copts *mcp.ClientOptions
			if tt.client != nil {
				copts = tt.client.options()
			}
			cs := connect(t, newServer(t, ws, mcpserver.ApproveAsk), copts)
			ok(t, cs, "read_file", map[string]any{"path": "g.txt"})
			// A dry run shows the diff without asking.
			ok(t, cs, "edit_file", map[string]any{"path": "g.txt", "old_string": "keep", "new_string": "changed", "dry_run": true})
			edit := map[string]any{"path": "g.txt", "old_string": "keep", "new_string": "changed"}
			create := map[string]any{"path": "new.txt", "content": "new\n"}
			if tt.written {
				ok(t, cs, "edit_file", edit)
				ok(t, cs, "write_file", create)
			} else {
				e := fails(t, cs, "edit_file", edit, editguard.CodeRejected)
				fails(t, cs, "write_file", create, editguard.CodeRejected)
				if tt.client == nil {
					msg, _ := e["message"].(string)
					hint, _ := e["recovery_hint"].(string)
					if !strings.Contains(msg+hint, "--approve auto") {
						t.Errorf("refusal without elicitation = %v, want it to name --approve auto", e)
					}
				}
				// A cancel is the client not showing the question, not a
				// person's no; a decline is.
				msg, _ := e["message"].(string)
				if notShown := strings.Contains(msg, "did not show"); notShown != (tt.name == "cancel") {
					t.Errorf("%s: message %q; want \"did not show\" only for cancel", tt.name, msg)
				}
			}
			wantG, wantNew := "keep me\n", false
			if tt.written {
				wantG, wantNew = "changed me\n", true
			}
			if got := readDisk(t, ws, "g.txt"); got != wantG {
				t.Errorf("g.txt = %q, want %q", got, wantG)
			}
			if _, err := os.Stat(filepath.Join(ws.Dir(), "new.txt")); (err == nil) != wantNew {
				t.Errorf("new.txt exists = %v, want %v", err == nil, wantNew)
			}
			if tt.client == nil {
				return
			}
			if len(tt.client.questions) != 2 {
				t.Fatalf("asked %d questions, want 2 (edit and create; none for the dry run)", len(tt.client.questions))
			}
			q := tt.client.questions[0]
			if !strings.Contains(q.Message, "g.txt") || !strings.Contains(q.Message, "-keep me\n+changed me") {
				t.Errorf("question = %q, want the path and the unified diff", q.Message)
			}
		})
	}
}

// TestApprovalRechecksAfterAnswer changes the file while the person is
// being asked: the approved change must not overwrite the newer content.
func TestApprovalRechecksAfterAnswer(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"g.txt": "v1\n"})
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if err := os.WriteFile(filepath.Join(ws.Dir(), "g.txt"), []byte("v1 edited meanwhile\n"), 0o644); err != nil {
			return nil, err
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	cs := connect(t, newServer(t, ws, mcpserver.ApproveAsk), copts)
	ok(t, cs, "read_file", map[string]any{"path": "g.txt"})
	fails(t, cs, "write_file", map[string]any{"path": "g.txt", "content": "v2\n"}, editguard.CodeStaleFile)
	if got := readDisk(t, ws, "g.txt"); got != "v1 edited meanwhile\n" {
		t.Errorf("g.txt = %q, want the change made during approval kept", got)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "a\n"})
	cs := connect(t, newServer(t, ws, mcpserver.ApproveReadOnly), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if got, want := strings.Join(names, ","), strings.Join(slices.Sorted(slices.Values(toolset.Names(true))), ","); got != want {
		t.Errorf("read-only tools = %s, want %s", got, want)
	}
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "b\n"}})
	if err == nil && !r.IsError {
		t.Errorf("write_file on a read-only server succeeded: %s", text(r))
	}
	if got := readDisk(t, ws, "a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q on a read-only server", got)
	}
}

func TestNewRejectsUnknownMode(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	if _, err := mcpserver.New(ws, &mcpserver.Options{Approve: "sometimes"}); err == nil {
		t.Error(`New(Approve: "sometimes") succeeded, want an error`)
	}
}
