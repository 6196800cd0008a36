package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/editguard/editguard"
)

// What a client's tool showed the model.
//
// The hook after a read tool counts as read what the tool showed the model
// (editguard.Session.ReadShown), taken from the event's tool_response, not
// what the file holds when the hook runs: a person's save between the two
// is then not taken for what the model read.

// claudeShown returns what Claude Code's Read showed, from its
// tool_response, or nil when the response holds no text to compare (an
// image, a PDF, a notebook, or a shape not known). Claude Code 2.1's
// response of a text file is
//
//	{"type": "text", "file": {"filePath": ..., "content": ..., "numLines": N,
//	 "startLine": S, "totalLines": T}}
//
// content being lines S to S+N-1 joined by "\n" (older versions numbered
// them, "     1→line", as the model sees them); and, for a file unchanged
// since the model's last Read of it, {"type": "file_unchanged"}.
func claudeShown(raw json.RawMessage) *editguard.ShownRead {
	var resp struct {
		Type string `json:"type"`
		File *struct {
			Content    *string `json:"content"`
			StartLine  int     `json:"startLine"`
			TotalLines int     `json:"totalLines"`
		} `json:"file"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &resp) != nil {
		return nil
	}
	switch {
	case resp.Type == "file_unchanged":
		return &editguard.ShownRead{Unchanged: true}
	case resp.Type != "text" || resp.File == nil || resp.File.Content == nil || resp.File.StartLine < 0 || resp.File.TotalLines < 0:
		return nil
	}
	start := max(resp.File.StartLine, 1)
	return &editguard.ShownRead{
		Text:         unnumbered(*resp.File.Content, start),
		Offset:       start,
		TotalLines:   resp.File.TotalLines,
		MaxLineChars: readLines,
	}
}

// unnumbered returns text without the line numbers a tool put before its
// lines, "N→" or "N\t" after spaces, the first numbered start: only when
// every line has its number is text taken as numbered.
func unnumbered(text string, start int) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		rest := strings.TrimLeft(l, " ")
		num := strconv.Itoa(start + i)
		rest, ok := strings.CutPrefix(rest, num)
		if !ok {
			return text
		}
		if r, ok := strings.CutPrefix(rest, "→"); ok {
			lines[i] = r
		} else if r, ok := strings.CutPrefix(rest, "\t"); ok {
			lines[i] = r
		} else {
			return text
		}
	}
	return strings.Join(lines, "\n")
}

// Gemini CLI's read_file answers the model with the lines it read, after a
// header when it read some only, and with a subdirectory's GEMINI.md after
// them when it found one (Gemini CLI 0.56, packages/core/src/tools/
// read-file.ts and jit-context.ts).
const (
	geminiCutHeader  = "\nIMPORTANT: The file content has been truncated.\nStatus: Showing lines "
	geminiCutContent = "\n--- FILE CONTENT (truncated) ---\n"
	geminiJITPrefix  = "\n\n--- Newly Discovered Project Context ---\n"
	geminiJITSuffix  = "\n--- End Project Context ---"
)

// geminiShown returns what Gemini CLI's read_file showed, from its
// tool_response's llmContent, or nil when that holds no text to compare.
func geminiShown(raw json.RawMessage) *editguard.ShownRead {
	var resp struct {
		LLMContent *string `json:"llmContent"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &resp) != nil || resp.LLMContent == nil {
		return nil
	}
	text := *resp.LLMContent
	if strings.HasSuffix(text, geminiJITSuffix) {
		if i := strings.LastIndex(text, geminiJITPrefix); i >= 0 {
			text = text[:i]
		}
	}
	rest, cut := strings.CutPrefix(text, geminiCutHeader)
	if !cut {
		// Every line, none shortened.
		return &editguard.ShownRead{Text: text, Offset: 1, TotalLines: strings.Count(text, "\n") + 1, MaxLineChars: readLines}
	}
	// "A-B of N total lines.\n...\n--- FILE CONTENT (truncated) ---\nLINES"
	var first, last, total int
	if _, err := fmt.Sscanf(rest, "%d-%d of %d total lines.", &first, &last, &total); err != nil || first < 1 {
		return nil
	}
	i := strings.Index(rest, geminiCutContent)
	if i < 0 {
		return nil
	}
	return &editguard.ShownRead{Text: rest[i+len(geminiCutContent):], Offset: first, TotalLines: total, MaxLineChars: readLines}
}

// shellShown is, per client, how much of a shell command's output the
// client shows the model: a command whose output is longer shows part of
// it, so a read command's files are only partly read.
var shellShown = map[string]struct {
	limit   int
	measure func(string) int
}{
	// Claude Code 2.1 (BASH_MAX_OUTPUT_DEFAULT in utils/shell/
	// outputLimits.ts, also the size past which a result is saved to a
	// file and the model shown a preview): 30,000 characters, counted as
	// JavaScript does (UTF-16 code units).
	"claude-code": {30_000, utf16Len},
	// Gemini CLI 0.56 (DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD in
	// packages/core/src/config/config.ts, applied to run_shell_command's
	// output in scheduler/tool-executor.ts): 40,000 characters, less when
	// the context window is nearly full, which the hook cannot know.
	"gemini": {40_000, utf16Len},
	// Codex 0.169: 10,000 tokens of its truncation policy, estimated at
	// 4 bytes a token (less when the model asks exec_command for fewer
	// with max_output_tokens).
	"codex": {40_000, func(s string) int { return len(s) }},
}

// utf16Len is the length of s in UTF-16 code units, as a JavaScript
// string's length counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s { // a byte that is not UTF-8 is one U+FFFD
		n++
		if r > 0xFFFF {
			n++ // a surrogate pair
		}
	}
	return n
}
