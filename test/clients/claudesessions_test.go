package clients

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// subagentMarker starts the prompt a scripted main agent gives the
// subagent it starts.
const subagentMarker = "SUBAGENT:"

// agentsModel is an Anthropic Messages API endpoint that plays one script
// to the main conversation and another to a subagent's, which it tells
// apart by subagentMarker in the conversation's first message. A step to
// play is the number of tool calls already in the conversation; Claude
// Code's own side requests (no tools offered) get a short text.
type agentsModel struct {
	main, sub []Step

	mu      sync.Mutex
	results map[string]ToolResult // by tool_use id
}

func (m *agentsModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/messages" {
		writeJSON(w, map[string]any{"input_tokens": 1000})
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil || len(req.Tools) == 0 || len(req.Messages) == 0 {
		writeMessage(w, req, nil, "ok")
		return
	}
	script, prefix := m.main, "toolu_main_"
	if strings.Contains(firstText(req.Messages[0].Content), subagentMarker) {
		script, prefix = m.sub, "toolu_sub_"
	}
	calls := 0
	along := alongResults(req, "toolu_")
	for _, msg := range req.Messages {
		for _, raw := range blocks(msg.Content) {
			var c contentBlock
			json.Unmarshal(raw, &c)
			switch {
			case msg.Role == "assistant" && c.Type == "tool_use":
				calls++
			case c.Type == "tool_result":
				m.mu.Lock()
				m.results[c.ToolUseID] = ToolResult{Content: resultText(c.Content), IsError: c.IsError, Raw: raw, Along: along[c.ToolUseID]}
				m.mu.Unlock()
			}
		}
	}
	if calls >= len(script) {
		writeMessage(w, req, nil, "done")
		return
	}
	s := script[calls]
	input, _ := json.Marshal(s.Input)
	writeMessage(w, req, &toolCall{id: fmt.Sprintf("%s%03d", prefix, calls), name: s.Tool, input: input}, "")
}

// result returns the tool result of step i of the main script, or of the
// subagent's when sub is set.
func (m *agentsModel) result(sub bool, i int) ToolResult {
	prefix := "toolu_main_"
	if sub {
		prefix = "toolu_sub_"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.results[fmt.Sprintf("%s%03d", prefix, i)]
}

// firstText returns the text of a message content.
func firstText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, blk := range blocks(raw) {
		var c contentBlock
		if json.Unmarshal(blk, &c) == nil {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// hookedClaudeProject makes ws a project whose settings allow Claude Code's
// Read, Edit and Write and run editguard's hooks, as init --hooks writes
// them.
func hookedClaudeProject(t testing.TB, ws string) {
	t.Helper()
	settings, _ := json.Marshal(map[string]any{"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write"}}})
	if err := os.MkdirAll(filepath.Join(ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "claude-code")
}

// streamSessionID returns the session_id of the result event of Claude
// Code's stream-json output.
func streamSessionID(t testing.TB, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "result" && ev.SessionID != "" {
			return ev.SessionID
		}
	}
	t.Fatalf("no session_id in the output:\n%s", truncate(stdout, 4000))
	return ""
}

// editguardSessions returns the names of the sessions editguard keeps in ws
// (each holds its baselines in sessions/<name>.b/).
func editguardSessions(t testing.TB, ws string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(ws, ".editguard", "sessions"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".b"); ok && e.IsDir() {
			names = append(names, n)
		}
	}
	return names
}

// TestClaudeCodeSubagentSession: Claude Code sends a subagent's hook
// events with its parent's session_id and the subagent's own agent_id, and
// editguard gives the subagent a session of its own: the main agent reads
// a.go, a subagent (the Agent tool) edits it before and after reading it
// itself, and the ledger records the edit under claude-SESSION-AGENT.
//
// A subagent must read a file itself before its Edit. Claude Code 2.1.332
// runs the PreToolUse hook before its own check of that, so the model sees
// editguard's NOT_READ, with its hint in Claude Code's words, and the
// ledger records that refusal under the subagent's session too: the main
// agent's Read did not count for it. Claude Code 2.1.197 (the previous
// pins) checks first and refuses with its own error, and the hook never
// sees that Edit.
func TestClaudeCodeSubagentSession(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hookedClaudeProject(t, ws)
	edit := Step{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var X = 1", "new_string": "var X = 2"}}
	model := &agentsModel{
		main: []Step{
			{Tool: "Read", Input: map[string]any{"file_path": a}},
			{Tool: "Agent", Input: map[string]any{"description": "edit a.go", "prompt": subagentMarker + " edit a.go", "subagent_type": "general-purpose"}},
		},
		sub:     []Step{edit, {Tool: "Read", Input: map[string]any{"file_path": a}}, edit},
		results: map[string]ToolResult{},
	}
	stdout, stderr, err := runClaudeIn(t, ws, claudeHome(t, ws, true), serveLoopback(t, model))
	if err != nil {
		t.Fatalf("claude: %v\n%s\n%s", err, truncate(stdout, 4000), truncate(stderr, 4000))
	}
	session := streamSessionID(t, stdout)
	for i := range model.sub {
		r := model.result(true, i)
		t.Logf("subagent step %d: error=%v %q along %q", i, r.IsError, truncate(r.Content, 200), truncate(r.Along, 200))
	}
	first := model.result(true, 0)
	t.Logf("the subagent's first Edit: %q", first.Content)
	if previousClients() {
		if !first.IsError || !strings.Contains(first.Content, "has not been read") || strings.Contains(first.Content, "NOT_READ") {
			t.Errorf("the subagent's Edit before its own Read: %+v; want Claude Code's refusal", first)
		}
	} else {
		want := []string{"PreToolUse:Edit hook error: NOT_READ " + a + ": file exists but has not been read in this session", "hint: Read " + a + " first, then redo the change"}
		for _, w := range want {
			if !first.IsError || !strings.Contains(first.Content, w) {
				t.Errorf("the subagent's Edit before its own Read: error=%v %q; want editguard's NOT_READ with %q", first.IsError, first.Content, w)
			}
		}
	}
	if r := model.result(true, 2); r.IsError {
		t.Errorf("the subagent's Edit after its Read was refused: %q", r.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nvar X = 2\n" {
		t.Errorf("a.go = %q after the subagent's Edit", got)
	}
	names := editguardSessions(t, ws)
	t.Logf("editguard sessions: %v", names)
	var sub string
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "claude-"+session+"-"); ok && rest != "" {
			sub = n
		}
	}
	if !slices.Contains(names, "claude-"+session) || sub == "" || len(names) != 2 {
		t.Fatalf("editguard sessions %v; want claude-%s and one for the subagent under it", names, session)
	}
	out, err := exec.Command(editguardBin(t), "--root", ws, "log", "--json").Output()
	if err != nil {
		t.Fatalf("editguard log: %v", err)
	}
	var edits []string
	for _, line := range ledgerRecords(t, out) {
		var rec struct {
			Session, Tool, Outcome string
			ErrorCode              string `json:"error_code"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Tool == "hook:Edit" {
			edits = append(edits, strings.TrimSpace(rec.Session+" "+rec.Outcome+" "+rec.ErrorCode))
		}
	}
	slices.Reverse(edits) // log prints the newest first
	want := []string{sub + " error NOT_READ", sub + " ok"}
	if previousClients() {
		want = want[1:]
	}
	if !slices.Equal(edits, want) {
		t.Errorf("editguard log records the Edits %q; want %q", edits, want)
	}
}

// TestClaudeCodeResumeSession: Claude Code (2.1.197 and 2.1.332) keeps the session_id
// of a conversation resumed with --resume or --continue, so editguard's
// session and its reads go on: a Read in one run lets an Edit through in
// the resumed runs.
func TestClaudeCodeResumeSession(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(ws, "a.go")
	if err := os.WriteFile(a, []byte("package a\n\nvar X = 1\n\nvar Y = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hookedClaudeProject(t, ws)
	home := claudeHome(t, ws, true)
	read := Step{Tool: "Read", Input: map[string]any{"file_path": a}}
	editX := Step{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var X = 1", "new_string": "var X = 2"}}
	editY := Step{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var Y = 1", "new_string": "var Y = 2"}}
	// Each run's model server plays the whole conversation so far: it
	// picks up at the number of calls already in it.
	var first string
	for i, run := range []struct {
		script []Step
		args   []string
	}{
		{[]Step{read}, nil},
		{[]Step{read, editX}, []string{"--resume", ""}},
		{[]Step{read, editX, editY}, []string{"--continue"}},
	} {
		if len(run.args) == 2 {
			run.args[1] = first
		}
		model := startFakeModel(t, "editguard", run.script)
		stdout, stderr, err := runClaudeIn(t, ws, home, model.url, run.args...)
		if err != nil {
			t.Fatalf("run %d: claude: %v\n%s\n%s", i, err, truncate(stdout, 4000), truncate(stderr, 4000))
		}
		session := streamSessionID(t, stdout)
		if i == 0 {
			first = session
		}
		if session != first {
			t.Errorf("run %d (%v): session_id %s, want %s", i, run.args, session, first)
		}
		results := model.Results()
		if len(results) == 0 {
			t.Fatalf("run %d: no tool result", i)
		}
		if r := results[len(results)-1]; r.Step != len(run.script)-1 || r.IsError {
			t.Errorf("run %d (%v): step %d %s: error=%v %q", i, run.args, r.Step, r.Tool, r.IsError, r.Content)
		}
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nvar X = 2\n\nvar Y = 2\n" {
		t.Errorf("a.go = %q after the resumed Edits", got)
	}
	if names := editguardSessions(t, ws); len(names) != 1 || names[0] != "claude-"+first {
		t.Errorf("editguard sessions %v; want claude-%s alone", names, first)
	}
}
