package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fakeGemini is a Gemini API endpoint (generativelanguage v1beta) on
// loopback that plays a script of tool calls, one per model turn, as
// fakeModel does for the Messages API. The step to play is the number of
// function calls the model already made in the conversation, so a retried
// request gets the same answer.
//
// Gemini CLI offers an MCP tool under the name mcp_SERVER_TOOL, and sends a
// tool result back as a functionResponse part. Its response object is what
// ToolResult holds: Content is response.output, or response.error with
// IsError set, or else the whole response as JSON.
type fakeGemini struct {
	*scriptPlayer
	serverName string
	url        string
}

func startFakeGemini(t testing.TB, serverName string, script []Step) *fakeGemini {
	t.Helper()
	m := &fakeGemini{scriptPlayer: newScriptPlayer(script), serverName: serverName}
	m.url = serveLoopback(t, m)
	return m
}

// geminiCallID names the call of step i.
const geminiCallPrefix = "call_script_"

func geminiCallID(i int) string { return fmt.Sprintf("%s%03d", geminiCallPrefix, i) }

// geminiRequest is the part of a generateContent request the server reads.
type geminiRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []geminiPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

type geminiPart struct {
	Text         string `json:"text,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

func (m *fakeGemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := Request{Method: r.Method, Path: r.URL.Path, BodyBytes: len(body), Role: "side"}
	defer func() { m.record(rec) }()

	// Paths are /v1beta/models/MODEL:METHOD.
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	rec.Model = model
	switch {
	case r.Method == http.MethodPost && method == "countTokens":
		rec.Answer = "count"
		writeJSON(w, map[string]any{"totalTokens": 1000})
		return
	case r.Method == http.MethodPost && (method == "streamGenerateContent" || method == "generateContent"):
		rec.Stream = method == "streamGenerateContent"
	default:
		rec.Answer = "404"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		return
	}

	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.failf("malformed %s body: %v", r.URL.Path, err)
		rec.Answer = "400"
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rec.Messages = len(req.Contents)
	for _, tl := range req.Tools {
		for _, fd := range tl.FunctionDeclarations {
			rec.Tools = append(rec.Tools, fd.Name)
		}
	}
	prefix := "mcp_" + m.serverName + "_"
	main := false
	for _, n := range rec.Tools {
		if strings.HasPrefix(n, prefix) {
			main = true
		}
		// A script of Gemini CLI's own tools (read_file, replace).
		for _, s := range m.script {
			if s.Tool == n {
				main = true
			}
		}
	}
	if !main || !rec.Stream {
		// Side requests (routing, summaries, checks): a short text.
		rec.Answer = "text ok"
		writeGemini(w, rec.Stream, model, nil, "ok")
		return
	}
	rec.Role = "main"
	m.setOffered(rec.Tools)

	step := m.collect(req)
	if step >= len(m.script) {
		rec.Answer = "text done"
		writeGemini(w, true, model, nil, "done")
		return
	}
	s := m.script[step]
	name := ""
	for _, n := range rec.Tools {
		if n == prefix+s.Tool || (n == s.Tool && name == "") {
			name = n // editguard's tool, or failing that a built-in one
		}
	}
	if name == "" {
		m.failf("step %d: tool %q is not offered (looked for %q among %v)", step, s.Tool, prefix+s.Tool, rec.Tools)
		rec.Answer = "text done (tool missing)"
		writeGemini(w, true, model, nil, "done")
		return
	}
	m.before(step)
	input := m.input(step)
	rec.Answer = fmt.Sprintf("functionCall %s (%d bytes args)", name, len(input))
	writeGemini(w, true, model, map[string]any{"id": geminiCallID(step), "name": name, "args": json.RawMessage(input)}, "")
}

// collect records the tool results in the conversation and returns the step
// to play next: the number of function calls the model made. A response is
// matched to its call by id, and failing that to the oldest call of the same
// name that has no response yet.
func (m *fakeGemini) collect(req geminiRequest) int {
	type call struct {
		id, name string
		results  []json.RawMessage
		response []json.RawMessage
	}
	var calls []*call
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if c.Role == "model" && p.FunctionCall != nil {
				calls = append(calls, &call{id: p.FunctionCall.ID, name: p.FunctionCall.Name})
			}
		}
	}
	for _, c := range req.Contents {
		if c.Role == "model" {
			continue
		}
		for _, p := range c.Parts {
			fr := p.FunctionResponse
			if fr == nil {
				continue
			}
			raw, _ := json.Marshal(p)
			var match *call
			for _, cl := range calls {
				if fr.ID != "" && cl.id == fr.ID {
					match = cl
					break
				}
			}
			if match == nil {
				for _, cl := range calls {
					if cl.name == fr.Name && len(cl.results) == 0 {
						match = cl
						break
					}
				}
			}
			if match == nil {
				m.failf("a functionResponse answers no call: %s", truncate(string(raw), 300))
				continue
			}
			match.results = append(match.results, raw)
			match.response = append(match.response, fr.Response)
		}
	}
	for i, cl := range calls {
		if i >= len(m.script) || len(cl.results) == 0 {
			continue
		}
		content, isErr := geminiResultText(cl.response[0])
		m.setResult(ToolResult{
			Step:    i,
			Tool:    cl.name,
			Content: content,
			IsError: isErr,
			Raw:     cl.results[0],
			Count:   len(cl.results),
		})
	}
	return len(calls)
}

// geminiResultText reads a functionResponse's response object: its output,
// or its error, or else the whole object.
func geminiResultText(raw json.RawMessage) (string, bool) {
	var resp map[string]json.RawMessage
	if json.Unmarshal(raw, &resp) != nil {
		return string(raw), false
	}
	var s string
	if out, ok := resp["output"]; ok && json.Unmarshal(out, &s) == nil {
		return s, false
	}
	if e, ok := resp["error"]; ok {
		if json.Unmarshal(e, &s) == nil {
			return s, true
		}
		return string(e), true
	}
	return string(raw), false
}

// writeGemini answers with one model turn holding either a function call or
// a text: as server-sent events for streamGenerateContent, as one JSON object
// for generateContent.
func writeGemini(w http.ResponseWriter, stream bool, model string, call map[string]any, text string) {
	part := map[string]any{"text": text}
	if call != nil {
		part = map[string]any{"functionCall": call}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  model,
	}
	if !stream {
		writeJSON(w, resp)
		return
	}
	b, _ := json.Marshal(resp)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "data: %s\r\n\r\n", b)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Write(buf.Bytes())
}
