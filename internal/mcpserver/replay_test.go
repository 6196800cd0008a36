package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callIDs records the JSON-RPC id of every tools/call a client sends.
type callIDs struct {
	base http.RoundTripper
	mu   sync.Mutex
	ids  []string
}

func (c *callIDs) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
			c.mu.Lock()
			c.ids = append(c.ids, string(m.ID))
			c.mu.Unlock()
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	return c.base.RoundTrip(req)
}

func (c *callIDs) last() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids) == 0 {
		return ""
	}
	return c.ids[len(c.ids)-1]
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// keyed calls tool with the idempotency key k.
func keyed(t *testing.T, cs *mcp.ClientSession, k, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args, Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: k}})
	if err != nil {
		t.Fatalf("%s with key %q: protocol error %v", tool, k, err)
	}
	return res
}

// trueOfDisk fails the test unless res, an answer to a change of path,
// says only what is on disk: a success names the sha256 the file holds;
// a failure claims no result (no structuredContent, no _meta result) and
// its text names the sha256 the file holds.
func trueOfDisk(t *testing.T, res *mcp.CallToolResult, root, path string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	disk := sum(string(b))
	if res.StructuredContent != nil {
		t.Errorf("answer has structuredContent %v", res.StructuredContent)
	}
	if res.IsError {
		if _, has := res.Meta[mcpserver.MetaResult]; has {
			t.Errorf("failed answer carries a result in _meta: %v", res.Meta)
		}
		if !strings.Contains(text(res), disk) {
			t.Errorf("failed answer does not say what %s holds now (sha256 %s):\n%s", path, disk, text(res))
		}
		return
	}
	m, _ := res.Meta[mcpserver.MetaResult].(map[string]any)
	if m["sha256"] != disk || !strings.Contains(text(res), disk) {
		t.Errorf("answer says %s has sha256 %v, the disk holds %s:\n%s", path, m["sha256"], disk, text(res))
	}
}

// staleReplay fails the test unless res is the answer to a re-sent call
// whose first answer is no longer true: STALE_FILE, marked replayed.
func staleReplay(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	e, _ := res.Meta[mcpserver.MetaError].(map[string]any)
	if !res.IsError || e["code"] != string(editguard.CodeStaleFile) || res.Meta[mcpserver.MetaReplayed] != true ||
		!strings.Contains(text(res), "not carried out again") {
		t.Errorf("re-sent call after the file changed: %s (_meta %v); want STALE_FILE, replayed", text(res), res.Meta)
	}
}

// TestRestartedClientGetsItsOwnAnswer: in 2026-07-28 the clients of one
// token share a session, and a client that starts again numbers its
// requests from the start. Its call, with the JSON-RPC id and arguments
// of an earlier call of its first instance, is a new call: it is decided
// and made, not answered with the earlier result (which another client's
// later write made untrue).
func TestRestartedClientGetsItsOwnAnswer(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "v0\n"})
	v1 := map[string]any{"path": "a.txt", "content": "v1\n"}
	ids1 := &callIDs{base: http.DefaultTransport}
	a1 := e.client(t, "alice", modernVersion, nil, ids1)
	ok(t, a1, "read_file", map[string]any{"path": "a.txt"})
	res := callTool(t, a1, "write_file", v1)
	trueOfDisk(t, res, e.ws.Dir(), "a.txt")
	a1.Close()

	b := e.client(t, "alice", modernVersion, nil, nil)
	ok(t, b, "write_file", map[string]any{"path": "a.txt", "content": "v2\n"})

	ids2 := &callIDs{base: http.DefaultTransport}
	a2 := e.client(t, "alice", modernVersion, nil, ids2)
	ok(t, a2, "read_file", map[string]any{"path": "a.txt"})
	res = callTool(t, a2, "write_file", v1)
	if ids1.last() == "" || ids1.last() != ids2.last() {
		t.Fatalf("the restarted client's write has JSON-RPC id %s, the first one's %s: the test needs them equal", ids2.last(), ids1.last())
	}
	if res.IsError || res.Meta[mcpserver.MetaReplayed] != nil {
		t.Errorf("restarted client's write: %s (_meta %v); want it made, not replayed", text(res), res.Meta)
	}
	trueOfDisk(t, res, e.ws.Dir(), "a.txt")
	if got := readDisk(t, e.ws, "a.txt"); got != "v1\n" {
		t.Errorf("a.txt = %q, want v1 written again", got)
	}
	if n := okRecords(t, e.ws, "a.txt"); n != 3 {
		t.Errorf("%d ok records of a.txt, want 3 writes", n)
	}
}

// TestResentAfterChangeIsNotReplayed: a call re-sent with its idempotency
// key (by the client started again) after another client changed the file
// is not carried out again, and its answer is not the first one: it says
// that the call was made once, and what the file holds now. A re-send
// while the file is as the call left it gets the first answer.
func TestResentAfterChangeIsNotReplayed(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "v0\n"})
	v1 := map[string]any{"path": "a.txt", "content": "v1\n"}
	a1 := e.client(t, "alice", modernVersion, nil, nil)
	ok(t, a1, "read_file", map[string]any{"path": "a.txt"})
	first := keyed(t, a1, "k-v1", "write_file", v1)
	trueOfDisk(t, first, e.ws.Dir(), "a.txt")
	a1.Close()

	// Started again, the client sends the call again: the file is as
	// the call left it, so the first answer is still true.
	a2 := e.client(t, "alice", modernVersion, nil, nil)
	again := keyed(t, a2, "k-v1", "write_file", v1)
	if again.IsError || again.Meta[mcpserver.MetaReplayed] != true || text(again) != text(first) {
		t.Errorf("re-send while the file is unchanged: %s (_meta %v); want the first answer, replayed", text(again), again.Meta)
	}
	trueOfDisk(t, again, e.ws.Dir(), "a.txt")

	b := e.client(t, "alice", modernVersion, nil, nil)
	ok(t, b, "write_file", map[string]any{"path": "a.txt", "content": "v2\n"})
	stale := keyed(t, a2, "k-v1", "write_file", v1)
	staleReplay(t, stale)
	trueOfDisk(t, stale, e.ws.Dir(), "a.txt")
	if got := readDisk(t, e.ws, "a.txt"); got != "v2\n" {
		t.Errorf("a.txt = %q, want the other client's v2 kept", got)
	}
	if n := okRecords(t, e.ws, "a.txt"); n != 2 {
		t.Errorf("%d ok records of a.txt, want 2 (v1 once, v2)", n)
	}

	// An append re-sent over HTTP, byte for byte (a dropped connection),
	// is made once.
	rs := &resend{base: http.DefaultTransport, tool: "write_file"}
	a3 := e.client(t, "alice", modernVersion, nil, rs)
	res := keyed(t, a3, "k-append", "write_file", map[string]any{"path": "a.txt", "content": "more\n", "mode": "append"})
	if res.IsError || res.Meta[mcpserver.MetaReplayed] != true || rs.calls.Load() != 1 {
		t.Errorf("re-sent append: %s (_meta %v, %d calls); want the first answer, replayed", text(res), res.Meta, rs.calls.Load())
	}
	trueOfDisk(t, res, e.ws.Dir(), "a.txt")
	if got := readDisk(t, e.ws, "a.txt"); got != "v2\nmore\n" {
		t.Errorf("a.txt = %q, want one append", got)
	}

	// A delete re-sent after the file came back: not true any more.
	ok(t, b, "delete_file", map[string]any{"path": "a.txt"})
	ok(t, b, "write_file", map[string]any{"path": "c.txt", "content": "c\n"})
	del := keyed(t, a3, "k-del", "delete_file", map[string]any{"path": "c.txt"})
	if del.IsError {
		t.Fatalf("delete: %s", text(del))
	}
	ok(t, b, "write_file", map[string]any{"path": "c.txt", "content": "back\n"})
	stale = keyed(t, a3, "k-del", "delete_file", map[string]any{"path": "c.txt"})
	staleReplay(t, stale)
	trueOfDisk(t, stale, e.ws.Dir(), "c.txt")

	bad := keyed(t, a3, strings.Repeat("k", 300), "write_file", v1)
	if e, _ := bad.Meta[mcpserver.MetaError].(map[string]any); !bad.IsError || e["code"] != string(editguard.CodeInvalidArgument) {
		t.Errorf("a key of 300 bytes: %s, want INVALID_ARGUMENT", text(bad))
	}
}

// TestStdioResentAfterChange: over stdio (a real editguard serve process
// at 2026-07-28) a call re-sent with its idempotency key is answered once
// while the file holds what it wrote, and not claimed once another
// process changed the file.
func TestStdioResentAfterChange(t *testing.T) {
	t.Parallel()
	bin := editguardBin(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("v0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *mcp.ClientSession {
		cmd := exec.Command(bin, "--root", root, "serve")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: modernVersion})
		if err != nil {
			t.Fatalf("connect to %s: %v", cmd, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := start(), start()
	v1 := map[string]any{"path": "a.txt", "content": "v1\n"}
	ok(t, a, "read_file", map[string]any{"path": "a.txt"})
	first := keyed(t, a, "stdio-k1", "write_file", v1)
	trueOfDisk(t, first, root, "a.txt")
	again := keyed(t, a, "stdio-k1", "write_file", v1)
	if again.IsError || again.Meta[mcpserver.MetaReplayed] != true || text(again) != text(first) {
		t.Errorf("re-send while the file is unchanged: %s (_meta %v); want the first answer, replayed", text(again), again.Meta)
	}

	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, b, "write_file", map[string]any{"path": "a.txt", "content": "v2\n"})
	stale := keyed(t, a, "stdio-k1", "write_file", v1)
	staleReplay(t, stale)
	trueOfDisk(t, stale, root, "a.txt")
	if got, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(got) != "v2\n" {
		t.Errorf("a.txt = %q, %v; want the other process's v2 kept", got, err)
	}
}
