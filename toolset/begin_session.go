package toolset

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/editguard/editguard"
)

var beginSessionTool = &toolDef{
	name: "begin_session", title: "Begin session",
	description: beginSessionDescription,
	input: `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`,
	output: `{
  "type": "object",
  "properties": {
    "session": {"type": "string", "description": "The handle to pass as the session argument of later calls."},
    "idle_timeout_seconds": {"type": "integer", "description": "The handle expires after this long without a call; 0: never."}
  },
  "required": ["session"]
}`,
	annotations: Annotations{},
	run:         (*Toolset).beginSession,
}

const beginSessionDescription = `Start a separate editguard session and return its handle. Reads made in one session never vouch for changes made in another, so two tasks (or two sub-agents) sharing one connection can each pass their own handle as the "session" argument of every tool call. Without a session argument a call uses the connection's own session. A handle works only for the credentials that made it, and expires when unused for a while (the result says how long).`

// SessionArgument is the name of the optional argument that names, in
// any tool's call, the session (a handle from begin_session) the call
// runs in. A Toolset does not read it: the program that serves the tools
// takes it out with TakeSession and picks the Toolset.
const SessionArgument = "session"

// SessionHandle is begin_session's result.
type SessionHandle struct {
	Session            string `json:"session"`
	IdleTimeoutSeconds int64  `json:"idle_timeout_seconds"`
}

// SessionMinter makes the sessions begin_session hands out.
type SessionMinter interface {
	// MintSession makes a session and returns its handle. Its error is
	// returned to the caller of begin_session as it is.
	MintSession(ctx context.Context) (*SessionHandle, error)
}

type minterKey struct{}

// WithSessionMinter returns ctx carrying m, which begin_session calls
// made with the returned context use. Without one begin_session fails
// with INVALID_ARGUMENT: only a program that serves several sessions can
// offer it.
func WithSessionMinter(ctx context.Context, m SessionMinter) context.Context {
	return context.WithValue(ctx, minterKey{}, m)
}

func (t *Toolset) beginSession(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct{}
	if err := decodeArgs("begin_session", raw, &a); err != nil {
		return nil, err
	}
	m, _ := ctx.Value(minterKey{}).(SessionMinter)
	if m == nil {
		return nil, invalidArgument("begin_session", "this server does not make separate sessions", nil)
	}
	h, err := m.MintSession(ctx)
	if err != nil {
		return nil, err
	}
	text := "Session " + h.Session + ": pass it as the session argument of every later call that belongs to it."
	return &Output{Structured: h, Text: text}, nil
}

// sessionProperty is the schema of SessionArgument.
const sessionProperty = `{"type": "string", "description": "Optional. A handle from begin_session: the call runs in that session. Omit it to use the connection's own session."}`

// WithSessionArgument returns a copy of the input schema with the
// optional property SessionArgument added, or the schema itself when it is
// not an object schema with properties.
func WithSessionArgument(schema json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(schema, &m) != nil {
		return schema
	}
	var props map[string]json.RawMessage
	if json.Unmarshal(m["properties"], &props) != nil || props == nil {
		return schema
	}
	props[SessionArgument] = json.RawMessage(sessionProperty)
	p, err := json.Marshal(props)
	if err != nil {
		return schema
	}
	m["properties"] = p
	out, err := json.Marshal(m)
	if err != nil {
		return schema
	}
	return out
}

// TakeSession returns the value of the argument SessionArgument in the
// JSON arguments args ("" when there is none) and args without it. Only
// arguments that hold the member name are decoded; others come back as
// they are. A session argument that is not a string is INVALID_ARGUMENT
// of tool.
func TakeSession(tool string, args json.RawMessage) (string, json.RawMessage, error) {
	if !bytes.Contains(args, []byte(`"`+SessionArgument+`"`)) {
		return "", args, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", args, nil // Execute reports what is wrong with them
	}
	v, ok := m[SessionArgument]
	if !ok {
		return "", args, nil
	}
	var handle string
	if err := json.Unmarshal(v, &handle); err != nil {
		return "", nil, invalidArgument(tool, `argument "session" must be a string (a handle from begin_session)`,
			map[string]any{"argument": SessionArgument})
	}
	delete(m, SessionArgument)
	rest, err := json.Marshal(m)
	if err != nil {
		return "", nil, &editguard.Error{Code: editguard.CodeInvalidArgument, Message: err.Error(), Err: err}
	}
	return handle, rest, nil
}
