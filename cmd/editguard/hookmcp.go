package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// "editguard hook --mcp" answers hook events as an MCP tool, for Claude
// Code's hooks of type mcp_tool ("init claude-code --hooks --via mcp"):
// Claude Code calls the tool on a server it already runs, so no process
// starts per event. The tool takes the event's fields as Claude Code
// interpolates them into the hook's input (objects as JSON text) and
// returns what "editguard hook" would print. It is the hooks' own: init
// denies it to the model (permissions.deny), which must not record reads
// it did not make.

// hookToolName is the one tool of "editguard hook --mcp".
const hookToolName = "hook"

// hookMCPServer is the name init gives the server in .mcp.json, so the
// tool is mcp__editguard-hooks__hook to Claude Code.
const hookMCPServer = "editguard-hooks"

// hookToolInput is the hook's input: each value a string, as Claude Code
// interpolates "${tool_input}" and the other fields of its event.
type hookToolInput struct {
	Client       string `json:"client,omitempty" jsonschema:"the agent whose event this is (default claude-code)"`
	Event        string `json:"hook_event_name" jsonschema:"the event's hook_event_name"`
	SessionID    string `json:"session_id" jsonschema:"the event's session_id"`
	AgentID      string `json:"agent_id,omitempty" jsonschema:"the event's agent_id (a subagent's)"`
	Tool         string `json:"tool_name,omitempty" jsonschema:"the event's tool_name"`
	Cwd          string `json:"cwd,omitempty" jsonschema:"the event's cwd"`
	ToolInput    string `json:"tool_input,omitempty" jsonschema:"the event's tool_input, as JSON text"`
	ToolResponse string `json:"tool_response,omitempty" jsonschema:"the event's tool_response, as JSON text"`
	ToolUseID    string `json:"tool_use_id,omitempty" jsonschema:"the event's tool_use_id"`
	Command      string `json:"command,omitempty" jsonschema:"the event's command (a skill's shell command)"`
	ToolCalls    string `json:"tool_calls,omitempty" jsonschema:"the event's tool_calls (after a batch of tool calls), as JSON text"`
}

// hookToolArgs is the hook input init writes: every field of the event,
// interpolated by Claude Code.
func hookToolArgs() orderedObject {
	return orderedObject{
		{"hook_event_name", "${hook_event_name}"},
		{"session_id", "${session_id}"},
		{"agent_id", "${agent_id}"},
		{"tool_name", "${tool_name}"},
		{"cwd", "${cwd}"},
		{"tool_input", "${tool_input}"},
		{"tool_response", "${tool_response}"},
		{"tool_use_id", "${tool_use_id}"},
	}
}

// event rebuilds the hook event the fields came from.
func (in *hookToolInput) event() ([]byte, error) {
	ev := map[string]any{
		"hook_event_name": in.Event, "session_id": in.SessionID, "agent_id": in.AgentID,
		"tool_name": in.Tool, "cwd": in.Cwd, "tool_use_id": in.ToolUseID,
	}
	if in.Command != "" {
		ev["command"] = in.Command
	}
	for k, v := range map[string]string{"tool_input": in.ToolInput, "tool_response": in.ToolResponse, "tool_calls": in.ToolCalls} {
		switch {
		case v == "":
		case json.Valid([]byte(v)):
			ev[k] = json.RawMessage(v)
		default:
			ev[k] = v // a string the tool returned
		}
	}
	return json.Marshal(ev)
}

// newHookMCPServer returns the server of "hook --mcp" on e's workspace; the
// work a hook leaves for after its answer (a change's ledger record made
// durable) runs on pending, which the caller waits for before it exits.
func newHookMCPServer(e *env, failOpen bool, pending *sync.WaitGroup) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: hookMCPServer, Version: version()}, nil)
	tool := &mcp.Tool{
		Name: hookToolName,
		Description: "Answers a hook event of the agent's own file tools (editguard init claude-code --hooks --via mcp). " +
			"Its callers are the agent's hooks, never the model.",
	}
	mcp.AddTool(srv, tool, func(ctx context.Context, _ *mcp.CallToolRequest, in hookToolInput) (*mcp.CallToolResult, any, error) {
		event, err := in.event()
		if err != nil {
			return nil, nil, err
		}
		client := in.Client
		if client == "" {
			client = "claude-code"
		}
		var stdout, stderr bytes.Buffer
		var later []func()
		he := &env{root: e.root, sessionName: defaultSession, stdin: bytes.NewReader(event), stdout: &stdout, stderr: &stderr, ws: e.ws, answered: &later}
		args := []string{"--client", client}
		if failOpen {
			args = append(args, "--fail-open")
		}
		if code := report(he, runHook(ctx, he, args)); code != 0 {
			// An error result is a failed hook, which Claude Code lets
			// the tool pass: only for what no answer can be given to.
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(stderr.String())}}}, nil, nil
		}
		if stderr.Len() > 0 {
			fmt.Fprint(e.stderr, stderr.String())
		}
		if len(later) > 0 {
			pending.Add(1)
			go func() {
				defer pending.Done()
				for _, f := range later {
					f()
				}
			}()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(stdout.String())}}}, nil, nil
	})
	return srv
}

// serveHookMCP runs "hook --mcp" on stdin and stdout until the client
// closes them.
func serveHookMCP(ctx context.Context, e *env, failOpen bool) error {
	if _, err := e.workspace(); err != nil {
		return err
	}
	var pending sync.WaitGroup
	defer pending.Wait()
	srv := newHookMCPServer(e, failOpen, &pending)
	return srv.Run(ctx, mcpserver.StdioTransport(e.stdin, e.stdout))
}
