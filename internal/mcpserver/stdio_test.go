package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/mcpserver"
)

// lines joins JSON-RPC messages, one per line, as a client pipes them.
func lines(msgs ...string) string { return strings.Join(msgs, "\n") + "\n" }

const (
	pipeInitialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
	pipeInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// runStdio serves one session over the pipes: in as standard input, which
// ends after it. It fails the test if the server has not stopped after 30
// s (DrainLimit is a minute), and returns what the server wrote.
func runStdio(t *testing.T, srv *mcpserver.Server, in string) string {
	t.Helper()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- srv.Run(context.Background(), mcpserver.StdioTransport(strings.NewReader(in), &out)) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop after its input ended")
	}
	return out.String()
}

// TestStdioAnswersAfterInputEnds: a client that writes its requests and
// closes the pipe at once gets every answer (the SDK's own transport
// answered none of them).
func TestStdioAnswersAfterInputEnds(t *testing.T) {
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	out := runStdio(t, newServer(t, ws, mcpserver.ApproveAuto), lines(pipeInitialize, pipeInitialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"write_file","arguments":{"path":"b.txt","content":"two\n"}}}`))
	for _, id := range []string{`"id":1,`, `"id":2,`, `"id":"three",`} {
		if !strings.Contains(out, id) {
			t.Errorf("no answer with %s in:\n%s", id, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws.Dir(), "b.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("b.txt = %q, %v; want the write answered", b, err)
	}
}

// TestStdioAskAfterInputEnds: with approval, a change asks the person at
// the client; a client whose input has ended cannot answer, so the server
// stops at once and the change is not made.
func TestStdioAskAfterInputEnds(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	init := strings.Replace(pipeInitialize, `"capabilities":{}`, `"capabilities":{"elicitation":{}}`, 1)
	out := runStdio(t, newServer(t, ws, mcpserver.ApproveAsk), lines(init, pipeInitialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"b.txt","content":"two\n"}}}`))
	if !strings.Contains(out, `"method":"elicitation/create"`) {
		t.Errorf("the server did not ask for approval:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "b.txt")); !os.IsNotExist(err) {
		t.Errorf("b.txt exists (%v): a change nobody approved was made", err)
	}
}

// TestStdioInputNotJSON: input that is not JSON reaches the SDK as it came.
func TestStdioInputNotJSON(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	runStdio(t, newServer(t, ws, mcpserver.ApproveAuto), lines(pipeInitialize, "this is not json", pipeInitialized))
}

// TestStdioOddRequests: a request whose params are not an object is
// answered (with an error) before the server stops, and a cancelled
// request is not waited for.
func TestStdioOddRequests(t *testing.T) {
	ws := newWorkspace(t, nil, nil)
	out := runStdio(t, newServer(t, ws, mcpserver.ApproveAuto), lines(pipeInitialize, pipeInitialized,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`))
	if !strings.Contains(out, `"id":7,`) {
		t.Errorf("no answer to the request with params [1,2]:\n%s", out)
	}
}

// TestStdioCutLastRequest: input that ends inside a message still gets the
// answers to the requests before it.
func TestStdioCutLastRequest(t *testing.T) {
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	in := lines(pipeInitialize, pipeInitialized,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`) +
		`{"jsonrpc":"2.0","id":3,"method":"tools/ca`
	out := runStdio(t, newServer(t, ws, mcpserver.ApproveAuto), in)
	if !strings.Contains(out, `"id":2,`) {
		t.Errorf("no answer to the request before the cut one:\n%s", out)
	}
}
