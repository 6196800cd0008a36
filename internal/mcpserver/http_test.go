package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpConnect connects a client to the endpoint at url at legacyVersion.
func httpConnect(t *testing.T, url string, client *http.Client) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPSessionsConflict(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "shared\n"})
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(nil))
	t.Cleanup(hs.Close) // after the clients' cleanups: Close waits for their streams
	url := hs.URL + mcpserver.Endpoint
	a, b := httpConnect(t, url, nil), httpConnect(t, url, nil)
	if a.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("session ids %q and %q, want two distinct sessions", a.ID(), b.ID())
	}

	ok(t, a, "read_file", map[string]any{"path": "a.txt"})
	// b has not read the file: a's read must not vouch for b.
	fails(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "b"}, editguard.CodeNotRead)
	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "by a"})
	fails(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "by b"}, editguard.CodeStaleFile)
	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "by a", "new_string": "by a, then b"})
	if got := readDisk(t, ws, "a.txt"); got != "by a, then b\n" {
		t.Errorf("a.txt = %q, want both changes", got)
	}
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func post(t *testing.T, url, host, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestHTTPToken(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "a\n"})
	const token = "s3cret-token"
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{Token: token}))
	t.Cleanup(hs.Close) // after the clients' cleanups: Close waits for their streams
	url := hs.URL + mcpserver.Endpoint
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "Basic " + token, token} {
		if resp := post(t, url, "", auth, initialize); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST with Authorization %q = %d, want 401", auth, resp.StatusCode)
		}
	}
	if resp := post(t, url, "", "Bearer "+token, initialize); resp.StatusCode != http.StatusOK {
		t.Errorf("POST with the token = %d, want 200", resp.StatusCode)
	}
	cs := httpConnect(t, url, &http.Client{Transport: bearer{token}})
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
}

// TestCheckListenAddr tests the decision on addresses given as strings;
// TestRemoteListen binds a real address that is not loopback.
func TestCheckListenAddr(t *testing.T) {
	tokens := parseTokens(t, "alice "+testToken(1)+"\n")
	tlsConf := &tls.Config{}
	tests := []struct {
		addr     string
		tokens   *mcpserver.Tokens
		token    string
		tls      *tls.Config
		insecure bool
		ok       bool
	}{
		{addr: "127.0.0.1:8080", ok: true},
		{addr: "127.0.0.2:8080", ok: true},
		{addr: "[::1]:8080", ok: true},
		{addr: "localhost:0", ok: true},
		{addr: "127.0.0.1:8080", tokens: tokens, ok: true},
		{addr: "0.0.0.0:8080"},
		{addr: ":8080"},
		{addr: "[::]:8080"},
		{addr: "192.168.1.5:8080"},
		{addr: "example.com:8080"},
		{addr: "no-port"},
		// A single unnamed token is for loopback only.
		{addr: "0.0.0.0:8080", token: "t", tls: tlsConf},
		// Tokens, but plain HTTP: only with insecure.
		{addr: "0.0.0.0:8080", tokens: tokens},
		{addr: "0.0.0.0:8080", tokens: tokens, insecure: true, ok: true},
		{addr: "192.168.1.5:8080", tokens: tokens, tls: tlsConf, ok: true},
		{addr: "[2001:db8::1]:8080", tokens: tokens, tls: tlsConf, ok: true},
		// TLS or insecure without tokens is not enough.
		{addr: "192.168.1.5:8080", tls: tlsConf},
		{addr: "192.168.1.5:8080", insecure: true},
	}
	for _, tt := range tests {
		o := &mcpserver.HTTPOptions{Tokens: tt.tokens, Token: tt.token, TLS: tt.tls, Insecure: tt.insecure}
		err := mcpserver.CheckListenAddr(tt.addr, o)
		if (err == nil) != tt.ok {
			t.Errorf("CheckListenAddr(%q, tokens %v, token %q, tls %v, insecure %v) = %v, want ok %v",
				tt.addr, tt.tokens != nil, tt.token, tt.tls != nil, tt.insecure, err, tt.ok)
		}
	}
	// ListenAndServe applies the check before listening.
	ws := newWorkspace(t, nil, nil)
	err := newServer(t, ws, mcpserver.ApproveAuto).ListenAndServe(context.Background(), "0.0.0.0:0", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("ListenAndServe(0.0.0.0:0) without tokens = %v, want a refusal naming the tokens", err)
	}
}

func TestHTTPRequestFiltering(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, nil)
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{MaxFileSize: 1 << 10}))
	t.Cleanup(hs.Close) // after the clients' cleanups: Close waits for their streams
	url := hs.URL + mcpserver.Endpoint
	if resp := post(t, url, "evil.example", "", initialize); resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST with Host evil.example = %d, want 403 (DNS rebinding)", resp.StatusCode)
	}
	if resp := post(t, url, "localhost:1234", "", initialize); resp.StatusCode != http.StatusOK {
		t.Errorf("POST with Host localhost = %d, want 200", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin POST = %d, want 403", resp.StatusCode)
	}
	// 1 KiB files allow a 4 MiB + 6 KiB body; more is refused unread.
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":%q}}`, bytes.Repeat([]byte("x"), 4<<20+7<<10))
	if resp := post(t, url, "", "", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST of %d bytes = %d, want 413", len(big), resp.StatusCode)
	}
}

func TestServeShutsDown(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "a\n"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newServer(t, ws, mcpserver.ApproveAuto).Serve(ctx, ln, nil) }()
	cs := httpConnect(t, "http://"+ln.Addr().String()+mcpserver.Endpoint, nil)
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancel")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts after shutdown")
	}
}
