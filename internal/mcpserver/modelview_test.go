package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestModelView")

// modelViews returns what a model is shown of a result under the two
// policies of agent clients: "json" clients (Claude Code, Codex, VS Code)
// show the JSON of structuredContent when a result has it and drop the
// text; "text" clients (Gemini CLI and others) show the text content.
// (JSON.stringify keeps the server's key order; the map decoded here
// sorts keys, which changes the order, not the length.)
func modelViews(t *testing.T, res *mcp.CallToolResult) (jsonView, textView string) {
	t.Helper()
	textView = text(res)
	if res.StructuredContent == nil {
		return textView, textView
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), textView
}

// geminiErrorView returns what Gemini CLI shows a model of an error result
// of tool called with args: the call and the whole result as JSON, _meta
// included, in one message (Gemini CLI 0.61.0; see test/clients). The JSON
// is encoded as JSON.stringify does, but with the keys of each object
// sorted, which changes their order, not the length.
func geminiErrorView(t *testing.T, tool string, args map[string]any, res *mcp.CallToolResult) string {
	t.Helper()
	stringify := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var plain any
		if err := json.Unmarshal(b, &plain); err != nil {
			t.Fatal(err)
		}
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plain); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(buf.String(), "\n")
	}
	call := `{"name":` + stringify(tool) + `,"args":` + stringify(args) + `}`
	parts := `[{"functionResponse":{"name":` + stringify(tool) + `,"response":` + stringify(res) + `}}]`
	return fmt.Sprintf("MCP tool '%s' reported tool error for function call: %s with response: %s", tool, call, parts)
}

// unstable masks what differs between runs: history times and session ids.
var unstable = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z|mcp-[A-Z0-9]{8}|"mtime_ms":\d+|transaction [a-z0-9]+`)

func numberedLines(n int, f func(int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i) + "\n")
	}
	return b.String()
}

// TestModelView calls every tool, in success and in the common refusals,
// and compares what a model would be shown under each client policy with
// golden files (go test -run TestModelView -update rewrites them); for a
// refusal also what Gemini CLI shows, the whole result. It also asserts
// the character budgets: reads within about 25,000 characters, changes
// within 5,000, NOT_READ within 600.
func TestModelView(t *testing.T) {
	goGo := "package a\n\nimport \"fmt\"\n\n// Hello says \"hi\" with a backslash: \\.\nfunc Hello() { fmt.Println(\"hi\\n\") }\n"
	big := numberedLines(3000, func(i int) string { return fmt.Sprintf("line %04d of a file that is long enough to need pages", i) })
	ws := newWorkspace(t, nil, map[string]string{
		"a.go":        goGo,
		"big.txt":     big,
		"crlf.txt":    "one\r\ntwo\r\n",
		"b.txt":       "not read\n",
		"dir/sub.txt": "x\n",
	})
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, f := range []string{"a.go", "big.txt", "crlf.txt", "b.txt", "dir/sub.txt", "dir"} {
		os.Chtimes(filepath.Join(ws.Dir(), f), stamp, stamp)
	}
	// The client calls itself as Gemini CLI's does: the server then keeps
	// only the code of an error in _meta, which Gemini CLI shows the
	// model beside the text (geminiErrorView). The other views do not
	// depend on the client's name.
	cs := connectAs(t, newServer(t, ws, mcpserver.ApproveAuto), "gemini-cli-mcp-client")

	type call struct {
		name   string // golden file name
		tool   string
		args   map[string]any
		before func()
		budget int // most characters of either view
	}
	calls := []call{
		{name: "list_directory", tool: "list_directory", args: map[string]any{}, budget: 2000},
		{name: "file_info", tool: "file_info", args: map[string]any{"path": "a.go"}, budget: 1000},
		{name: "read_file", tool: "read_file", args: map[string]any{"path": "a.go"}, budget: 25000},
		{name: "read_file_crlf", tool: "read_file", args: map[string]any{"path": "crlf.txt"}, budget: 25000},
		{name: "read_file_pages", tool: "read_file", args: map[string]any{"path": "big.txt"}, budget: 25000},
		{name: "read_file_offset", tool: "read_file", args: map[string]any{"path": "big.txt", "offset": 2990}, budget: 25000},
		{name: "read_file_past_end", tool: "read_file", args: map[string]any{"path": "big.txt", "offset": 3001}, budget: 600},
		{name: "edit_file_not_read", tool: "edit_file", args: map[string]any{"path": "b.txt", "old_string": "not", "new_string": "now"}, budget: 600},
		{name: "edit_file", tool: "edit_file", args: map[string]any{"path": "a.go", "old_string": `"hi\n"`, "new_string": `"hello\n"`}, budget: 5000},
		{name: "edit_file_no_match", tool: "edit_file", args: map[string]any{"path": "a.go", "old_string": "func Bye()", "new_string": "x"}, budget: 1500},
		{name: "write_file_new", tool: "write_file", args: map[string]any{"path": "new/long.txt", "content": big + big}, budget: 5000},
		{name: "edit_file_stale", tool: "edit_file", args: map[string]any{"path": "a.go", "old_string": "import", "new_string": "import (\n\t\"os\"\n)\nimport"}, budget: 3000,
			before: func() {
				p := filepath.Join(ws.Dir(), "a.go")
				data, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(data), "import \"fmt\"", "import \"fmt\" // changed by a person", 1)), 0o644)
			}},
		{name: "edit_file_after_stale", tool: "edit_file", args: map[string]any{"path": "a.go", "old_string": "package a\n", "new_string": "package b\n"}, budget: 5000},
		// A person changes another line: the edit merges over it.
		{name: "edit_file_merged", tool: "edit_file", args: map[string]any{"path": "a.go", "old_string": `Println("hello\n")`, "new_string": `Println("hello again\n")`}, budget: 5000,
			before: func() {
				p := filepath.Join(ws.Dir(), "a.go")
				data, _ := os.ReadFile(p)
				os.WriteFile(p, []byte(strings.Replace(string(data), "// Hello", "// Hello, changed by a person.\n// Hello", 1)), 0o644)
			}},
		{name: "file_history", tool: "file_history", args: map[string]any{"path": "a.go"}, budget: 3000},
		// A merge showed the other change as a diff: a whole-file change
		// (restore) needs a full read first.
		{name: "read_file_after_merge", tool: "read_file", args: map[string]any{"path": "a.go"}, budget: 25000},
		{name: "restore_file", tool: "restore_file", args: map[string]any{"path": "a.go", "version": "v1", "dry_run": true}, budget: 5000},
		{name: "restore_file_unknown", tool: "restore_file", args: map[string]any{"path": "a.go", "version": "v99"}, budget: 1000},
		{name: "delete_file_not_read", tool: "delete_file", args: map[string]any{"path": "b.txt"}, budget: 600},
		{name: "delete_file", tool: "delete_file", args: map[string]any{"path": "crlf.txt"}, budget: 5000},
		{name: "restore_file_deleted", tool: "restore_file", args: map[string]any{"path": "crlf.txt", "version": "v1"}, budget: 5000},
		{name: "move_file_exists", tool: "move_file", args: map[string]any{"source": "big.txt", "destination": "a.go"}, budget: 800},
		{name: "move_file", tool: "move_file", args: map[string]any{"source": "big.txt", "destination": "moved/big.txt"}, budget: 2000},
		{name: "write_file_append", tool: "write_file", args: map[string]any{"path": "b.txt", "content": "appended\n", "mode": "append"}, budget: 1000},
		{name: "read_multiple_files", tool: "read_multiple_files", args: map[string]any{"paths": []string{"a.go", "missing.txt", "moved/big.txt"}}, budget: 25000},
		{name: "directory_tree", tool: "directory_tree", args: map[string]any{}, budget: 2000},
		{name: "file_diff_version", tool: "file_diff", args: map[string]any{"path": "a.go", "version": "v1"}, budget: 25000},
		{name: "file_diff_path", tool: "file_diff", args: map[string]any{"path": "a.go", "against_path": "dir/sub.txt"}, budget: 25000},
		{name: "create_directory", tool: "create_directory", args: map[string]any{"path": "made/here"}, budget: 300},
		{name: "create_directory_protected", tool: "create_directory", args: map[string]any{"path": ".git/hooks"}, budget: 600},
		{name: "find_files", tool: "find_files", args: map[string]any{"pattern": "*.txt"}, budget: 2000},
		{name: "search_text", tool: "search_text", args: map[string]any{"pattern": "Hello|line 001[0-3]"}, budget: 25000},
		{name: "apply_patch", tool: "apply_patch", args: map[string]any{"patch": "*** Begin Patch\n*** Update File: a.go\n@@\n-package b\n+package c\n*** Add File: notes/todo.md\n+- [ ] ship\n*** End Patch\n"}, budget: 5000},
		{name: "apply_patch_ambiguous", tool: "apply_patch", args: map[string]any{"patch": "*** Begin Patch\n*** Update File: new/long.txt\n@@\n-line 0001 of a file that is long enough to need pages\n+first\n*** End Patch\n"}, budget: 1000},
		{name: "invalid_argument", tool: "read_file", args: map[string]any{"path": 7}, budget: 600},
		{name: "begin_turn", tool: "begin_turn", args: map[string]any{}, budget: 200},
	}
	for _, c := range calls {
		if c.before != nil {
			c.before()
		}
		res := callTool(t, cs, c.tool, c.args)
		jsonView, textView := modelViews(t, res)
		for _, v := range []string{jsonView, textView} {
			if n := utf8.RuneCountInString(v); n > c.budget {
				t.Errorf("%s: the model is shown %d characters, over %d", c.name, n, c.budget)
			}
		}
		var got strings.Builder
		fmt.Fprintf(&got, "# %s %s\n# isError: %v\n", c.tool, mustJSON(t, c.args, 200), res.IsError)
		if jsonView == textView {
			fmt.Fprintf(&got, "## every client (%d characters)\n%s", utf8.RuneCountInString(textView), textView)
		} else {
			fmt.Fprintf(&got, "## clients that show structuredContent (%d characters)\n%s\n## clients that show the text (%d characters)\n%s",
				utf8.RuneCountInString(jsonView), jsonView, utf8.RuneCountInString(textView), textView)
		}
		if res.IsError {
			g := geminiErrorView(t, c.tool, c.args, res)
			fmt.Fprintf(&got, "## Gemini CLI, which shows an error result whole (%d characters)\n%s\n", utf8.RuneCountInString(g), g)
		}
		out := unstable.ReplaceAllString(got.String(), "<masked>")
		golden := filepath.Join("testdata", "modelview", c.name+".txt")
		if *update {
			os.MkdirAll(filepath.Dir(golden), 0o755)
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%s: %v (run go test -run TestModelView -update)", c.name, err)
		}
		if out != string(want) {
			t.Errorf("%s: the model's view differs from %s (go test -run TestModelView -update rewrites it):\n%s", c.name, golden, out)
		}
	}
}

func mustJSON(t *testing.T, v any, max int) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// connectAs connects a client named name to srv, at the session era.
func connectAs(t testing.TB, srv *mcpserver.Server, name string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.NewMCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// TestGeminiErrorMeta: for Gemini CLI's client, which shows the model an
// error result whole, _meta keeps only the error's code and path; for any
// other client it is the whole error object.
func TestGeminiErrorMeta(t *testing.T) {
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	srv := newServer(t, ws, mcpserver.ApproveAuto)
	args := map[string]any{"path": "a.txt", "old_string": "one", "new_string": "two"}
	for name, whole := range map[string]bool{"gemini-cli-mcp-client": false, "claude-code": true} {
		res := callTool(t, connectAs(t, srv, name), "edit_file", args)
		var meta map[string]any
		b, _ := json.Marshal(res.Meta[mcpserver.MetaError])
		json.Unmarshal(b, &meta)
		if !res.IsError || meta["code"] != "NOT_READ" {
			t.Fatalf("%s: %s, _meta %v; want NOT_READ", name, text(res), meta)
		}
		if _, has := meta["message"]; has != whole {
			t.Errorf("%s: _meta error = %v; want the whole object: %v", name, meta, whole)
		}
		if !strings.HasPrefix(text(res), "NOT_READ a.txt") {
			t.Errorf("%s: text %q", name, text(res))
		}
	}
}
