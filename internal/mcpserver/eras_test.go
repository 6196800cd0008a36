package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernVersion is the first protocol revision without sessions.
const modernVersion = "2026-07-28"

// eras are the revisions every test of both eras runs at.
var eras = []string{legacyVersion, modernVersion}

// eraServer is one HTTP endpoint serving both eras, with the tokens of
// two agents, alice and bob.
type eraServer struct {
	ws     *editguard.Workspace
	url    string
	tokens map[string]string // agent -> token
}

func newToken(t testing.TB) string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newEraServer(t testing.TB, approve string, opts *mcpserver.HTTPOptions, files map[string]string) *eraServer {
	t.Helper()
	e := &eraServer{ws: newWorkspace(t, nil, files), tokens: map[string]string{"alice": newToken(t), "bob": newToken(t)}}
	tokens, err := mcpserver.ParseTokens(strings.NewReader(fmt.Sprintf("alice %s\nbob %s\n", e.tokens["alice"], e.tokens["bob"])))
	if err != nil {
		t.Fatal(err)
	}
	var o mcpserver.HTTPOptions
	if opts != nil {
		o = *opts
	}
	o.Tokens = tokens
	if o.Rate == 0 {
		o.Rate = -1 // the tests call more often than agents do
	}
	hs := httptest.NewServer(newServer(t, e.ws, approve).Handler(&o))
	t.Cleanup(hs.Close)
	e.url = hs.URL + mcpserver.Endpoint
	return e
}

// client connects agent's client at protocol revision version and checks
// that the revision was used: a session id with sessions, none without.
func (e *eraServer) client(t testing.TB, agent, version string, copts *mcp.ClientOptions, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	tr := &mcp.StreamableClientTransport{Endpoint: e.url, HTTPClient: &http.Client{Transport: withToken{e.tokens[agent], rt}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: agent, Version: "1"}, copts).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("%s connects at %s: %v", agent, version, err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("%s asked for %s, negotiated %s", agent, version, got)
	}
	if (cs.ID() == "") != (version >= modernVersion) {
		t.Fatalf("%s at %s: session id %q; want one exactly before %s", agent, version, cs.ID(), modernVersion)
	}
	return cs
}

// okRecords counts the ledger's records of path with outcome ok.
func okRecords(t *testing.T, ws *editguard.Workspace, path string) int {
	t.Helper()
	n := 0
	err := ws.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Path == path && r.Outcome == "ok" {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestErasEveryTool lists and calls every tool at both revisions on one
// endpoint.
func TestErasEveryTool(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "one\ntwo\n"})
	for _, version := range eras {
		t.Run(version, func(t *testing.T) {
			cs := e.client(t, "alice", version, nil, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				props, _ := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
				if _, has := props[toolset.SessionArgument]; !has {
					t.Errorf("%s: no %q property in the input schema", tool.Name, toolset.SessionArgument)
				}
			}
			if !slices.Equal(names, slices.Sorted(slices.Values(toolset.Names(false)))) {
				t.Errorf("tools = %v, want %v", names, toolset.Names(false))
			}
			called := callEveryTool(t, cs, "dir-"+version)
			for _, name := range toolset.Names(false) {
				if !called[name] {
					t.Errorf("%s was not called", name)
				}
			}
		})
	}
}

// callEveryTool calls each tool once, successfully, in dir, and returns
// the names of those called.
func callEveryTool(t *testing.T, cs *mcp.ClientSession, dir string) map[string]bool {
	t.Helper()
	called := map[string]bool{}
	call := func(name string, args map[string]any) map[string]any {
		called[name] = true
		res := callTool(t, cs, name, args)
		if res.IsError || text(res) == "" {
			t.Fatalf("%s(%v): %s", name, args, text(res))
		}
		if m, isMap := res.StructuredContent.(map[string]any); isMap {
			return m
		}
		m, _ := res.Meta[mcpserver.MetaResult].(map[string]any)
		return m
	}
	a, b, c := dir+"/a.txt", dir+"/b.txt", dir+"/c.txt"
	call("create_directory", map[string]any{"path": dir})
	call("write_file", map[string]any{"path": a, "content": "one\ntwo\n"})
	call("list_allowed_directories", map[string]any{})
	call("read_file", map[string]any{"path": a})
	call("read_multiple_files", map[string]any{"paths": []string{a}})
	call("list_directory", map[string]any{"path": dir})
	call("directory_tree", map[string]any{"path": dir})
	call("find_files", map[string]any{"pattern": "*.txt", "path": dir})
	call("search_text", map[string]any{"pattern": "one", "path": dir})
	call("file_info", map[string]any{"path": a})
	call("edit_file", map[string]any{"path": a, "old_string": "one", "new_string": "uno"})
	hist := call("file_history", map[string]any{"path": a})
	versions, _ := hist["versions"].([]any)
	if len(versions) == 0 {
		t.Fatalf("file_history of %s: no versions in %v", a, hist)
	}
	v, _ := versions[0].(map[string]any)["version"].(string)
	call("file_diff", map[string]any{"path": a, "version": v})
	call("restore_file", map[string]any{"path": a, "version": v})
	patch := fmt.Sprintf("*** Begin Patch\n*** Add File: %s\n+patched\n*** End Patch\n", b)
	tx, _ := call("apply_patch", map[string]any{"patch": patch})["tx"].(string)
	if tx == "" {
		t.Fatal("apply_patch: no tx in the result")
	}
	call("undo_patch", map[string]any{"tx": tx})
	call("write_file", map[string]any{"path": b, "content": "moved\n"})
	call("move_file", map[string]any{"source": b, "destination": c})
	call("read_file", map[string]any{"path": c})
	call("delete_file", map[string]any{"path": c})
	call("begin_turn", map[string]any{})
	h, _ := call("begin_session", map[string]any{})["session"].(string)
	if h == "" {
		t.Fatal("begin_session: no handle")
	}
	return called
}

// TestModernAgentsConflict: two agents on 2026-07-28, with their own
// tokens, conflict as two sessions do.
func TestModernAgentsConflict(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "shared\n"})
	a := e.client(t, "alice", modernVersion, nil, nil)
	b := e.client(t, "bob", modernVersion, nil, nil)
	ok(t, a, "read_file", map[string]any{"path": "a.txt"})
	fails(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "b"}, editguard.CodeNotRead)
	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "by bob"})
	fails(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "shared", "new_string": "by alice"}, editguard.CodeStaleFile)
	if got := readDisk(t, e.ws, "a.txt"); got != "by bob\n" {
		t.Errorf("a.txt = %q, want bob's change alone", got)
	}
	// A second connection of alice's is alice: her read vouches for it.
	a2 := e.client(t, "alice", modernVersion, nil, nil)
	ok(t, a2, "read_file", map[string]any{"path": "a.txt"})
	ok(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "by bob", "new_string": "by bob, then alice"})
	sessions := map[string]bool{}
	e.ws.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error {
		if r.Outcome == "ok" {
			sessions[strings.SplitN(r.Session, "/", 2)[0]] = true
		}
		return nil
	})
	if !sessions["alice"] || !sessions["bob"] || len(sessions) != 2 {
		t.Errorf("ledger sessions of the changes = %v, want alice's and bob's", sessions)
	}
}

// TestSessionHandles: begin_session handles are sessions of their own,
// bound to the token that made them, and bounded. The handles here do not
// expire while the test runs, however slow the machine (see
// TestSessionHandlesExpire).
func TestSessionHandles(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, &mcpserver.HTTPOptions{MaxSessionsPerToken: 3, SessionTimeout: time.Hour},
		map[string]string{"a.txt": "one\n"})
	a := e.client(t, "alice", modernVersion, nil, nil)
	h, _ := ok(t, a, "begin_session", map[string]any{})["session"].(string)
	ok(t, a, "read_file", map[string]any{"path": "a.txt", "session": h})
	// The handle's read does not vouch for alice's own session.
	fails(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1"}, editguard.CodeNotRead)
	for _, version := range eras {
		b := e.client(t, "bob", version, nil, nil)
		fails(t, b, "read_file", map[string]any{"path": "a.txt", "session": h}, editguard.CodePermission)
		fails(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "b", "session": h}, editguard.CodePermission)
	}
	ok(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "1", "session": h})
	if got := readDisk(t, e.ws, "a.txt"); got != "1\n" {
		t.Errorf("a.txt = %q, want the edit made in the handle's session", got)
	}
	// alice's sessions of the older revision count against the same
	// bound: two more handles, then BUSY.
	old := e.client(t, "alice", legacyVersion, nil, nil)
	ok(t, old, "begin_session", map[string]any{})
	ok(t, a, "begin_session", map[string]any{})
	busy := fails(t, a, "begin_session", map[string]any{}, editguard.CodeBusy)
	if d, _ := busy["details"].(map[string]any); d["limit"] != "max_sessions_per_token" {
		t.Errorf("refusal details = %v, want the per-token limit", d)
	}
	ok(t, e.client(t, "bob", modernVersion, nil, nil), "begin_session", map[string]any{})
	fails(t, a, "read_file", map[string]any{"path": "a.txt", "session": "egs_NOSUCHHANDLE"}, editguard.CodeInvalidArgument)
}

// TestSessionHandlesExpire: a handle unused for the session timeout is
// gone, and makes room for another. The bound is one handle, and the
// timeout long enough that two calls in a row fit in it on a busy machine.
func TestSessionHandlesExpire(t *testing.T) {
	t.Parallel()
	const timeout = 3 * time.Second
	e := newEraServer(t, mcpserver.ApproveAuto, &mcpserver.HTTPOptions{MaxSessionsPerToken: 1, SessionTimeout: timeout},
		map[string]string{"a.txt": "one\n"})
	a := e.client(t, "alice", modernVersion, nil, nil)
	h, _ := ok(t, a, "begin_session", map[string]any{})["session"].(string)
	fails(t, a, "begin_session", map[string]any{}, editguard.CodeBusy)
	time.Sleep(timeout + timeout/2)
	fails(t, a, "read_file", map[string]any{"path": "a.txt", "session": h}, editguard.CodeInvalidArgument)
	ok(t, a, "begin_session", map[string]any{}) // the expired one made room
}

// answer re-issues the call that res asked about with action and approve.
func answer(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, res *mcp.CallToolResult, action string, approve bool) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args,
		InputResponses: mcp.InputResponseMap{"approve": &mcp.ElicitResult{Action: action, Content: map[string]any{"approve": approve}}},
		RequestState:   res.RequestState})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// asked checks that res is an input_required result asking to approve a
// change whose diff holds want, and returns it.
func asked(t *testing.T, res *mcp.CallToolResult, want string) *mcp.CallToolResult {
	t.Helper()
	if !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("result = %+v (%s), want input_required with a request state", res, text(res))
	}
	q, _ := res.InputRequests["approve"].(*mcp.ElicitParams)
	if q == nil || !strings.Contains(q.Message, want) {
		t.Fatalf("input requests = %v, want an approval question showing %q", res.InputRequests, want)
	}
	return res
}

// TestRoundTripApproval: with --approve ask, a 2026-07-28 call is answered
// with input_required carrying the diff, and the change is made only when
// the call comes back accepted, after the checks against the file.
func TestRoundTripApproval(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAsk, nil, map[string]string{"a.txt": "one\n", "b.txt": "bee\n"})
	manual := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("not asked at %s", modernVersion)
		}}
	a := e.client(t, "alice", modernVersion, manual, nil)
	ok(t, a, "read_file", map[string]any{"path": "a.txt"})
	edit := map[string]any{"path": "a.txt", "old_string": "one", "new_string": "uno"}

	q := asked(t, callTool(t, a, "edit_file", edit), "+uno")
	if got := readDisk(t, e.ws, "a.txt"); got != "one\n" {
		t.Fatalf("a.txt = %q before the answer", got)
	}
	// The question is recorded as asked, not as a failed approval.
	var approvals []string
	e.ws.Log(editguard.LogFilter{Path: "a.txt", Tool: "edit_file"}, func(r *editguard.LedgerRecord) error {
		approvals = append(approvals, r.Approval)
		return nil
	})
	if len(approvals) != 1 || approvals[0] != "asked" {
		t.Errorf("ledger approvals after the question = %q, want one \"asked\"", approvals)
	}
	// Declined, cancelled, or answered with a state of another question:
	// nothing is written.
	res := answer(t, a, "edit_file", edit, q, "decline", false)
	if !res.IsError || !strings.Contains(text(res), "REJECTED") {
		t.Errorf("declined: %s, want REJECTED", text(res))
	}
	res = answer(t, a, "edit_file", edit, q, "cancel", false)
	if !res.IsError || !strings.Contains(text(res), "REJECTED") {
		t.Errorf("cancelled: %s, want REJECTED", text(res))
	}
	other := map[string]any{"path": "a.txt", "old_string": "one", "new_string": "eins"}
	asked(t, answer(t, a, "edit_file", other, q, "accept", true), "+eins")
	if got := readDisk(t, e.ws, "a.txt"); got != "one\n" {
		t.Fatalf("a.txt = %q after refusals", got)
	}
	// Accepted: written once.
	res = answer(t, a, "edit_file", edit, q, "accept", true)
	if res.IsError || res.NeedsInput() {
		t.Fatalf("accepted: %s", text(res))
	}
	if got := readDisk(t, e.ws, "a.txt"); got != "uno\n" {
		t.Errorf("a.txt = %q after the accept, want uno", got)
	}

	// The file changes between question and answer: the answer does not
	// write over the other change.
	ok(t, a, "read_file", map[string]any{"path": "b.txt"})
	editB := map[string]any{"path": "b.txt", "old_string": "bee", "new_string": "alice"}
	qb := asked(t, callTool(t, a, "edit_file", editB), "+alice")
	bob := e.client(t, "bob", legacyVersion, (&elicitingClient{action: "accept", approve: true}).options(), nil)
	ok(t, bob, "read_file", map[string]any{"path": "b.txt"})
	ok(t, bob, "write_file", map[string]any{"path": "b.txt", "content": "bob\n"})
	res = answer(t, a, "edit_file", editB, qb, "accept", true)
	if !res.IsError || !strings.Contains(text(res), "STALE_FILE") {
		t.Errorf("answer after another change: %s, want STALE_FILE", text(res))
	}
	if got := readDisk(t, e.ws, "b.txt"); got != "bob\n" {
		t.Errorf("b.txt = %q, want bob's write kept", got)
	}

	// The SDK's client answers through its elicitation handler.
	for _, c := range []struct {
		action  string
		approve bool
		want    string
	}{{"decline", false, "uno\n"}, {"accept", true, "dos\n"}} {
		ec := &elicitingClient{action: c.action, approve: c.approve}
		cs := e.client(t, "alice", modernVersion, ec.options(), nil)
		ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
		res := callTool(t, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": "uno", "new_string": "dos"})
		if res.IsError != (c.action != "accept") || len(ec.questions) != 1 {
			t.Errorf("%s: %s after %d questions", c.action, text(res), len(ec.questions))
		}
		if got := readDisk(t, e.ws, "a.txt"); got != c.want {
			t.Errorf("%s: a.txt = %q, want %q", c.action, got, c.want)
		}
	}
}

// resend sends each tools/call of tool twice with the same body, as a
// client that lost the first answer does, and returns the second answer.
type resend struct {
	base  http.RoundTripper
	tool  string
	calls atomic.Int32
}

func (r *resend) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Method != http.MethodPost {
		return r.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	send := func() (*http.Response, error) {
		c := req.Clone(req.Context())
		c.Body = io.NopCloser(bytes.NewReader(body))
		return r.base.RoundTrip(c)
	}
	if bytes.Contains(body, []byte(`"method":"tools/call"`)) && bytes.Contains(body, []byte(`"name":"`+r.tool+`"`)) {
		r.calls.Add(1)
		first, err := send()
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, first.Body) // the answer that was lost
		first.Body.Close()
	}
	return send()
}

// TestResentCallAppliesOnce: a call received twice, by JSON-RPC id in an
// MCP session or by idempotency key, is made once, and the second answer
// is the first. At 2026-07-28 a call has no MCP session and only its
// idempotency key names it.
func TestResentCallAppliesOnce(t *testing.T) {
	t.Parallel()
	for _, version := range eras {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "log\n"})
			rs := &resend{base: http.DefaultTransport, tool: "write_file"}
			cs := e.client(t, "alice", version, nil, rs)
			ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
			// Without a key: the transport sends the very request again
			// (in 2026-07-28 an immediate re-send of the session's last
			// call, in an MCP session the same JSON-RPC id).
			call := &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "one\n", "mode": "append"}}
			res, err := cs.CallTool(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || res.Meta[mcpserver.MetaReplayed] != true || rs.calls.Load() != 1 {
				t.Errorf("re-sent append: %s, _meta %v, %d calls; want the first result, replayed", text(res), res.Meta, rs.calls.Load())
			}
			// By idempotency key: two calls with their own JSON-RPC ids.
			keyed := &mcp.CallToolParams{Name: "edit_file", Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: "k1"},
				Arguments: map[string]any{"path": "a.txt", "old_string": "one", "new_string": "two"}}
			var results []string
			for range 2 {
				res, err := cs.CallTool(context.Background(), keyed)
				if err != nil || res.IsError {
					t.Fatalf("keyed edit: %v %s", err, text(res))
				}
				results = append(results, text(res))
			}
			if results[0] != results[1] {
				t.Errorf("answers to one keyed call differ:\n%s\n%s", results[0], results[1])
			}
			keyed.Arguments = map[string]any{"path": "a.txt", "old_string": "two", "new_string": "three"}
			if res, err := cs.CallTool(context.Background(), keyed); err != nil || !res.IsError || !strings.Contains(text(res), "idempotency key") {
				t.Errorf("key reused for another call: %v %s, want INVALID_ARGUMENT", err, text(res))
			}
			if got := readDisk(t, e.ws, "a.txt"); got != "log\ntwo\n" {
				t.Errorf("a.txt = %q, want one append and one edit", got)
			}
			if n := okRecords(t, e.ws, "a.txt"); n != 2 {
				t.Errorf("%d ok records of a.txt, want 2 (the append and the edit)", n)
			}
		})
	}
}

// TestConcurrentResend: copies of one keyed call that arrive together
// are made once; every copy gets the one result.
func TestConcurrentResend(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, nil, map[string]string{"a.txt": "log\n"})
	cs := e.client(t, "alice", modernVersion, nil, nil)
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	const n = 4
	texts := make(chan string, n)
	for range n {
		go func() {
			// Params of its own: the client adds to their _meta.
			call := &mcp.CallToolParams{Name: "write_file", Meta: mcp.Meta{mcpserver.MetaIdempotencyKey: "together"},
				Arguments: map[string]any{"path": "a.txt", "content": "more\n", "mode": "append"}}
			res, err := cs.CallTool(context.Background(), call)
			if err != nil || res.IsError {
				texts <- fmt.Sprintf("failed: %v %s", err, text(res))
				return
			}
			texts <- text(res)
		}()
	}
	first := <-texts
	for range n - 1 {
		if got := <-texts; got != first {
			t.Errorf("answers differ:\n%s\n%s", first, got)
		}
	}
	if got := readDisk(t, e.ws, "a.txt"); got != "log\nmore\n" {
		t.Errorf("a.txt = %q, want one append", got)
	}
	if n := okRecords(t, e.ws, "a.txt"); n != 1 {
		t.Errorf("%d ok records, want 1", n)
	}
}

// TestInProcessModern: a client of 2026-07-28 on a transport of one
// connection (as stdio is) calls the tools, and approval goes by
// input_required, answered through the client's elicitation handler.
func TestInProcessModern(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	ec := &elicitingClient{action: "accept", approve: true}
	cs := connectAt(t, newServer(t, ws, mcpserver.ApproveAsk), ec.options(), modernVersion)
	if got := cs.InitializeResult().ProtocolVersion; got != modernVersion {
		t.Fatalf("negotiated %s, want %s", got, modernVersion)
	}
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	ok(t, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "uno"})
	if len(ec.questions) != 1 || !strings.Contains(ec.questions[0].Message, "+uno") {
		t.Errorf("questions = %v, want one showing the diff", ec.questions)
	}
	if got := readDisk(t, ws, "a.txt"); got != "uno\n" {
		t.Errorf("a.txt = %q", got)
	}
	h, _ := ok(t, cs, "begin_session", map[string]any{})["session"].(string)
	fails(t, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": "uno", "new_string": "x", "session": h}, editguard.CodeNotRead)
}

// TestModernLimits: the request size limit and the token check hold for
// 2026-07-28 requests as for the others.
func TestModernLimits(t *testing.T) {
	t.Parallel()
	e := newEraServer(t, mcpserver.ApproveAuto, &mcpserver.HTTPOptions{MaxFileSize: 1 << 10}, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":"` +
		strings.Repeat("x", 5<<20) + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	for _, c := range []struct {
		token string
		size  int
		want  int
	}{
		{e.tokens["alice"], len(body), http.StatusRequestEntityTooLarge},
		{"not-a-token-not-a-token-not-a-token", 100, http.StatusUnauthorized},
	} {
		req, err := http.NewRequest(http.MethodPost, e.url, strings.NewReader(body[:c.size]))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", modernVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%d-byte request: status %d, want %d", c.size, resp.StatusCode, c.want)
		}
	}
}

// TestModernWithoutTokens: without tokens nothing tells two 2026-07-28
// clients apart, so a call must name a begin_session handle; two agents
// with handles conflict as two sessions do.
func TestModernWithoutTokens(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, nil, map[string]string{"a.txt": "one\n"})
	hs := httptest.NewServer(newServer(t, ws, mcpserver.ApproveAuto).Handler(&mcpserver.HTTPOptions{Rate: -1}))
	t.Cleanup(hs.Close)
	connect := func(name string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.Endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: modernVersion})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := connect("a"), connect("b")
	res := callTool(t, a, "read_file", map[string]any{"path": "a.txt"})
	if !res.IsError || !strings.Contains(text(res), "INVALID_ARGUMENT") || !strings.Contains(text(res), "begin_session") {
		t.Fatalf("read_file without a handle or tokens: %s, want INVALID_ARGUMENT naming begin_session", text(res))
	}
	handle := func(cs *mcp.ClientSession) string {
		t.Helper()
		out := ok(t, cs, "begin_session", map[string]any{})
		h, _ := out["session"].(string)
		if h == "" {
			t.Fatalf("begin_session = %v, want a handle", out)
		}
		return h
	}
	ha, hb := handle(a), handle(b)
	ok(t, a, "read_file", map[string]any{"path": "a.txt", "session": ha})
	ok(t, b, "read_file", map[string]any{"path": "a.txt", "session": hb})
	ok(t, b, "write_file", map[string]any{"path": "a.txt", "content": "bee\n", "session": hb})
	res = callTool(t, a, "write_file", map[string]any{"path": "a.txt", "content": "ay\n", "session": ha})
	if !res.IsError || !strings.Contains(text(res), "STALE_FILE") {
		t.Errorf("a's write after b's: %s, want STALE_FILE", text(res))
	}
	if got := readDisk(t, ws, "a.txt"); got != "bee\n" {
		t.Errorf("a.txt = %q, want b's write kept", got)
	}
}
