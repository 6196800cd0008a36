package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioMessageOverLimit: a message over the transport's limit gets a
// JSON-RPC error naming the limit, with the request's id, is not carried
// out, and the server answers the request after it.
func TestStdioMessageOverLimit(t *testing.T) {
	tests := []struct {
		name    string
		limit   int64 // -1: the workspace's (Server.Stdio)
		maxFile int64 // the workspace's file size limit; 0: the default
		size    int   // bytes of content in the request over the limit
	}{
		{name: "60MB_over_16MiB", limit: 16 << 20, size: 60 << 20},
		{name: "workspace_limit", limit: -1, maxFile: 1 << 20, size: 11 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t, &editguard.Options{MaxFileSize: tt.maxFile}, nil)
			head := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"`
			tail := `"}}}`
			size := len(head) + tt.size + len(tail)
			in := io.MultiReader(strings.NewReader(lines(pipeInitialize, pipeInitialized)+head), &repeatReader{c: 'x', n: tt.size},
				strings.NewReader(tail+"\n"+`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`+"\n"))
			limit := tt.limit
			if limit < 0 {
				limit = mcpserver.MessageLimit(tt.maxFile) // 3 MiB + 4 MiB
			}
			out := runStdioWith(t, newServer(t, ws, mcpserver.ApproveAuto), in, tt.limit)
			answers := answersByID(t, out)
			a2, ok := answers["2"]
			if !ok {
				t.Fatalf("no answer to the request over the limit; the server wrote:\n%.2000s", out)
			}
			if a2.Error == nil || a2.Error.Code != -32600 {
				t.Fatalf("answer to the request over the limit = %+v, want error -32600", a2)
			}
			for _, want := range []string{fmt.Sprintf("message of %d bytes", size), fmt.Sprintf("over the limit of %d bytes", limit)} {
				if !strings.Contains(a2.Error.Message, want) {
					t.Errorf("error message %q does not say %q", a2.Error.Message, want)
				}
			}
			a3, ok := answers["3"]
			if !ok || a3.Error != nil || !strings.Contains(string(a3.Result), `"write_file"`) {
				t.Fatalf("answer to tools/list after the request over the limit = %+v, want the tools", a3)
			}
			if _, err := os.Stat(filepath.Join(ws.Dir(), "big.txt")); !os.IsNotExist(err) {
				t.Errorf("big.txt exists (%v): the request over the limit was carried out", err)
			}
		})
	}
}

// TestStdioMessageOverLimitIDLate: a message over the limit whose id comes
// after the part kept of it is answered with id null, and the server goes
// on.
func TestStdioMessageOverLimitIDLate(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	pad := strings.Repeat("y", 2<<20)
	in := strings.NewReader(lines(pipeInitialize, pipeInitialized,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"`+pad+`"}},"id":5}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`))
	out := runStdioWith(t, newServer(t, ws, mcpserver.ApproveAuto), in, 1<<20)
	answers := answersByID(t, out)
	if a, ok := answers["null"]; !ok || a.Error == nil || a.Error.Code != -32600 || !strings.Contains(a.Error.Message, "over the limit of 1048576 bytes (1 MiB)") {
		t.Errorf("answer with id null = %+v, want the error naming the limit", a)
	}
	if _, ok := answers["5"]; ok {
		t.Errorf("an answer with id 5, which was past the part of the message kept")
	}
	if a, ok := answers["6"]; !ok || a.Error != nil {
		t.Errorf("answer to tools/list after the messages over the limit = %+v, want the tools", a)
	}
}

// TestStdioMessageOverLimitKeepsSession: after a message over the limit,
// the client's session goes on (an SDK client on the pipes gets the error
// for its call, then calls again).
func TestStdioMessageOverLimitKeepsSession(t *testing.T) {
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	srv := newServer(t, ws, mcpserver.ApproveAuto)
	cr, sw := io.Pipe() // server to client
	sr, cw := io.Pipe() // client to server
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, mcpserver.LimitedStdioTransport(sr, sw, 1<<20)) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "pipe", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "b.txt", "content": strings.Repeat("x", 2<<20)}})
	if err == nil || !strings.Contains(err.Error(), "over the limit of 1048576 bytes") {
		t.Fatalf("call over the limit: err = %v, want the limit named", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	if err != nil || res.IsError {
		t.Fatalf("call after the one over the limit: %v, %+v", err, res)
	}
	cs.Close()
	cw.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop after its input ended")
	}
}

// repeatReader reads n bytes c.
type repeatReader struct {
	c byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.n)]
	for i := range p {
		p[i] = r.c
	}
	r.n -= len(p)
	return len(p), nil
}

// runStdioWith is runStdio over LimitedStdioTransport with limit (0:
// StdioTransport; -1: Server.Stdio, the workspace's limit), reading in.
func runStdioWith(t *testing.T, srv *mcpserver.Server, in io.Reader, limit int64) string {
	t.Helper()
	var out strings.Builder
	tr := mcpserver.StdioTransport(in, &out)
	switch {
	case limit < 0:
		tr = srv.Stdio(in, &out)
	case limit > 0:
		tr = mcpserver.LimitedStdioTransport(in, &out, limit)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), tr) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not stop after its input ended")
	}
	return out.String()
}

// rpcAnswer is a JSON-RPC response.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answersByID parses the server's output, one message a line, into its
// responses by id.
func answersByID(t *testing.T, out string) map[string]rpcAnswer {
	t.Helper()
	m := map[string]rpcAnswer{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var a rpcAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("server output line %.200q is not JSON: %v", sc.Text(), err)
		}
		if len(a.ID) > 0 {
			m[string(a.ID)] = a
		}
	}
	return m
}
