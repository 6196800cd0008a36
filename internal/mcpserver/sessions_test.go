package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/mcpserver"
)

// sessionClient opens and closes MCP sessions by hand, with bearer token
// (none if "") over one kept-alive connection.
type sessionClient struct {
	t     *testing.T
	c     *http.Client
	url   string
	token string
}

// open sends an initialize without a session id, and returns the status,
// the new session's id and the body.
func (sc *sessionClient) open() (status int, id string, body []byte) {
	sc.t.Helper()
	resp := sc.do("POST", "", initialize)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		sc.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body
}

// ping sends a ping in session id and returns the status.
func (sc *sessionClient) ping(id string) int {
	sc.t.Helper()
	resp := sc.do("POST", id, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// close ends session id (DELETE) and returns the status.
func (sc *sessionClient) close(id string) int {
	sc.t.Helper()
	resp := sc.do("DELETE", id, "")
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func (sc *sessionClient) do(method, id, body string) *http.Response {
	sc.t.Helper()
	req, err := http.NewRequest(method, sc.url, strings.NewReader(body))
	if err != nil {
		sc.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	if sc.token != "" {
		req.Header.Set("Authorization", "Bearer "+sc.token)
	}
	resp, err := sc.c.Do(req)
	if err != nil {
		sc.t.Fatal(err)
	}
	return resp
}

// heapInUse returns the bytes of heap in use after a full collection.
func heapInUse() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// refusal is the JSON-RPC error of a refused session.
type refusal struct {
	ID    json.RawMessage `json:"id"`
	Error struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// TestHTTPSessionLimits opens 5,000 sessions (initialize only) with three
// tokens against limits of 40 per token and 100 in all: the first 40 of
// alice's and then bob's and carol's up to 100 are opened, every other one
// is refused with a JSON-RPC error naming its limit, and the heap grows by
// the 100 sessions only. A closed session's place is free again.
func TestHTTPSessionLimits(t *testing.T) {
	const perToken, total, attempts = 40, 100, 5000
	alice, bob, carol := testToken(1), testToken(2), testToken(3)
	tokens := parseTokens(t, "alice "+alice+"\nbob "+bob+"\ncarol "+carol+"\n")
	ws := newWorkspace(t, nil, nil)
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{
		Tokens: tokens, Rate: -1, MaxInFlight: -1,
		MaxSessions: total, MaxSessionsPerToken: perToken, SessionTimeout: time.Hour,
	}))
	t.Cleanup(hs.Close)
	c := &http.Client{}
	client := func(token string) *sessionClient {
		return &sessionClient{t: t, c: c, url: hs.URL + mcpserver.Endpoint, token: token}
	}
	clients := map[string]*sessionClient{"alice": client(alice), "bob": client(bob), "carol": client(carol)}

	// Warm up (the tool catalogue is made once), then measure.
	if status, id, _ := clients["alice"].open(); status != http.StatusOK || clients["alice"].close(id) != http.StatusNoContent {
		t.Fatalf("first session: status %d", status)
	}
	before := heapInUse()
	opened := map[string][]string{}
	refused := map[string]int{} // by limit
	var atCap int64
	for i := range attempts {
		who := "alice"
		if i >= 50 {
			who = []string{"bob", "carol"}[i%2]
		}
		status, id, body := clients[who].open()
		if status == http.StatusOK {
			if id == "" {
				t.Fatalf("attempt %d (%s): 200 without a session id", i, who)
			}
			opened[who] = append(opened[who], id)
			if len(opened["alice"])+len(opened["bob"])+len(opened["carol"]) == total {
				atCap = heapInUse()
			}
			continue
		}
		var r refusal
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("attempt %d (%s): status %d, body %q is not a JSON-RPC error: %v", i, who, status, body, err)
		}
		limit, _ := r.Error.Data["limit"].(string)
		wantStatus, wantText := http.StatusServiceUnavailable, "the limit is 100 (serve --max-sessions)"
		if limit == "max_sessions_per_token" {
			wantStatus, wantText = http.StatusTooManyRequests, "the limit per token is 40 (serve --max-sessions-per-token)"
		}
		if status != wantStatus || string(r.ID) != "1" || r.Error.Code != -32000 ||
			!strings.Contains(r.Error.Message, wantText) || !strings.Contains(r.Error.Message, "DELETE") {
			t.Fatalf("attempt %d (%s): refused with %d %s, want %d, the request's id, and a message naming the limit (%q) and what to do", i, who, status, body, wantStatus, wantText)
		}
		refused[limit]++
	}
	after := heapInUse()

	if n := len(opened["alice"]); n != perToken {
		t.Errorf("alice opened %d sessions, want %d (the limit per token)", n, perToken)
	}
	if n := len(opened["alice"]) + len(opened["bob"]) + len(opened["carol"]); n != total {
		t.Errorf("%d sessions opened, want %d (the limit)", n, total)
	}
	if refused["max_sessions_per_token"] != 50-perToken || refused["max_sessions"] != attempts-50-(total-perToken) {
		t.Errorf("refusals %v, want %d by the limit per token, %d by the limit", refused, 50-perToken, attempts-50-(total-perToken))
	}
	grown := after - before
	t.Logf("heap in use: %d bytes before, %d with %d sessions open, %d after %d refused: %d bytes per session",
		before, atCap, total, after, attempts-total, (atCap-before)/total)
	if grown > total*64<<10 {
		t.Errorf("the heap grew by %d bytes for %d sessions, over 64 KiB each", grown, total)
	}
	if after-atCap > 1<<20 {
		t.Errorf("the heap grew by %d bytes over %d refused sessions", after-atCap, attempts-total)
	}

	// A session closed with DELETE frees its place for its token and in all.
	if got := clients["alice"].close(opened["alice"][0]); got != http.StatusNoContent {
		t.Fatalf("DELETE of alice's session = %d, want 204", got)
	}
	if got := clients["alice"].ping(opened["alice"][0]); got != http.StatusNotFound {
		t.Errorf("ping in a closed session = %d, want 404", got)
	}
	if status, id, body := clients["alice"].open(); status != http.StatusOK {
		t.Errorf("alice's session after closing one = %d %s, want 200", status, body)
	} else {
		opened["alice"] = append(opened["alice"][1:], id)
	}
	if status, _, _ := clients["bob"].open(); status != http.StatusServiceUnavailable {
		t.Errorf("bob's session with all places taken = %d, want 503", status)
	}
	for who, ids := range opened {
		for _, id := range ids {
			if got := clients[who].close(id); got != http.StatusNoContent {
				t.Errorf("DELETE of %s's session = %d, want 204", who, got)
			}
		}
	}
	if status, _, body := clients["bob"].open(); status != http.StatusOK {
		t.Errorf("bob's session after all were closed = %d %s, want 200", status, body)
	}
}

// TestHTTPSessionsExpire: sessions idle for SessionTimeout are closed
// (their id gets 404), their memory is released, and their places are
// free again.
func TestHTTPSessionsExpire(t *testing.T) {
	const n, timeout = 200, time.Second
	ws := newWorkspace(t, nil, nil)
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{
		MaxSessions: n, SessionTimeout: timeout,
	}))
	t.Cleanup(hs.Close)
	sc := &sessionClient{t: t, c: &http.Client{}, url: hs.URL + mcpserver.Endpoint}
	if status, id, _ := sc.open(); status != http.StatusOK || sc.close(id) != http.StatusNoContent {
		t.Fatalf("first session: status %d", status)
	}
	before := heapInUse()
	var ids []string
	for range n {
		status, id, body := sc.open()
		if status != http.StatusOK {
			t.Fatalf("session %d: %d %s", len(ids)+1, status, body)
		}
		ids = append(ids, id)
	}
	opened := heapInUse()
	time.Sleep(timeout + 2*time.Second)
	expired := heapInUse()
	t.Logf("heap in use: %d bytes before, %d with %d sessions (fewer if some expired meanwhile), %d once they expired", before, opened, n, expired)
	for i, id := range ids {
		if got := sc.ping(id); got != http.StatusNotFound {
			t.Fatalf("ping in session %d, idle for longer than %v: %d, want 404", i+1, timeout, got)
		}
	}
	if expired-before > 512<<10 {
		t.Errorf("%d bytes more heap in use after the sessions expired than before they were opened", expired-before)
	}
	for range n {
		if status, _, body := sc.open(); status != http.StatusOK {
			t.Fatalf("a session after the others expired: %d %s", status, body)
		}
	}
}
