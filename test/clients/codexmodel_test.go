package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeCodex is an OpenAI Responses API endpoint (POST /v1/responses,
// streamed) on loopback that plays a script of tool calls, one per model
// turn, as fakeModel does for the Messages API. The step to play is the
// number of the server's own calls (call_id call_script_NNN) already in the
// conversation, so a retried request gets the same answer.
//
// Codex CLI offers an MCP server's tools in a tool of type "namespace"
// named mcp__SERVER, whose tools keep their own names; Offered lists them as
// mcp__SERVER__TOOL. A call names the tool and the namespace. The result
// comes back as a function_call_output item whose output is a string or an
// array of input_text items: ToolResult.Parts are their texts, Content is
// the texts joined by newlines.
type fakeCodex struct {
	*scriptPlayer
	serverName string
	url        string
	seq        atomic.Int64
}

func startFakeCodex(t testing.TB, serverName string, script []Step) *fakeCodex {
	t.Helper()
	m := &fakeCodex{scriptPlayer: newScriptPlayer(script), serverName: serverName}
	m.url = serveLoopback(t, m)
	return m
}

const codexCallPrefix = "call_script_"

func codexCallID(i int) string { return fmt.Sprintf("%s%03d", codexCallPrefix, i) }

// responsesRequest is the part of a Responses API request the server reads.
type responsesRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []struct {
		Type  string `json:"type"`
		Name  string `json:"name"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"tools"`
}

type responsesItem struct {
	Type      string          `json:"type"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Content   json.RawMessage `json:"content"` // of a message
}

func (m *fakeCodex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, BodyBytes: len(body), Role: "side"}
	defer func() { m.record(rec) }()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		rec.Answer = "404"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"not found"}}`)
		return
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.failf("malformed /v1/responses body: %v", err)
		rec.Answer = "400"
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rec.Model, rec.Stream, rec.Messages = req.Model, req.Stream, len(req.Input)
	for _, tl := range req.Tools {
		switch {
		case tl.Type == "namespace":
			for _, sub := range tl.Tools {
				rec.Tools = append(rec.Tools, tl.Name+"__"+sub.Name)
			}
		case tl.Name != "":
			rec.Tools = append(rec.Tools, tl.Name)
		default:
			rec.Tools = append(rec.Tools, tl.Type)
		}
	}
	prefix := "mcp__" + m.serverName + "__"
	main := false
	for _, n := range rec.Tools {
		if strings.HasPrefix(n, prefix) {
			main = true
		}
		// A script of Codex's own tools (apply_patch, exec_command).
		for _, s := range m.script {
			if s.Tool == n {
				main = true
			}
		}
	}
	if !main {
		rec.Answer = "text ok"
		m.write(w, nil, "ok")
		return
	}
	rec.Role = "main"
	m.setOffered(rec.Tools)

	step := m.collect(req)
	if step >= len(m.script) {
		rec.Answer = "text done"
		m.write(w, nil, "done")
		return
	}
	s := m.script[step]
	if builtin := m.builtinCall(req, step); builtin != nil {
		m.before(step)
		rec.Answer = fmt.Sprintf("%s %s", builtin["type"], s.Tool)
		m.write(w, builtin, "")
		return
	}
	// The tool is offered in the namespace mcp__SERVER, or failing that as
	// a function named mcp__SERVER__TOOL.
	namespaced := false
	for _, tl := range req.Tools {
		if tl.Type == "namespace" && tl.Name == strings.TrimSuffix(prefix, "__") {
			for _, sub := range tl.Tools {
				namespaced = namespaced || sub.Name == s.Tool
			}
		}
	}
	if !namespaced && !slices.Contains(rec.Tools, prefix+s.Tool) {
		m.failf("step %d: tool %q is not offered (looked for %q among %v)", step, s.Tool, prefix+s.Tool, rec.Tools)
		rec.Answer = "text done (tool missing)"
		m.write(w, nil, "done")
		return
	}
	m.before(step)
	input := m.input(step)
	item := map[string]any{
		"type":      "function_call",
		"id":        fmt.Sprintf("fc_script_%03d", step),
		"call_id":   codexCallID(step),
		"name":      prefix + s.Tool,
		"arguments": string(input),
	}
	if namespaced {
		item["name"] = s.Tool
		item["namespace"] = strings.TrimSuffix(prefix, "__")
	}
	rec.Answer = fmt.Sprintf("function_call %s%s (%d bytes arguments)", prefix, s.Tool, len(input))
	m.write(w, item, "")
}

// builtinCall returns the call of step when its tool is one of Codex's own:
// a freeform ("custom") tool such as apply_patch gets the step's Input, a
// string, as its input; a function tool gets Input as JSON arguments. It
// returns nil when the step's tool is not offered as a tool of its own.
func (m *fakeCodex) builtinCall(req responsesRequest, step int) map[string]any {
	s := m.script[step]
	if s.Tool == "tool_search" {
		// Codex offers a tool of type tool_search, runs the search itself
		// and answers with a tool_search_output of the tools it loaded.
		return map[string]any{"type": "tool_search_call", "id": fmt.Sprintf("ts_script_%03d", step),
			"call_id": codexCallID(step), "execution": "client", "arguments": s.Input, "status": "completed"}
	}
	for _, tl := range req.Tools {
		if tl.Name != s.Tool {
			continue
		}
		switch tl.Type {
		case "custom":
			in, _ := s.Input.(string)
			return map[string]any{"type": "custom_tool_call", "id": fmt.Sprintf("ctc_script_%03d", step),
				"call_id": codexCallID(step), "name": s.Tool, "input": in, "status": "completed"}
		case "function":
			return map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_script_%03d", step),
				"call_id": codexCallID(step), "name": s.Tool, "arguments": string(m.input(step))}
		}
	}
	return nil
}

// collect records the tool results in the conversation and returns the step
// to play next.
func (m *fakeCodex) collect(req responsesRequest) int {
	calls := map[string]string{} // call_id -> name
	counts := map[string]int{}
	outputs := map[string]json.RawMessage{}
	raws := map[string]json.RawMessage{}
	along := map[string]string{}
	last := "" // the call of the last call or output item
	for _, raw := range req.Input {
		var it responsesItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		if it.Type == "message" && last != "" {
			// A message between a call and the next one: Codex puts a
			// hook's additionalContext between the call and its output.
			for _, p := range codexOutputParts(it.Content) {
				along[last] += p
			}
		}
		if !strings.HasPrefix(it.CallID, codexCallPrefix) {
			continue
		}
		last = it.CallID
		switch it.Type {
		case "tool_search_call":
			calls[it.CallID] = "tool_search"
		case "tool_search_output":
			// The result is the names of the tools the search loaded,
			// one per line, namespaced ones as NAMESPACE__NAME.
			counts[it.CallID]++
			outputs[it.CallID] = toolSearchNames(raw)
			raws[it.CallID] = raw
		case "function_call", "custom_tool_call":
			name := it.Name
			if it.Namespace != "" {
				name = it.Namespace + "__" + it.Name
			}
			calls[it.CallID] = name
		case "function_call_output", "custom_tool_call_output":
			counts[it.CallID]++
			outputs[it.CallID] = it.Output
			raws[it.CallID] = raw
		}
	}
	for i := range m.script {
		id := codexCallID(i)
		out, ok := outputs[id]
		if !ok {
			continue
		}
		parts := codexOutputParts(out)
		m.setResult(ToolResult{
			Step:    i,
			Tool:    calls[id],
			Content: strings.Join(parts, "\n"),
			Parts:   parts,
			Raw:     raws[id],
			Count:   counts[id],
			Along:   along[id],
		})
	}
	return len(calls)
}

// toolSearchNames returns the names of the tools a tool_search_output item
// holds, one per line, as a JSON string.
func toolSearchNames(raw json.RawMessage) json.RawMessage {
	var item struct {
		Tools []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	json.Unmarshal(raw, &item)
	var names []string
	for _, t := range item.Tools {
		if t.Type == "namespace" {
			for _, sub := range t.Tools {
				names = append(names, t.Name+"__"+sub.Name)
			}
			continue
		}
		names = append(names, t.Name)
	}
	out, _ := json.Marshal(strings.Join(names, "\n"))
	return out
}

// codexOutputParts returns the texts of a function_call_output's output: a
// string, or an array of content items.
func codexOutputParts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) != nil {
		return []string{string(raw)}
	}
	var parts []string
	for _, it := range items {
		if it.Type == "input_text" || it.Type == "output_text" || it.Type == "text" {
			parts = append(parts, it.Text)
		}
	}
	return parts
}

// write answers with one response holding either a function call item or
// an assistant message, as server-sent events.
func (m *fakeCodex) write(w http.ResponseWriter, call map[string]any, text string) {
	n := m.seq.Add(1)
	id := fmt.Sprintf("resp_script_%04d", n)
	item := call
	if item == nil {
		item = map[string]any{
			"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_script_%04d", n),
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
		}
	}
	var buf bytes.Buffer
	event := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	event(map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id,
		"usage": map[string]any{
			"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 110,
		},
	}})
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}
