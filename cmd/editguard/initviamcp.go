package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What "init claude-code --hooks --via mcp" writes: Claude Code's own file
// tools stay on, and its hooks of type mcp_tool call the tool "hook" of
// "editguard hook --mcp", a server Claude Code starts with the session
// (hookmcp.go). No process starts per event; but Claude Code lets the
// tool run when the hook cannot be called (the server is not connected,
// or the call fails), so it fails open where editguard-hook fails closed.

// hookMCPTool is the hook tool's name to Claude Code, which init denies
// to the model.
const hookMCPTool = "mcp__" + hookMCPServer + "__" + hookToolName

// hookMCPArgs start "editguard hook --mcp" on the directory Claude Code
// starts it in, the project's.
var hookMCPArgs = []string{"--root", ".", "hook", "--mcp"}

var claudeHooksViaMCP = initClient{
	files: []initSpec{
		{path: ".mcp.json", edit: func(f *initFile, text string) (string, error) {
			return editJSON(f, text, func(d *jsonDoc) error {
				return addNamedServerJSON(d, f, hookMCPServer, orderedObject{{"type", "stdio"}, {"command", f.progs.editguard}, {"args", hookMCPArgs}})
			})
		}},
		{path: claudeLocalSettings, shared: claudeSharedSettings, edit: func(f *initFile, text string) (string, error) {
			return editJSON(f, text, func(d *jsonDoc) error {
				for _, h := range f.withTurns(claudeHooks, "claude-code") {
					args := hookToolArgs()
					if evs := skillShellEvents["claude-code"]; h.event == evs[0] || h.event == evs[1] {
						args = append(args, orderedObject{{"command", "${command}"}}...) // the event's own field
					}
					if h.event == hookClients["claude-code"].batch {
						args = append(args, orderedObject{{"tool_calls", "${tool_calls}"}}...)
					}
					handler := orderedObject{{"type", "mcp_tool"}, {"server", hookMCPServer}, {"tool", hookToolName}, {"input", args}}
					if asyncHooks[h.event] {
						handler = append(handler, orderedObject{{"async", true}}...)
					}
					if err := addHookJSON(d, f, h, "claude-code", handler); err != nil {
						return err
					}
				}
				// The tool is the hooks', not the model's: a call of it
				// would record a read the model did not make.
				if err := addStrings(d, f, []string{"permissions", "deny"}, []string{hookMCPTool}); err != nil {
					return err
				}
				if err := addStrings(d, f, []string{"enabledMcpjsonServers"}, []string{hookMCPServer}); err != nil {
					return err
				}
				if n := d.get("disabledMcpjsonServers"); n != nil && n.kind == '[' && containsString(n, hookMCPServer) {
					f.Kept = append(f.Kept, "disabledMcpjsonServers lists "+hookMCPServer+", so Claude Code will not start it and nothing is guarded; remove it there")
				}
				return nil
			})
		}},
	},
	notes: []string{
		"Claude Code calls the hooks on the server " + hookMCPServer + ", which it starts with each session: no process starts per tool call. But when the server is not connected (it failed to start, or stopped) or the call fails, Claude Code lets the tool run unguarded, and only its debug log says so; editguard doctor claude-code checks the server. For hooks that deny the tool when they cannot check it, run init claude-code --hooks without --via mcp.",
		"Claude Code starts the servers of .mcp.json only in a trusted workspace that enables them (enabledMcpjsonServers, in the settings above): run claude here once and accept the trust dialog.",
		"Claude Code reads hooks when it starts: start it again in this project to use them.",
	},
}

// isMCPHook reports whether a hook handler of Claude Code's settings is
// editguard's mcp_tool hook.
func isMCPHook(h map[string]any) bool {
	return h["type"] == "mcp_tool" && h["server"] == hookMCPServer
}

// checkHookMCP starts "editguard hook --mcp" in root as Claude Code does
// and calls its tool with the probe event.
func checkHookMCP(ctx context.Context, root, editguardProg string) *setupCheck {
	line := strings.Join(append([]string{shellQuote(editguardProg)}, quoteAll(hookMCPArgs)...), " ")
	c := &setupCheck{Client: "claude-code", Check: "hook"}
	reply, err := hookMCPProbe(ctx, root, editguardProg)
	switch {
	case err != nil:
		c.Message = fmt.Sprintf("the hook server in .mcp.json (%s, in %s) does not answer a probe: %v; Claude Code lets its own tools run unguarded", line, root, err)
		c.Fix = fmt.Sprintf("run %s in %s to see why, fix it (or run editguard init claude-code --hooks --via mcp again)", line, root)
	case reply.Version != version():
		c.Message = fmt.Sprintf("the hook server in .mcp.json (%s) is editguard %s, and this editguard is %s", line, reply.Version, version())
		c.Fix = installHint + ", then run editguard init claude-code --hooks --via mcp again"
	case !sameDir(reply.Root, root):
		c.Message = fmt.Sprintf("the hook server in .mcp.json (%s) guards %s, not this workspace", line, reply.Root)
		c.Fix = "run editguard init claude-code --hooks --via mcp again"
	default:
		c.OK = true
		c.Message = fmt.Sprintf("the hook server in .mcp.json (%s) answered a probe: editguard %s. It fails open: Claude Code lets a tool run when the server is down", line, reply.Version)
	}
	return c
}

// hookMCPProbe calls the hook tool of "prog hook --mcp", started in root,
// with the probe event, and returns its answer.
func hookMCPProbe(ctx context.Context, root, prog string) (*hookProbeReply, error) {
	ctx, cancel := context.WithTimeout(ctx, setupCheckTimeout)
	defer cancel()
	cmd := exec.Command(prog, hookMCPArgs...)
	cmd.Dir = root
	cmd.WaitDelay = 2 * time.Second
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "editguard-init"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: hookToolName, Arguments: map[string]any{
		"hook_event_name": hookProbeEvent, "session_id": "editguard-probe", "cwd": root,
	}})
	if err != nil {
		return nil, err
	}
	var text string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text += t.Text
		}
	}
	var answer struct {
		Probe *hookProbeReply `json:"editguard_probe"`
	}
	if res.IsError || json.Unmarshal([]byte(text), &answer) != nil || answer.Probe == nil {
		return nil, fmt.Errorf("it answered %q, not editguard's answer to a probe", firstLine(text))
	}
	return answer.Probe, nil
}
