package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/editguard/editguard/toolset"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpClient is shared by all MCP sessions of a run, with enough idle
// connections kept that 32 sessions do not reconnect on every call.
var httpClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
}}

// mcpClient is one MCP session over streamable HTTP.
type mcpClient struct {
	cs *mcp.ClientSession
}

// dialMCP opens a session. The transport does not retry: a dropped
// connection is a failure of the run, not something to paper over. The
// standalone SSE stream is off because the server sends nothing unasked
// when changes are approved automatically. The client asks for MCP
// 2025-11-25, whose protocol sessions are the soak's agents: at 2026-07-28
// a session is a token's or a begin_session handle's, which the eras tests
// of internal/mcpserver and test/interop drive.
func dialMCP(ctx context.Context, url string) (*mcpClient, error) {
	tr := &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           httpClient,
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "editguard-soak", Version: "1"}, nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: sessionEra})
	if err != nil {
		return nil, fmt.Errorf("soak: connect to %s: %w", url, err)
	}
	return &mcpClient{cs: cs}, nil
}

// sessionEra is the MCP revision the soak's clients speak.
const sessionEra = "2025-11-25"

// ledgerName is the session name the server records in the ledger.
func (c *mcpClient) ledgerName() string {
	id := c.cs.ID()
	if len(id) > 8 {
		id = id[:8]
	}
	return "mcp-" + id
}

// call calls a tool and decodes its structured content into out, or into a
// refusal when the result is an error.
func (c *mcpClient) call(ctx context.Context, name string, args map[string]any, out any) (*toolError, error) {
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Structured results come as structuredContent; the tools whose
	// result a model reads as text put their facts in _meta, and so do
	// errors.
	obj := res.StructuredContent
	if obj == nil && res.IsError {
		obj = res.Meta[mcpserver.MetaError]
	} else if obj == nil {
		obj = res.Meta[mcpserver.MetaResult]
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: structured content: %w", name, err)
	}
	if res.IsError {
		var e toolError
		if err := json.Unmarshal(raw, &e); err != nil || e.Code == "" {
			return nil, fmt.Errorf("%s: error result without a code: %s", name, raw)
		}
		return &e, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("%s: decode structured content: %w", name, err)
	}
	if t, ok := out.(interface{ setText(string) }); ok && len(res.Content) > 0 {
		if tc, isText := res.Content[0].(*mcp.TextContent); isText {
			t.setText(tc.Text)
		}
	}
	return nil, nil
}

// readResult is what the soak needs of read_file: whether the read is
// whole (from _meta) and the text the model sees.
type readResult struct {
	Truncated bool `json:"truncated"`
	text      string
}

func (r *readResult) setText(s string) { r.text = s }

// readLimit asks read_file for every line: the loop needs the whole file to
// see whether it is complete, and the default page is 2000 lines.
const readLimit = 1 << 30

func (c *mcpClient) read(ctx context.Context, file string) (string, *toolError, error) {
	var r readResult
	terr, err := c.call(ctx, "read_file", map[string]any{"path": file, "limit": readLimit}, &r)
	if err != nil || terr != nil {
		return "", terr, err
	}
	content, err := toolset.ReadText(r.text)
	if err != nil || r.Truncated {
		return "", nil, fmt.Errorf("read_file %s: no whole content in the result (%v)", file, err)
	}
	return content, nil, nil
}

func (c *mcpClient) appendMarker(ctx context.Context, file, marker string) (*toolError, error) {
	var r struct {
		SHA256 string `json:"sha256"`
	}
	terr, err := c.call(ctx, "edit_file", map[string]any{
		"path": file, "old_string": endLine, "new_string": marker + "\n" + endLine,
	}, &r)
	if err == nil && terr == nil && r.SHA256 == "" {
		return nil, fmt.Errorf("edit_file %s: success without a sha256", file)
	}
	return terr, err
}

func (c *mcpClient) close() error { return c.cs.Close() }
