package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Step is one turn of a scripted model: it calls the editguard tool Tool
// (editguard's own name, such as "read_file"; the model server maps it to the
// name the client offers, such as "mcp__editguard__read_file") with Input.
// Before, when set, runs once just before the model emits the call, after the
// result of the previous step has reached the model; an error from it fails
// the run.
type Step struct {
	Tool   string
	Input  any
	Before func() error
}

// ToolResult is what the client sent back to the model for one step: the
// result as text, its error flag and the result as sent. For Claude Code,
// the text is the tool_result content (a string content as is, an array
// content as its text blocks concatenated) and the flag its is_error; the
// other clients' model servers say what they put here.
//
// Claude Code 2.1.197 does not pass an MCP result's content through when the
// result also has structuredContent: the model gets the structuredContent
// serialised as JSON, and the text content is dropped.
type ToolResult struct {
	Step    int
	Tool    string // the name the client offered the tool under
	Content string
	IsError bool
	Raw     json.RawMessage
	// Parts are the text parts of the result in order, where the client
	// sends more than one.
	Parts []string
	// Along is the text the client sent after the result and before the
	// model's next turn, in the result's message or in messages of their
	// own of any role (see alongResults); Claude Code puts a hook's
	// additionalContext there.
	Along string
	// Count is how many tool_result blocks answered this step's call; a
	// well-behaved client sends exactly one.
	Count int
	// Persisted is the full output when the client put it in a file and
	// sent the model only a preview with the file's path (Claude Code does
	// this for large MCP results), and empty otherwise.
	Persisted string
}

// Request is one HTTP request the model server received, summarised.
type Request struct {
	Method, Path string
	Beta         string // anthropic-beta header
	Model        string
	Stream       bool
	MaxTokens    int
	Messages     int
	Tools        []string
	Role         string // "main" for the scripted conversation, "side" otherwise
	Answer       string // what the server answered, in brief
	BodyBytes    int
}

func (r Request) String() string {
	tools := strings.Join(r.Tools, ",")
	if len(tools) > 300 {
		tools = tools[:300] + "..."
	}
	return fmt.Sprintf("%s %s role=%s model=%q stream=%v max_tokens=%d messages=%d body=%dB beta=%q answer=%q tools=[%s]",
		r.Method, r.Path, r.Role, r.Model, r.Stream, r.MaxTokens, r.Messages, r.BodyBytes, r.Beta, r.Answer, tools)
}

// toolUseID names the call of step i; the model server recognises its own
// calls in the conversation by this prefix.
const toolUsePrefix = "toolu_script_"

func toolUseID(i int) string { return fmt.Sprintf("%s%03d", toolUsePrefix, i) }

// fakeModel is an Anthropic Messages API endpoint on loopback that plays a
// script of tool calls, one per model turn, and records the tool results the
// client returns. It keeps no per-conversation counter: the step to play is
// the number of its own tool calls already in the conversation, so a retried
// request gets the same answer.
type fakeModel struct {
	*scriptPlayer
	serverName string // MCP server name in the client's configuration
	url        string
}

func startFakeModel(t testing.TB, serverName string, script []Step) *fakeModel {
	t.Helper()
	m := &fakeModel{scriptPlayer: newScriptPlayer(script), serverName: serverName}
	m.url = serveLoopback(t, m)
	return m
}

// serveLoopback serves h on a free loopback port until the test ends and
// returns its base URL.
func serveLoopback(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// scriptPlayer is the state a scripted model server shares across its
// requests, whatever API it speaks: the script, the tool results seen, what
// was offered and what went wrong.
type scriptPlayer struct {
	script []Step

	mu       sync.Mutex
	requests []Request
	results  map[int]ToolResult
	ran      map[int]bool // Before hooks already run
	offered  []string     // tools of the last main request
	errs     []string
}

func newScriptPlayer(script []Step) *scriptPlayer {
	return &scriptPlayer{script: script, results: map[int]ToolResult{}, ran: map[int]bool{}}
}

func (m *scriptPlayer) failf(format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.errs = append(m.errs, fmt.Sprintf(format, args...))
}

func (m *scriptPlayer) record(r Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, r)
}

func (m *scriptPlayer) setOffered(tools []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offered = append([]string(nil), tools...)
}

func (m *scriptPlayer) setResult(r ToolResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results[r.Step] = r
}

// before runs the Before hook of step the first time the step is played.
func (m *scriptPlayer) before(step int) {
	m.mu.Lock()
	first := !m.ran[step]
	m.ran[step] = true
	m.mu.Unlock()
	if s := m.script[step]; first && s.Before != nil {
		if err := s.Before(); err != nil {
			m.failf("step %d: before hook: %v", step, err)
		}
	}
}

// input returns the JSON input of step.
func (m *scriptPlayer) input(step int) []byte {
	input, err := json.Marshal(m.script[step].Input)
	if err != nil {
		m.failf("step %d: input: %v", step, err)
		return []byte("{}")
	}
	return input
}

// Requests returns the requests seen so far.
func (m *scriptPlayer) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Results returns the recorded tool results in step order.
func (m *scriptPlayer) Results() []ToolResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ToolResult
	for _, r := range m.results {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out
}

// Errors returns what went wrong on the server side (unknown tools, failing
// hooks, malformed requests).
func (m *scriptPlayer) Errors() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.errs...)
}

// Offered returns the tool names of the last scripted-conversation request.
func (m *scriptPlayer) Offered() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.offered...)
}

// messagesRequest is the part of a Messages API request the server reads.
type messagesRequest struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Text      string          `json:"text"`
}

// blocks decodes a message content, which is a string or an array of blocks.
func blocks(raw json.RawMessage) []json.RawMessage {
	var arr []json.RawMessage
	if json.Unmarshal(raw, &arr) == nil {
		return arr
	}
	return nil
}

// resultText flattens a tool_result content the way a model reads it: a
// string as is, an array as its text blocks in order.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, blk := range blocks(raw) {
		var c contentBlock
		if json.Unmarshal(blk, &c) == nil && c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (m *fakeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, Beta: r.Header.Get("anthropic-beta"), BodyBytes: len(body), Role: "side"}
	defer func() { m.record(rec) }()

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		rec.Answer = "count"
		writeJSON(w, map[string]any{"input_tokens": 1000})
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	case r.Method == http.MethodHead || r.URL.Path == "/" || r.URL.Path == "":
		rec.Answer = "200"
		w.WriteHeader(http.StatusOK)
		return
	default:
		rec.Answer = "404"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`)
		return
	}

	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.failf("malformed /v1/messages body: %v", err)
		rec.Answer = "400"
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rec.Model, rec.Stream, rec.MaxTokens, rec.Messages = req.Model, req.Stream, req.MaxTokens, len(req.Messages)
	for _, tl := range req.Tools {
		rec.Tools = append(rec.Tools, tl.Name)
	}
	prefix := "mcp__" + m.serverName + "__"
	main := false
	for _, n := range rec.Tools {
		if strings.HasPrefix(n, prefix) {
			main = true
		}
		// A script of the client's own tools (Claude Code's Read, Edit).
		for _, s := range m.script {
			if s.Tool == n {
				main = true
			}
		}
	}
	if !main {
		// Side requests (titles, quota probes, summaries): a short text.
		rec.Answer = "text ok"
		writeMessage(w, req, nil, "ok")
		return
	}
	rec.Role = "main"
	m.setOffered(rec.Tools)

	step := m.collect(req)
	if step >= len(m.script) {
		rec.Answer = "text done"
		writeMessage(w, req, nil, "done")
		return
	}
	s := m.script[step]
	name := offeredName(rec.Tools, prefix, s.Tool)
	if name == "" {
		m.failf("step %d: tool %q is not offered (looked for %q among %v)", step, s.Tool, prefix+s.Tool, rec.Tools)
		rec.Answer = "text done (tool missing)"
		writeMessage(w, req, nil, "done")
		return
	}
	m.before(step)
	input := m.input(step)
	rec.Answer = fmt.Sprintf("tool_use %s (%d bytes input)", name, len(input))
	writeMessage(w, req, &toolCall{id: toolUseID(step), name: name, input: input}, "")
}

// offeredName returns the name under which the client offers the MCP tool
// tool: "mcp__SERVER__TOOL" in Claude Code, or failing that the one offered
// name that ends in "__TOOL" and holds the server name.
func offeredName(offered []string, prefix, tool string) string {
	var loose []string
	for _, n := range offered {
		if n == prefix+tool {
			return n
		}
	}
	if slices.Contains(offered, tool) {
		return tool // a built-in tool, such as Claude Code's Read
	}
	for _, n := range offered {
		if strings.HasSuffix(n, "__"+tool) && strings.Contains(n, strings.Trim(prefix, "_")) {
			loose = append(loose, n)
		}
	}
	if len(loose) == 1 {
		return loose[0]
	}
	return ""
}

// collect records the tool results in the conversation and returns the step
// to play next: the number of the server's own calls already made.
func (m *fakeModel) collect(req messagesRequest) int {
	calls := map[string]string{} // id -> name
	counts := map[string]int{}
	results := map[string]contentBlock{}
	raws := map[string]json.RawMessage{}
	for _, msg := range req.Messages {
		for _, raw := range blocks(msg.Content) {
			var c contentBlock
			if json.Unmarshal(raw, &c) != nil {
				continue
			}
			switch {
			case msg.Role == "assistant" && c.Type == "tool_use" && strings.HasPrefix(c.ID, toolUsePrefix):
				calls[c.ID] = c.Name
			case msg.Role == "user" && c.Type == "tool_result" && strings.HasPrefix(c.ToolUseID, toolUsePrefix):
				counts[c.ToolUseID]++
				results[c.ToolUseID] = c
				raws[c.ToolUseID] = raw
			}
		}
	}
	along := alongResults(req, toolUsePrefix)
	for i := range m.script {
		id := toolUseID(i)
		c, ok := results[id]
		if !ok {
			continue
		}
		m.setResult(ToolResult{
			Step:    i,
			Tool:    calls[id],
			Content: resultText(c.Content),
			IsError: c.IsError,
			Raw:     raws[id],
			Count:   counts[id],
			Along:   along[id],
		})
	}
	return len(calls)
}

// alongResults returns, by tool_use id (of those with prefix), all the
// text the model was given after that tool result and before its own next
// turn: the text blocks after the result in the same message, and every
// message that follows, whatever its role, up to the next assistant
// message. Claude Code 2.1.197 puts a hook's additionalContext in a text
// block beside the result; 2.1.332 sends it, and a hook's error about a
// call that still ran, as a message of role "system" of its own (a string
// or text blocks, some of them <system-reminder> blocks). The model reads
// all of these, so all of them are what it was told about the call.
func alongResults(req messagesRequest, prefix string) map[string]string {
	along := map[string]string{}
	last := "" // our last tool_result since the last assistant message
	for _, msg := range req.Messages {
		if msg.Role == "assistant" {
			last = ""
			continue
		}
		var s string
		if json.Unmarshal(msg.Content, &s) == nil {
			if last != "" {
				along[last] += s
			}
			continue
		}
		for _, raw := range blocks(msg.Content) {
			var c contentBlock
			if json.Unmarshal(raw, &c) != nil {
				continue
			}
			switch {
			case c.Type == "tool_result" && strings.HasPrefix(c.ToolUseID, prefix):
				last = c.ToolUseID
			case c.Type == "tool_result":
				last = "" // what follows is about another tool's result
			case c.Type == "text" && last != "":
				along[last] += c.Text
			}
		}
	}
	return along
}

type toolCall struct {
	id, name string
	input    []byte
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

var msgSeq struct {
	sync.Mutex
	n int
}

func nextMsgID() string {
	msgSeq.Lock()
	defer msgSeq.Unlock()
	msgSeq.n++
	return fmt.Sprintf("msg_script_%04d", msgSeq.n)
}

// writeMessage answers with one assistant message holding either a tool call
// or a text, streamed as server-sent events when the request asked for a
// stream and as one JSON object otherwise.
func writeMessage(w http.ResponseWriter, req messagesRequest, call *toolCall, text string) {
	model := req.Model
	if model == "" {
		model = "claude-scripted"
	}
	stop := "end_turn"
	if call != nil {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	id := nextMsgID()

	if !req.Stream {
		var content []any
		if call != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": call.id, "name": call.name, "input": json.RawMessage(call.input)})
		} else {
			content = append(content, map[string]any{"type": "text", "text": text})
		}
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	event := func(typ string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", typ, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	if call != nil {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": call.id, "name": call.name, "input": map[string]any{}}})
		// Large inputs arrive in pieces, as from the real API.
		const chunk = 64 << 10
		in := string(call.input)
		for len(in) > 0 {
			n := min(chunk, len(in))
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": in[:n]}})
			in = in[n:]
		}
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
	w.Write(buf.Bytes())
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
