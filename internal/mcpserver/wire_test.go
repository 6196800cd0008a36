package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWireResultEncoding checks that a wireToolResult encodes exactly as
// the CallToolResult it stands for.
func TestWireResultEncoding(t *testing.T) {
	odd := "<a href=\"x\">&amp;</a>\t\\ \u2028 \x01 é 日本 \xff\xfe end\n"
	cases := map[string]*mcp.CallToolResult{
		"text":       {Content: []mcp.Content{&mcp.TextContent{Text: "a.txt: all 1 lines\n     1\thello\n"}}},
		"odd text":   {Content: []mcp.Content{&mcp.TextContent{Text: odd}, &mcp.TextContent{Text: ""}}},
		"meta":       {Content: []mcp.Content{&mcp.TextContent{Text: "x"}}, Meta: mcp.Meta{MetaResult: map[string]any{"path": "a<b>.txt", "size_bytes": 1048576.0, "truncated": false, "next_offset": 12}}},
		"error":      errorResult(&editguard.Error{Code: editguard.CodeNotRead, Message: "not read", Details: map[string]any{"path": "a.txt"}}),
		"structured": {Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}, StructuredContent: map[string]any{"entries": []string{"a", "b&c"}}},
		"empty":      {Content: []mcp.Content{}},
	}
	for name, r := range cases {
		w := wireResult(r)
		if w == nil {
			t.Fatalf("%s: not converted", name)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	for name, r := range map[string]*mcp.CallToolResult{
		"image":        {Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
		"annotated":    {Content: []mcp.Content{&mcp.TextContent{Text: "x", Annotations: &mcp.Annotations{Priority: 1}}}},
		"content meta": {Content: []mcp.Content{&mcp.TextContent{Text: "x", Meta: mcp.Meta{"k": 1}}}},
	} {
		if wireResult(r) != nil {
			t.Errorf("%s: converted", name)
		}
	}
}

// TestWireResultProtocol checks on the wire that a client of the current
// revisions gets the plain result, and that a client asking for the
// multi-round-trip revision still gets the SDK's own, with its resultType.
func TestWireResultProtocol(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("1 < 2 && 3 > 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	srv, err := New(ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version    string
		resultType bool
	}{
		{"2025-11-25", false},
		{"2025-06-18", false},
		{multiRoundTripVersion, true},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.NewMCPServer().Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			conn, err := ct.Connect(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			call := func(id int, method string, params any) json.RawMessage {
				t.Helper()
				p, err := json.Marshal(params)
				if err != nil {
					t.Fatal(err)
				}
				req := &jsonrpc.Request{Method: method, Params: p}
				if id > 0 {
					if req.ID, err = jsonrpc.MakeID(float64(id)); err != nil {
						t.Fatal(err)
					}
				}
				if err := conn.Write(ctx, req); err != nil {
					t.Fatal(err)
				}
				if id == 0 {
					return nil
				}
				msg, err := conn.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				resp, ok := msg.(*jsonrpc.Response)
				if !ok || resp.Error != nil {
					t.Fatalf("%s: got %#v", method, msg)
				}
				return resp.Result
			}
			call(1, "initialize", map[string]any{"protocolVersion": tc.version, "capabilities": map[string]any{},
				"clientInfo": map[string]any{"name": "raw", "version": "1"}})
			call(0, "notifications/initialized", map[string]any{})
			raw := call(2, "tools/call", map[string]any{"name": "read_file", "arguments": map[string]any{"path": "a.txt"}})
			if got := strings.Contains(string(raw), `"resultType":"complete"`); got != tc.resultType {
				t.Errorf("resultType in the result is %v, want %v: %s", got, tc.resultType, raw)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Content) != 1 || !strings.HasSuffix(res.Content[0].(*mcp.TextContent).Text, "     1\t1 < 2 && 3 > 2\n") || res.Meta[MetaResult] == nil {
				t.Errorf("result %s", raw)
			}
		})
	}
}
