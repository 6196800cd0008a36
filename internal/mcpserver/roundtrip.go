package mcpserver

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approval in 2026-07-28, where a server cannot ask the client in the
// middle of a call: the first call of a change that needs approval ends
// with an input_required result holding the question (the diff) and a
// signed request state; nothing is written. The client puts the question
// to the person and sends the same call again with the answer
// (inputResponses) and the state. That call runs the change again from
// the start, with the same checks against the file's current bytes under
// its lock; the approver accepts only an answer to the very change it
// computes now, which the state vouches for. Anything else (a decline, a
// cancel, no answer, an answer to another change) writes nothing.

// approvalInput is the id of the approval question in inputRequests.
const approvalInput = "approve"

// roundTripKey is the context key of a call's *roundTrip.
type roundTripKey struct{}

// roundTrip is what the approver of a 2026-07-28 call knows of it.
type roundTrip struct {
	responses mcp.InputResponseMap
	state     string // echoed from the input_required result, or ""
	args      []byte // the call's arguments, without the session handle
	canAsk    bool   // the client declared elicitation
}

// withAsker returns ctx with what the approver needs to ask the client of
// req: the session to elicit from (earlier revisions), or the round trip
// (2026-07-28).
func withAsker(ctx context.Context, req *mcp.CallToolRequest, args json.RawMessage) context.Context {
	if !isModern(req) {
		return context.WithValue(ctx, clientKey{}, req.Session)
	}
	caps := req.ClientCapabilities()
	return context.WithValue(ctx, roundTripKey{}, &roundTrip{
		responses: req.Params.InputResponses,
		state:     req.Params.RequestState,
		args:      args,
		canAsk:    caps != nil && caps.Elicitation != nil,
	})
}

// isModern reports whether req follows 2026-07-28 or later.
func isModern(req *mcp.CallToolRequest) bool {
	return req.ProtocolVersion() >= modernVersion
}

// question is the failure of an approval that must first be put to the
// person: the call ends with it as an input_required result.
type question struct {
	p     *editguard.Preview
	state string
}

func (q *question) Error() string { return "the change awaits the user's answer" }

// Unwrap lets the engine record the question as asked (ErrApprovalPending).
func (q *question) Unwrap() error { return editguard.ErrApprovalPending }

// result is q as the call's result.
func (q *question) result() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInput: questionParams(q.p)},
		RequestState:  q.state,
	}
}

// approveRoundTrip answers the approval of p in a 2026-07-28 call: true
// only for an accept with approve=true that answers the question about p
// in this session, with these arguments.
func (st *session) approveRoundTrip(rt *roundTrip, p *editguard.Preview) (bool, error) {
	if !rt.canAsk {
		return false, errNoElicitation
	}
	want := st.questionState(rt.args, p)
	answer, _ := rt.responses[approvalInput].(*mcp.ElicitResult)
	if answer == nil || !hmac.Equal([]byte(rt.state), []byte(want)) {
		return false, &question{p: p, state: want}
	}
	if answer.Action == "cancel" {
		return false, errNotShown
	}
	ok, _ := answer.Content["approve"].(bool)
	return answer.Action == "accept" && ok, nil
}

// questionState is the request state of the question about p: a MAC, with
// the server's key, of the session, the call's arguments and the change.
// An answer comes back with it; a change that differs in anything the
// person was shown has another state.
func (st *session) questionState(args []byte, p *editguard.Preview) string {
	m := hmac.New(sha256.New, st.key[:])
	for _, f := range []string{st.name, string(args), p.Tool, p.Path, p.Diff, strconv.FormatBool(p.Created), strconv.FormatBool(p.Deleted)} {
		m.Write([]byte(strconv.Itoa(len(f)) + ":"))
		m.Write([]byte(f))
	}
	return "eg1." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
