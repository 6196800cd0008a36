package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eraRouter serves both eras of the protocol on one endpoint. A request
// of 2026-07-28 or later (its MCP-Protocol-Version header says so, and
// the SDK checks that its _meta agrees) goes to modern, the SDK's
// stateless handler: no initialize, no Mcp-Session-Id, server/discover.
// A server/discover without the header goes there too, so that it is
// answered with the versions served. Every other request goes to legacy,
// the sessions of the earlier revisions (sessionGate in front of the
// SDK's stateful handler).
//
// For a tool call it also hands the call's JSON-RPC id (from a body of at
// most 1 MiB) to the tool handler, in the request header rpcIDHeader, so
// that a call sent twice is answered once (replay.go): in an MCP session
// (the earlier revisions) with the session's id; a 2026-07-28 call, which
// has no session, marked modernIDPrefix, which replay takes only for an
// immediate re-send.
type eraRouter struct {
	legacy, modern http.Handler
}

// modernIDPrefix starts rpcIDHeader for a 2026-07-28 call.
const modernIDPrefix = "2026-07-28 "

func (e eraRouter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(rpcIDHeader)
	var id, method string
	if body, ok := r.Context().Value(bodyKey{}).([]byte); ok && r.Method == http.MethodPost {
		id, method = peekCall(body)
	}
	sid := r.Header.Get("Mcp-Session-Id")
	modern := r.Header.Get("Mcp-Protocol-Version") >= modernVersion ||
		method == "server/discover" && sid == ""
	if modern {
		if id != "" && method == "tools/call" {
			r.Header.Set(rpcIDHeader, modernIDPrefix+id)
		}
		e.modern.ServeHTTP(w, r)
		return
	}
	if id != "" && method == "tools/call" && sid != "" {
		r.Header.Set(rpcIDHeader, sid+" "+id)
	}
	e.legacy.ServeHTTP(w, r)
}

// peekCall returns the id and method of the single JSON-RPC request body,
// or "" for what it cannot tell: a batch, a body over 1 MiB, bad JSON.
func peekCall(body []byte) (id, method string) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || len(body) > largeBody || body[0] != '{' {
		return "", ""
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(body, &m) != nil {
		return "", ""
	}
	id, _ = idKey(m.ID)
	return id, m.Method
}

// bodyKey is the context key of a request's body, as limitBodies read it.
type bodyKey struct{}

// withBody returns r's context carrying body.
func withBody(ctx context.Context, body []byte) context.Context {
	return context.WithValue(ctx, bodyKey{}, body)
}

// statelessServer is the one MCP server of every 2026-07-28 request: a
// call runs in the session of its token (agentSession) or of the handle
// it names.
func (s *Server) statelessServer(reg *registry) *mcp.Server {
	srv := s.mcpServer(nil)
	for _, t := range s.catalogue(s.newSession("", "", reg).tools) {
		srv.AddTool(t.tool, reg.handler(t, reg.agentSession))
	}
	return srv
}
