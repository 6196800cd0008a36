// Package mcpserver serves editguard's tools over the Model Context Protocol
// with the official Go SDK, on stdio or streamable HTTP.
//
// It serves the revisions with sessions (2025-11-25 and earlier) and
// 2026-07-28, which has none, at once. Each MCP session gets its own
// editguard session; a 2026-07-28 call runs in the session of the agent its
// token names, or in one made by the tool begin_session and named by the
// call's session argument. So the read baselines of one agent never vouch
// for another: two agents on one workspace conflict exactly as two library
// sessions do. The tools, their schemas and their results come from
// package toolset unchanged (with the session argument added); this package
// adds only the binding: annotations, error results, answering a re-sent
// change with its first result (replay.go), and approval of changes by the
// person at the client, through MCP elicitation or, in 2026-07-28, an
// input_required result (roundtrip.go).
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approval modes.
const (
	// ApproveAuto commits every change that passes the checks.
	ApproveAuto = "auto"
	// ApproveAsk shows the person at the client the diff of every change,
	// through MCP elicitation (in 2026-07-28: an input_required result,
	// answered by sending the call again), and commits only what they
	// accept. A client that cannot ask gets REJECTED: never a silent write.
	ApproveAsk = "ask"
	// ApproveReadOnly offers only the tools that never change a file.
	ApproveReadOnly = "read-only"
)

// protocolVersions are the MCP revisions served. 2026-07-28 has no
// protocol sessions and no requests from server to client: over HTTP its
// requests go to a stateless handler (see eraRouter), a call runs in the
// editguard session its token names unless it names a handle from
// begin_session (handles.go), and approval is an input_required result
// that the call carries back with the answer (roundtrip.go). The earlier
// revisions keep one editguard session per MCP session and approval by
// elicitation.
var protocolVersions = []string{modernVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// modernVersion is the first revision without protocol sessions.
const modernVersion = "2026-07-28"

const instructions = `editguard file tools. Read a file with read_file before changing it; prefer edit_file (exact string replacement) over write_file for existing files. A change is refused with NOT_READ if you have not read the file, and with STALE_FILE if it changed after your read: the error shows what changed when the change is small, so you can redo an edit on the new content at once; otherwise call read_file again first. Every replaced version is kept (file_history, restore_file); apply_patch changes several files all or nothing.`

// Options configure a Server.
type Options struct {
	// Approve is ApproveAuto (the default), ApproveAsk or ApproveReadOnly.
	Approve string
	// Version is reported to clients as the server's version.
	Version string
	// Logger receives the SDK's log; nil discards it.
	Logger *slog.Logger
}

// Server makes MCP servers over one workspace. It is safe for concurrent
// use.
type Server struct {
	ws   *editguard.Workspace
	opts Options
	key  [32]byte // signs the state of approval round trips

	toolsOnce sync.Once
	tools     []mcpTool // the catalogue, shared by every session's server
}

// mcpTool is one tool as every session's MCP server offers it.
type mcpTool struct {
	tool       *mcp.Tool // not changed by the SDK, so shared
	structured bool      // its result is structuredContent
	asks       bool      // a call asks the person at the client
	mutates    bool      // a call may change a file: a re-sent one is answered, not run again
}

// New returns a Server for ws. It fails on an unknown approval mode.
func New(ws *editguard.Workspace, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch o.Approve {
	case "":
		o.Approve = ApproveAuto
	case ApproveAuto, ApproveAsk, ApproveReadOnly:
	default:
		return nil, fmt.Errorf("unknown approval mode %q (want %s, %s or %s)", o.Approve, ApproveAuto, ApproveAsk, ApproveReadOnly)
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	s := &Server{ws: ws, opts: o}
	rand.Read(s.key[:])
	return s, nil
}

// Run serves one MCP session over t (for example &mcp.StdioTransport{})
// until the client disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	err := s.NewMCPServer().Run(ctx, t)
	if ctx.Err() != nil {
		return nil // asked to stop
	}
	return err
}

// NewMCPServer returns an MCP server with a new editguard session of its
// own. Connect it to one client: every client connected to it shares the
// session's read baselines. Handles from begin_session made through it
// are its own.
func (s *Server) NewMCPServer() *mcp.Server {
	return s.newMCPServer("", newRegistry(s, DefaultSessionTimeout, -1, DefaultMaxSessionsPerToken))
}

// newMCPServer is NewMCPServer for a session opened by agent (a name from
// the tokens file, or "" when there is none), whose begin_session handles
// are kept in reg.
func (s *Server) newMCPServer(agent string, reg *registry) *mcp.Server {
	id := rand.Text()
	st := s.newSession(agent, id, reg)
	srv := s.mcpServer(func() string { return id })
	for _, t := range s.catalogue(st.tools) {
		srv.AddTool(t.tool, reg.handler(t, func(*mcp.CallToolRequest) (*session, error) { return st, nil }))
	}
	return srv
}

// mcpServer returns an MCP server without tools. getID, if not nil, names
// its sessions (GetSessionID).
func (s *Server) mcpServer(getID func() string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "editguard", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions:              instructions,
		Logger:                    s.opts.Logger,
		SupportedProtocolVersions: protocolVersions,
		GetSessionID:              getID,
		// The SDK answers prompts/list and resources/list whatever is
		// declared (editguard has neither: empty lists), and a server
		// that answers them must declare them (2026-07-28).
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
		},
	})
	srv.AddReceivingMiddleware(plainResults)
	return srv
}

// newSession returns a new editguard session of agent with its toolset;
// id is the MCP session's id, or "" for a session of another kind.
func (s *Server) newSession(agent, id string, reg *registry) *session {
	if id == "" {
		id = rand.Text()
	}
	// The ledger names the session by a prefix of its id only: over HTTP the
	// whole id may address the session. The agent's name before it tells
	// in the ledger which agent made a change.
	name := "mcp-" + id[:8]
	if agent != "" {
		name = agent + "/" + name
	}
	sess := s.ws.NewSession(name)
	st := &session{
		name:   name,
		key:    &s.key,
		tools:  toolset.New(sess, &toolset.Options{ReadOnly: s.opts.Approve == ApproveReadOnly}),
		replay: newReplay(s.ws, reg.replayMax, reg.replayAge),
	}
	if s.opts.Approve == ApproveAsk {
		sess.SetApprover(editguard.ApproverFunc(st.approve))
	}
	return st
}

// catalogue returns the MCP tools, made once from those of ts (every
// session's toolset offers the same).
func (s *Server) catalogue(ts *toolset.Toolset) []mcpTool {
	s.toolsOnce.Do(func() {
		for _, t := range ts.Tools() {
			destructive, openWorld := t.Annotations.Destructive, false
			tool := &mcp.Tool{
				Name:        t.Name,
				Title:       t.Title,
				Description: t.Description,
				InputSchema: t.InputSchema,
				Annotations: &mcp.ToolAnnotations{
					ReadOnlyHint:    t.Annotations.ReadOnly,
					DestructiveHint: &destructive,
					IdempotentHint:  t.Annotations.Idempotent,
					OpenWorldHint:   &openWorld,
					Title:           t.Title,
				},
			}
			if t.OutputSchema != nil {
				tool.OutputSchema = t.OutputSchema
			}
			tool.InputSchema = toolset.WithSessionArgument(t.InputSchema)
			s.tools = append(s.tools, mcpTool{tool: tool, structured: t.OutputSchema != nil,
				asks:    !t.Annotations.ReadOnly && s.opts.Approve == ApproveAsk,
				mutates: !t.Annotations.ReadOnly})
		}
	})
	return s.tools
}

// session is one editguard session as the MCP server serves it: that of
// an MCP session, of a token (2026-07-28), or of a begin_session handle.
type session struct {
	name   string // in the ledger
	key    *[32]byte
	tools  *toolset.Toolset
	replay *replay
}

// clientKey carries the ServerSession of a tool call through the core to
// the approver, which asks that client.
type clientKey struct{}

// Keys of the _meta object of a tool result. Clients do not show _meta to
// the model; programs find the facts of a result there.
const (
	// MetaResult holds the result without file content or diff, for the
	// tools whose result the model reads as text (see toolset.Output).
	MetaResult = "editguard/result"
	// MetaError holds a failed call's error object (editguard.Error) whole, as
	// the JSON of *editguard.Error: the object the library returns and
	// the CLI prints with --json. The model reads its compact rendering,
	// toolset.ErrorText, as the result's text. (Gemini CLI shows the model
	// an error result whole, _meta included: see errorResult.)
	MetaError = "editguard/error"
)

// run runs one tool in st. A tool with structured results (an output
// schema) returns them as structuredContent, with the text beside; the
// others return text alone, since some clients show the model only the
// JSON of structuredContent when it is present and that would hide the
// text.
func (st *session) run(ctx context.Context, t mcpTool, req *mcp.CallToolRequest, args json.RawMessage) *mcp.CallToolResult {
	res, _ := st.runClaims(ctx, t, req, args)
	return res
}

// runClaims is run, also returning what a change's result says the files
// hold (see replay.go).
func (st *session) runClaims(ctx context.Context, t mcpTool, req *mcp.CallToolRequest, args json.RawMessage) (*mcp.CallToolResult, []claim) {
	if t.asks {
		ctx = withAsker(ctx, req, args)
	}
	out, err := st.tools.Execute(ctx, t.tool.Name, args)
	if err != nil {
		var q *question
		if errors.As(err, &q) {
			return q.result(), nil
		}
		return errorResultFor(err, showsWholeResult(req)), nil
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Text}}}
	if t.structured {
		res.StructuredContent = out.Structured
	} else if out.Meta != nil {
		res.Meta = mcp.Meta{MetaResult: out.Meta}
	}
	return res, claimsOf(out.Structured)
}

// errorResult reports a failure as a tool error the model can read: the
// compact text of toolset.ErrorText, and the whole error object in _meta.
// There is no structuredContent, so the clients that show a model the text
// of a result show it that text, once. Gemini CLI shows the model the JSON
// of an error result whole, the text and _meta both, so there the error
// object repeats what the text says; that is why the text is kept compact,
// and why errorResultFor keeps less in _meta for it.
func errorResult(err error) *mcp.CallToolResult { return errorResultFor(err, false) }

// errorResultFor is errorResult; with whole (a client that shows the model
// the whole result) _meta holds only the error's code and the details a
// program acts on (path, version, reason): the text says the rest (its
// hint is the next step, in words).
func errorResultFor(err error, whole bool) *mcp.CallToolResult {
	var e *editguard.Error
	if !errors.As(err, &e) {
		e = &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Err: err}
	}
	switch {
	case errors.Is(e, errNoElicitation):
		c := *e
		c.RecoveryHint = "this MCP client cannot ask the user to approve changes; tell the user, who can restart editguard serve with --approve auto or use a client that supports elicitation"
		e = &c
	case errors.Is(e, errNotShown):
		c := *e
		c.Message = "the change was not made: the client did not show the approval question to anyone (it answered cancel)"
		c.RecoveryHint = "nobody declined the change; tell the user that this client cannot show approval questions here, and that editguard serve --approve auto allows changes without asking"
		e = &c
	}
	var meta any = errorMeta(e)
	if whole {
		small := map[string]any{"code": e.Code}
		for _, k := range []string{"path", "version", "reason"} {
			if v, ok := e.Details[k]; ok {
				small[k] = v
			}
		}
		meta = small
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: toolset.ErrorText(e)}},
		Meta:    mcp.Meta{MetaError: meta},
		IsError: true,
	}
}

// showsWholeResult reports whether the client shows a model an error
// result whole, _meta included, as JSON: Gemini CLI does (its MCP client
// calls itself gemini-cli-mcp-client), so there the error object in _meta
// would say everything the text says a second time.
func showsWholeResult(req *mcp.CallToolRequest) bool {
	name := ""
	if req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			name = ip.ClientInfo.Name
		}
	}
	if name == "" && req.Params != nil {
		if ci, ok := req.Params.Meta[mcp.MetaKeyClientInfo].(map[string]any); ok {
			name, _ = ci["name"].(string)
		}
	}
	return strings.HasPrefix(name, "gemini-cli")
}

// errNotShown is the failure of an approval the client cancelled: clients
// answer cancel when they cannot put the question to a person (Claude Code
// in print mode does), which is not a person's decline.
var errNotShown = errors.New("the client cancelled the approval question without showing it")

// errorMeta is e's JSON, the error object as the library and the CLI give
// it. Should a detail not encode, the object keeps its code, message, hint
// and path, and says why the other details are missing.
func errorMeta(e *editguard.Error) json.RawMessage {
	b, err := json.Marshal(e)
	if err != nil {
		d := map[string]any{"details_unavailable": err.Error()}
		if p, ok := e.Details["path"].(string); ok {
			d["path"] = p
		}
		b, _ = json.Marshal(&editguard.Error{Code: e.Code, Message: e.Message, RecoveryHint: e.RecoveryHint, Details: d})
	}
	return b
}

var errNoElicitation = errors.New("the MCP client does not support elicitation, so the change cannot be put to the user; restart the server with --approve auto to allow changes without asking")

// approvalSchema asks one yes/no question. It has no default, so that a
// client filling in defaults does not approve by accident.
var approvalSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "approve": {"type": "boolean", "title": "Apply this change?", "description": "Check to write the change shown above."}
  },
  "required": ["approve"]
}`)

// maxDiffInQuestion bounds the diff shown in an approval question.
const maxDiffInQuestion = 64 << 10

// approve puts a change to the person at the client. Only an explicit
// accept with approve=true commits; decline, cancel, a missing answer or a
// failed request do not.
func (st *session) approve(ctx context.Context, p *editguard.Preview) (bool, error) {
	if rt, ok := ctx.Value(roundTripKey{}).(*roundTrip); ok {
		return st.approveRoundTrip(rt, p)
	}
	ss, _ := ctx.Value(clientKey{}).(*mcp.ServerSession)
	if ss == nil {
		return false, errors.New("no client to ask")
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false, errNoElicitation
	}
	res, err := ss.Elicit(ctx, questionParams(p))
	if err != nil {
		return false, fmt.Errorf("asking the user: %w", err)
	}
	if res.Action == "cancel" {
		return false, errNotShown
	}
	ok, _ := res.Content["approve"].(bool)
	return res.Action == "accept" && ok, nil
}

// questionParams is the approval question of the change p.
func questionParams(p *editguard.Preview) *mcp.ElicitParams {
	what := "change"
	switch {
	case p.Created:
		what = "create"
	case p.Deleted:
		what = "delete"
	}
	diff := p.Diff
	if len(diff) > maxDiffInQuestion {
		diff = diff[:maxDiffInQuestion] + "\n[diff cut: " + fmt.Sprint(len(p.Diff)-maxDiffInQuestion) + " more bytes]\n"
	}
	return &mcp.ElicitParams{
		Message:         fmt.Sprintf("editguard: %s wants to %s %s.\n\n%s", p.Tool, what, p.Path, diff),
		RequestedSchema: approvalSchema,
	}
}
