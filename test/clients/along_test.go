package clients

import (
	"encoding/json"
	"testing"
)

// TestAlongResults checks what the scripted model counts as told to the
// model after a tool result, on a conversation shaped as Claude Code
// 2.1.197 and 2.1.332 send them: a text block beside the result, a
// message of role "system" with a string content, one with text blocks,
// a user message of its own; and nothing from before the result, from
// another tool's result or from after the model's next turn.
func TestAlongResults(t *testing.T) {
	body := `{"messages": [
		{"role": "user", "content": [{"type": "text", "text": "the task"}]},
		{"role": "system", "content": "the environment"},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_script_000", "name": "Read", "input": {}}]},
		{"role": "user", "content": [
			{"type": "tool_result", "tool_use_id": "toolu_script_000", "content": "1\tpackage a"},
			{"type": "text", "text": "beside. "}
		]},
		{"role": "system", "content": "PreToolUse:Edit hook additional context: merged. "},
		{"role": "system", "content": [{"type": "text", "text": "<system-reminder>a reminder</system-reminder> "}]},
		{"role": "user", "content": [{"type": "text", "text": "a user message."}]},
		{"role": "assistant", "content": [
			{"type": "text", "text": "the model's own words"},
			{"type": "tool_use", "id": "toolu_script_001", "name": "Edit", "input": {}},
			{"type": "tool_use", "id": "toolu_other", "name": "Bash", "input": {}}
		]},
		{"role": "user", "content": [
			{"type": "text", "text": "before the results"},
			{"type": "tool_result", "tool_use_id": "toolu_other", "content": "not ours"},
			{"type": "text", "text": "after another tool's result"},
			{"type": "tool_result", "tool_use_id": "toolu_script_001", "content": "ok"},
			{"type": "text", "text": "after ours"}
		]},
		{"role": "assistant", "content": [{"type": "text", "text": "done"}]},
		{"role": "system", "content": "after the model's turn"}
	]}`
	var req messagesRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	got := alongResults(req, toolUsePrefix)
	want := map[string]string{
		"toolu_script_000": "beside. PreToolUse:Edit hook additional context: merged. <system-reminder>a reminder</system-reminder> a user message.",
		"toolu_script_001": "after ours",
	}
	if len(got) != len(want) {
		t.Errorf("alongResults = %q; want %q", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("along %s = %q; want %q", id, got[id], w)
		}
	}
}
