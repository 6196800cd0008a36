package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of the session limits of the HTTP endpoint.
const (
	DefaultMaxSessions         = 1024
	DefaultMaxSessionsPerToken = 64
	DefaultSessionTimeout      = 10 * time.Minute
)

// codeTooManySessions is the JSON-RPC error code of a new session refused
// by a session limit (in the range JSON-RPC leaves to servers).
const codeTooManySessions = -32000

// tokenKey is the context key of the index of the token a request
// carries; requests without a token have none.
type tokenKey struct{}

func tokenFrom(ctx context.Context) (int, bool) {
	i, ok := ctx.Value(tokenKey{}).(int)
	return i, ok
}

// newServerKey is the context key of the MCP server made for a request
// that opens a session.
type newServerKey struct{}

// sessionGate admits new MCP sessions within the limits of HTTPOptions:
// at most MaxSessions open at once, and MaxSessionsPerToken per token. A
// session holds its place from the request that opens it until the SDK
// closes it (DELETE, SessionTimeout, a failed initialize), when its
// server, with its editguard session and read baselines, becomes garbage.
type sessionGate struct {
	s           *Server
	max         int // <= 0: no bound
	maxPerToken int // <= 0: no bound
	timeout     time.Duration
	next        http.Handler
	reg         *registry // the sessions' begin_session handles

	mu       sync.Mutex
	open     int
	perToken map[int]int
}

func newSessionGate(s *Server, o *HTTPOptions, next http.Handler, reg *registry) *sessionGate {
	return &sessionGate{s: s, max: o.MaxSessions, maxPerToken: o.MaxSessionsPerToken, timeout: o.SessionTimeout,
		next: next, reg: reg, perToken: map[int]int{}}
}

// ServeHTTP passes every request on. One that opens a session (a POST
// without Mcp-Session-Id) first takes a place, or is refused, and carries
// the session's new MCP server to the SDK (see serverFor).
func (g *sessionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		g.next.ServeHTTP(w, r)
		return
	}
	token, hasToken := tokenFrom(r.Context())
	if status, msg, data := g.reserve(token, hasToken); status != 0 {
		g.refuse(w, r, status, msg, data)
		return
	}
	srv := g.s.newMCPServer(agentFrom(r.Context()), g.reg)
	defer func() {
		// The server serves at most the one session made by this request.
		// If the SDK made none, or has closed it already, the place is
		// free now; otherwise once the session is closed.
		for ss := range srv.Sessions() {
			go func() {
				ss.Wait()
				g.release(token, hasToken)
			}()
			return
		}
		g.release(token, hasToken)
	}()
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), newServerKey{}, srv)))
}

// reserve takes a place for a new session, or returns the HTTP status, the
// message and the details of the refusal.
func (g *sessionGate) reserve(token int, hasToken bool) (status int, msg string, data map[string]any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	what := "close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id)"
	if g.timeout > 0 {
		what += fmt.Sprintf(" or wait for idle ones to expire (%s after their last request)", g.timeout)
	}
	if hasToken && g.maxPerToken > 0 && g.perToken[token] >= g.maxPerToken {
		return http.StatusTooManyRequests,
			fmt.Sprintf("too many MCP sessions for this token: %d are open, the limit per token is %d (serve --max-sessions-per-token); %s", g.perToken[token], g.maxPerToken, what),
			map[string]any{"limit": "max_sessions_per_token", "max": g.maxPerToken, "open": g.perToken[token]}
	}
	if g.max > 0 && g.open >= g.max {
		return http.StatusServiceUnavailable,
			fmt.Sprintf("too many MCP sessions on this server: %d are open, the limit is %d (serve --max-sessions); %s", g.open, g.max, what),
			map[string]any{"limit": "max_sessions", "max": g.max, "open": g.open}
	}
	g.open++
	if hasToken {
		g.perToken[token]++
	}
	return 0, "", nil
}

func (g *sessionGate) release(token int, hasToken bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if hasToken {
		if g.perToken[token]--; g.perToken[token] <= 0 {
			delete(g.perToken, token)
		}
	}
}

// refuse answers a request for a new session with a JSON-RPC error
// response (with the request's id when it is a single request of at most
// 64 KiB) and status: 429 for the limit per token, 503 for the server's.
// Retry-After says when to try again: sessions expire after the idle
// timeout, but others may close sooner.
func (g *sessionGate) refuse(w http.ResponseWriter, r *http.Request, status int, msg string, data map[string]any) {
	id := json.RawMessage("null")
	if r.Body != nil {
		const most = 64 << 10
		body, _ := io.ReadAll(io.LimitReader(r.Body, most+1))
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if len(body) <= most && json.Unmarshal(bytes.TrimSpace(body), &m) == nil {
			if _, ok := idKey(m.ID); ok {
				id = m.ID
			}
		}
	}
	after := time.Minute
	if g.timeout > 0 && g.timeout < after {
		after = g.timeout
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(after.Seconds())))))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(newErrorResponse(id, codeTooManySessions, msg, data))
}

// serverFor is the SDK's getServer: the server made by sessionGate for a
// request that opens a session, probe for any other (the SDK asks for a
// server on every request, and of an existing session's server needs only
// the protocol versions, the same for all).
func serverFor(r *http.Request, probe *mcp.Server) *mcp.Server {
	if srv, ok := r.Context().Value(newServerKey{}).(*mcp.Server); ok {
		return srv
	}
	if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		return nil // not through sessionGate: no server, 400
	}
	return probe
}
