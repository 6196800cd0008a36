package mcpserver

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the results remembered for re-sent calls, per session.
const (
	DefaultReplayMax = 256
	DefaultReplayAge = 10 * time.Minute
)

// identity is who makes a call: the token it carries (its index, as the
// SDK's TokenInfo.UserID) and the agent the token names; both "" without
// tokens.
type identity struct {
	token, agent string
}

func identityOf(req *mcp.CallToolRequest) identity {
	if req.Extra == nil || req.Extra.TokenInfo == nil {
		return identity{}
	}
	ti := req.Extra.TokenInfo
	agent, _ := ti.Extra["agent"].(string)
	return identity{token: ti.UserID, agent: agent}
}

// registry holds the editguard sessions that are not an MCP session's:
// one per token for 2026-07-28 calls that name no handle, and those made
// by begin_session, each bound to the token that made it. It is safe for
// concurrent use.
type registry struct {
	s           *Server
	timeout     time.Duration // a handle unused this long expires; <= 0: never
	max         int           // handles at once; <= 0: no bound
	maxPerToken int           // handles of one token at once; <= 0: no bound
	replayMax   int
	replayAge   time.Duration

	mu       sync.Mutex
	agents   map[identity]*session
	handles  map[string]*handleEntry
	perToken map[string]int
}

type handleEntry struct {
	st    *session
	token string
	last  time.Time // of the last call that named it
}

func newRegistry(s *Server, timeout time.Duration, max, maxPerToken int) *registry {
	return &registry{s: s, timeout: timeout, max: max, maxPerToken: maxPerToken,
		replayMax: DefaultReplayMax, replayAge: DefaultReplayAge,
		agents: map[identity]*session{}, handles: map[string]*handleEntry{}, perToken: map[string]int{}}
}

// handler runs the tool t in the session a call names with its session
// argument, else in the one def returns. A re-sent call of a tool that
// changes files is answered from the first one's result while that is
// still true of the files (replay.go): one with the same idempotency key,
// or in one MCP session the same JSON-RPC id, or a 2026-07-28 copy of the
// session's last call, with the same tool and arguments.
func (r *registry) handler(t mcpTool, def func(*mcp.CallToolRequest) (*session, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		handle, args, err := toolset.TakeSession(t.tool.Name, req.Params.Arguments)
		if err != nil {
			return errorResult(err), nil
		}
		id := identityOf(req)
		var st *session
		if handle != "" {
			st, err = r.lookup(id, handle)
		} else {
			st, err = def(req)
		}
		if err != nil {
			return errorResult(err), nil
		}
		if t.tool.Name == "begin_session" {
			ctx = toolset.WithSessionMinter(ctx, minter{r, id})
		}
		if !t.mutates {
			st.replay.note()
			return st.run(ctx, t, req, args), nil
		}
		key, err := replayKeyOf(req)
		if err != nil {
			return errorResult(err), nil
		}
		return st.replay.do(ctx, key, t.tool.Name, args, func() (*mcp.CallToolResult, []claim) {
			return st.runClaims(ctx, t, req, args)
		})
	}
}

// agentSession is the session of the token req carries, made at its
// first call. Without tokens nothing tells one client from another (a
// 2026-07-28 request carries no session, and JSON-RPC ids repeat across
// clients): one session for all would let one agent's reads vouch for
// another's writes. So a call without tokens must name a begin_session
// handle, except begin_session itself, which runs in a session of its own.
func (r *registry) agentSession(req *mcp.CallToolRequest) (*session, error) {
	id := identityOf(req)
	if id == (identity{}) {
		if req.Params.Name == "begin_session" {
			return r.s.newSession("", "", r), nil
		}
		return nil, &editguard.Error{Code: editguard.CodeInvalidArgument, Message: "this server has no tokens, so it cannot tell one agent from another",
			RecoveryHint: "call begin_session once, then pass the handle it returns as the session argument of every call"}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.agents[id]
	if st == nil {
		st = r.s.newSession(id.agent, "", r)
		r.agents[id] = st
	}
	return st, nil
}

// lookup returns the session of handle for a call made by id. A handle
// of another token is refused with PERMISSION_DENIED, an unknown or
// expired one with INVALID_ARGUMENT.
func (r *registry) lookup(id identity, handle string) (*session, error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.handles[handle]
	if e != nil && r.expired(e, now) {
		r.drop(handle, e)
		e = nil
	}
	if e == nil {
		return nil, &editguard.Error{Code: editguard.CodeInvalidArgument,
			Message:      "unknown or expired session handle",
			Details:      map[string]any{"argument": toolset.SessionArgument},
			RecoveryHint: "call begin_session for a new handle (reads made in the old one are gone: read files again), or omit the session argument"}
	}
	if e.token != id.token {
		return nil, &editguard.Error{Code: editguard.CodePermission,
			Message:      "this session handle belongs to another token",
			Details:      map[string]any{"argument": toolset.SessionArgument},
			RecoveryHint: "use a handle made by begin_session with your own token"}
	}
	e.last = now
	return e.st, nil
}

func (r *registry) expired(e *handleEntry, now time.Time) bool {
	return r.timeout > 0 && now.Sub(e.last) > r.timeout
}

func (r *registry) drop(handle string, e *handleEntry) {
	delete(r.handles, handle)
	if r.perToken[e.token]--; r.perToken[e.token] <= 0 {
		delete(r.perToken, e.token)
	}
}

// sweep drops the expired handles.
func (r *registry) sweep(now time.Time) {
	if r.timeout <= 0 {
		return
	}
	for h, e := range r.handles {
		if r.expired(e, now) {
			r.drop(h, e)
		}
	}
}

// mint makes a session and its handle for id, within the bounds.
func (r *registry) mint(id identity) (*toolset.SessionHandle, error) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	if err := r.full(id); err != nil {
		return nil, err
	}
	handle := "egs_" + rand.Text()
	r.handles[handle] = &handleEntry{st: r.s.newSession(id.agent, "", r), token: id.token, last: now}
	r.perToken[id.token]++
	return &toolset.SessionHandle{Session: handle, IdleTimeoutSeconds: int64(max(r.timeout, 0) / time.Second)}, nil
}

// full returns the refusal of one more handle for id, or nil.
func (r *registry) full(id identity) error {
	what := "wait for unused handles to expire"
	if r.timeout > 0 {
		what += fmt.Sprintf(" (%s after their last call)", r.timeout)
	}
	what += ", or go on without the session argument"
	if r.maxPerToken > 0 && r.perToken[id.token] >= r.maxPerToken {
		return &editguard.Error{Code: editguard.CodeBusy,
			Message:      fmt.Sprintf("too many sessions for this token: %d are open, the limit per token is %d (serve --max-sessions-per-token)", r.perToken[id.token], r.maxPerToken),
			Details:      map[string]any{"limit": "max_sessions_per_token", "max": r.maxPerToken, "open": r.perToken[id.token]},
			RecoveryHint: what}
	}
	if r.max > 0 && len(r.handles) >= r.max {
		return &editguard.Error{Code: editguard.CodeBusy,
			Message:      fmt.Sprintf("too many sessions on this server: %d are open, the limit is %d (serve --max-sessions)", len(r.handles), r.max),
			Details:      map[string]any{"limit": "max_sessions", "max": r.max, "open": len(r.handles)},
			RecoveryHint: what}
	}
	return nil
}

// minter is begin_session's toolset.SessionMinter for the calls of id.
type minter struct {
	r  *registry
	id identity
}

func (m minter) MintSession(context.Context) (*toolset.SessionHandle, error) { return m.r.mint(m.id) }
