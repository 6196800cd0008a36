package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK encodes a tool result in layers, each of which re-validates
// (compacts) the JSON of the layer inside it: the text content, the
// CallToolResult, the JSON-RPC response. For a read of a large file that is
// four passes over the file's text where one would do, and most of the
// server's time. plainResults hands the SDK the same result as a plain
// struct that encoding/json writes in one pass, so that only the JSON-RPC
// layer checks it again. The JSON is the same value; its bytes differ only
// in that <, > and & are no longer escaped as \u003c, \u003e and \u0026.

// wireToolResult is a tool result with text content only, as
// CallToolResult encodes it.
type wireToolResult struct {
	mcp.ResultBase
	Content           []wireText `json:"content"`
	StructuredContent any        `json:"structuredContent,omitempty"`
	IsError           bool       `json:"isError,omitempty"`
	// ResultType is "complete" for the clients to which the SDK would
	// say so (see asWire), else empty.
	ResultType string `json:"resultType,omitempty"`
}

// wireText is a TextContent without _meta or annotations.
type wireText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// multiRoundTripVersion is the first protocol revision in which the SDK
// adds a resultType to tool results (for a client that asks for it, even
// when the server negotiates an earlier revision).
const multiRoundTripVersion = "2026-07-28"

// plainResults is a receiving middleware that turns the results of
// tools/call into wireToolResult when the SDK would encode nothing more
// than wireToolResult holds; any other result goes out as it came. (The
// SDK adds its serverInfo to the _meta of either, for 2026-07-28 calls.)
func plainResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/call" {
			return res, err
		}
		if w := asWire(req, res); w != nil {
			return w, nil
		}
		return res, nil
	}
}

// asWire returns res as a wireToolResult, or nil when it holds more than
// one can carry.
func asWire(req mcp.Request, res mcp.Result) *wireToolResult {
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil || r.InputRequests != nil || r.RequestState != "" || r.NeedsInput() {
		return nil
	}
	complete, ok := completes(req)
	if !ok {
		return nil
	}
	w := wireResult(r)
	if w != nil && complete {
		w.ResultType = "complete"
	}
	return w
}

// completes reports whether the SDK marks the result of req "complete":
// for a client of the multi-round-trip revision, in the session (a
// stateless session has no initialize: the latest revision) or in the
// call's _meta. ok is false for a request it cannot tell about.
func completes(req mcp.Request) (complete, ok bool) {
	ss, isServer := req.GetSession().(*mcp.ServerSession)
	p := req.GetParams()
	if !isServer || p == nil {
		return false, false
	}
	if _, inMeta := p.GetMeta()[mcp.MetaKeyProtocolVersion]; inMeta {
		return true, true
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= multiRoundTripVersion, true
}

// wireResult returns r as a wireToolResult, or nil when r has content other
// than plain text.
func wireResult(r *mcp.CallToolResult) *wireToolResult {
	w := &wireToolResult{
		ResultBase:        mcp.ResultBase{Meta: r.Meta},
		Content:           make([]wireText, len(r.Content)),
		StructuredContent: r.StructuredContent,
		IsError:           r.IsError,
	}
	for i, c := range r.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return nil
		}
		w.Content[i] = wireText{Type: "text", Text: t.Text}
	}
	return w
}
