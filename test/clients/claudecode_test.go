package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/editguard/editguard/toolset"
)

// smallGo returns a Go file of exactly size bytes whose string literals hold
// quotes and backslashes, the characters a JSON or text rendering of a tool
// result must carry through unchanged.
func smallGo(size int) string {
	var b strings.Builder
	b.WriteString("package small\n\nimport \"fmt\"\n\n")
	b.WriteString("// Greeting is the line the edit replaces.\nconst Greeting = \"hello, \\\"world\\\"\\n\"\n\n")
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, "func f%03d() string { return fmt.Sprintf(\"%%d\\t\\\\ %%q\\n\", %d, `C:\\dir\\%d`) }\n", i, i, i)
	}
	b.WriteString("\nfunc main() { fmt.Print(Greeting) }\n")
	for b.Len() < size-1 {
		b.WriteString("/")
	}
	b.WriteString("\n")
	return b.String()
}

// bigGo returns a Go file of n lines of 41 bytes each.
func bigGo(n int) string {
	var b strings.Builder
	b.WriteString("package big\n\n")
	for i := 3; i <= n; i++ {
		fmt.Fprintf(&b, "var v%05d = \"value %05d, a brown fox\"\n", i, i)
	}
	return b.String()
}

// numberedText returns size bytes of numbered text lines.
func numberedText(size int) string {
	var b strings.Builder
	for i := 1; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %06d the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:size]
}

func TestClaudeCodeSeesToolResults(t *testing.T) {
	ws := t.TempDir()
	small := smallGo(4096)
	big := bigGo(2500)
	if err := os.WriteFile(filepath.Join(ws, "small.go"), []byte(small), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "big.go"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("small.go %d bytes, big.go %d bytes, %d lines", len(small), len(big), strings.Count(big, "\n"))

	const oldLine = "const Greeting = \"hello, \\\"world\\\"\\n\""
	if !strings.Contains(small, oldLine) {
		t.Fatal("small.go lacks the line to edit")
	}
	script := []Step{
		{Tool: "read_file", Input: map[string]any{"path": "small.go"}},
		{Tool: "read_file", Input: map[string]any{"path": "big.go"}},
		{Tool: "write_file", Input: map[string]any{"path": "new.txt", "content": numberedText(1 << 20)}},
		{
			Tool:  "edit_file",
			Input: map[string]any{"path": "small.go", "old_string": oldLine, "new_string": "const Greeting = \"bye\\n\""},
			// Someone else moves the line the edit replaces to the end
			// of small.go after it was read: the edit does not merge.
			Before: func() error { return moveStaleLine(ws) },
		},
		// The error showed the change, and the session's read moved to
		// it: the same edit goes through without another read.
		{Tool: "edit_file", Input: map[string]any{"path": "small.go", "old_string": oldLine, "new_string": "const Greeting = \"bye\\n\""}},
		// Someone else changes another line: an edit elsewhere merges
		// over it in one call.
		{
			Tool:   "edit_file",
			Input:  map[string]any{"path": "small.go", "old_string": "package small\n", "new_string": "package small // merged\n"},
			Before: func() error { return appendLine(ws, "small.go", "// a second change by someone else") },
		},
		// And once more, under apply_patch: its hunk merges the same way.
		{
			Tool:   "apply_patch",
			Input:  map[string]any{"patch": "*** Begin Patch\n*** Update File: small.go\n@@\n-package small // merged\n+package small // merged twice\n*** End Patch\n"},
			Before: func() error { return appendLine(ws, "small.go", "// a third change by someone else") },
		},
	}
	run := runClaudeFull(t, ws, script)
	t.Logf("offered tools: %v", run.Offered)
	for i, r := range run.Requests {
		t.Logf("request %d: %s", i, r)
	}
	for _, r := range run.Results {
		t.Logf("step %d %s: is_error=%v len=%d persisted=%d first 300: %q", r.Step, r.Tool, r.IsError, len(r.Content), len(r.Persisted), truncate(r.Content, 300))
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}

	paths := []string{"small.go", "big.go", "new.txt", "small.go", "small.go", "small.go", "small.go"}
	for i, r := range run.Results {
		if r.Count != 1 {
			t.Errorf("step %d: %d tool_result blocks, want 1", i, r.Count)
		}
		if !strings.Contains(r.Content, paths[i]) {
			t.Errorf("step %d (%s): result does not mention %s", i, r.Tool, paths[i])
		}
	}
	for i, r := range run.Results {
		if r.IsError != (i == 3) {
			t.Errorf("step %d (%s): is_error=%v: %s", i, r.Tool, r.IsError, truncate(r.Content, 500))
		}
		if r.Persisted != "" {
			t.Errorf("step %d (%s): %d characters did not reach the model inline", i, r.Tool, len(r.Content))
		}
	}

	// The 4 KiB file arrives whole, as numbered lines of unescaped text.
	read := run.Results[0].Content
	if got, err := toolset.ReadText(read); err != nil || got != small {
		t.Errorf("read_file small.go: the model did not see the file as it is (%v):\n%s", err, truncate(read, 600))
	}
	if !strings.Contains(read, "\n     6\t"+oldLine+"\n") {
		t.Errorf("read_file small.go: line 6 is not shown numbered and unescaped:\n%s", truncate(read, 600))
	}

	// The 100 KiB file: a first page within the budget, inline, and the
	// offset to read on.
	page := run.Results[1].Content
	if n := utf8.RuneCountInString(page); n > toolset.ReadBudget {
		t.Errorf("read_file big.go: %d characters, over the budget of %d", n, toolset.ReadBudget)
	}
	got, err := toolset.ReadText(page)
	if err != nil || len(got) < 20000 || !strings.HasPrefix(big, got) {
		t.Errorf("read_file big.go: not a whole-line prefix of the file (%d bytes, %v)", len(got), err)
	}
	next := strings.Count(got, "\n") + 1
	if !strings.Contains(page, fmt.Sprintf("call read_file with offset=%d", next)) {
		t.Errorf("read_file big.go: no continuation offset %d in %q", next, page[len(page)-200:])
	}

	// A new 1 MiB file: the answer is a summary and a cut diff.
	if w := run.Results[2].Content; len(w) >= 5000 || !strings.Contains(w, "+18725 -0 lines") {
		t.Errorf("write_file new.txt answered in %d characters, want under 5000 with the line count:\n%s", len(w), truncate(w, 400))
	}

	// STALE_FILE carries the change made on disk.
	edit := run.Results[3]
	if !strings.HasPrefix(edit.Content, "STALE_FILE small.go") || !strings.Contains(edit.Content, "\n+// changed on disk by someone else\n") {
		t.Errorf("edit_file after an external change: want STALE_FILE with the change; got %s", truncate(edit.Content, 800))
	}
	// The merge: one call, the other change shown and kept.
	if m := run.Results[5].Content; !strings.Contains(m, "Merged: ") || !strings.Contains(m, "\n+// a second change by someone else\n") {
		t.Errorf("edit_file over another line's change: want it merged, showing the change; got %s", truncate(m, 800))
	}
	after, err := os.ReadFile(filepath.Join(ws, "small.go"))
	if err != nil || !strings.Contains(string(after), "const Greeting = \"bye\\n\"\n"+staleChange+"\n") ||
		!strings.HasPrefix(string(after), "package small // merged twice\n") ||
		!strings.HasSuffix(string(after), "// a second change by someone else\n// a third change by someone else\n") {
		t.Errorf("small.go after the edits: want every edit and every other change; got %q (%v)", truncate(string(after), 300), err)
	}
	if m := run.Results[6].Content; !strings.Contains(m, "; merged: ") || !strings.Contains(m, "\n+// a third change by someone else\n") {
		t.Errorf("apply_patch over another line's change: want it merged, showing the change; got %s", truncate(m, 800))
	}
	if got, err := os.ReadFile(filepath.Join(ws, "new.txt")); err != nil || len(got) != 1<<20 {
		t.Errorf("new.txt: %d bytes, err %v; want %d bytes", len(got), err, 1<<20)
	}
}

// staleEditLine is the line of smallGo that the scripts of staleScript edit.
const staleEditLine = "const Greeting = \"hello, \\\"world\\\"\\n\""

// staleChange is the line staleScript appends to small.go behind the
// model's back.
const staleChange = "// changed on disk by someone else"

// staleScript reads small.go in ws (a smallGo(4096)), has someone else
// move the line it edits to the end, followed by staleChange, then edits it
// twice: the first edit_file is refused with STALE_FILE (the other change
// touched the line it replaces, so it does not merge), whose diff shows the
// change, and the second, the same edit, goes through, since the refusal
// moved the session's read to the file as it now is.
func staleScript(ws string) []Step {
	edit := map[string]any{"path": "small.go", "old_string": staleEditLine, "new_string": "const Greeting = \"bye\\n\""}
	return []Step{
		{Tool: "read_file", Input: map[string]any{"path": "small.go"}},
		{Tool: "edit_file", Input: edit, Before: func() error { return moveStaleLine(ws) }},
		{Tool: "edit_file", Input: edit},
	}
}

// moveStaleLine moves staleEditLine of small.go in ws to its end, followed
// by staleChange, as someone else's change.
func moveStaleLine(ws string) error {
	p := filepath.Join(ws, "small.go")
	data, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	s := strings.Replace(string(data), staleEditLine+"\n", "", 1)
	return os.WriteFile(p, []byte(s+staleEditLine+"\n"+staleChange+"\n"), 0o644)
}

// appendLine appends line to the file name in ws, as someone else's change.
func appendLine(ws, name, line string) error {
	f, err := os.OpenFile(filepath.Join(ws, name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if err2 := f.Close(); err == nil {
		err = err2
	}
	return err
}

// TestClaudeCodeSeesRecordsAsText checks what the model reads of the small
// records, list_directory, file_info and file_history: their text, one
// line an entry, not the JSON Claude Code shows in place of the text when
// a result has structuredContent (about three times as long for a listing).
func TestClaudeCodeSeesRecordsAsText(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "small.go"), []byte(smallGo(4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := []Step{
		{Tool: "read_file", Input: map[string]any{"path": "small.go"}},
		{Tool: "edit_file", Input: map[string]any{"path": "small.go", "old_string": "package small\n", "new_string": "package small // edited\n"}},
		{Tool: "list_directory", Input: map[string]any{"path": "."}},
		{Tool: "file_info", Input: map[string]any{"path": "small.go"}},
		{Tool: "file_history", Input: map[string]any{"path": "small.go"}},
	}
	run := runClaudeFull(t, ws, script)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	for _, tc := range []struct {
		step int
		want *regexp.Regexp
	}{
		{2, regexp.MustCompile(`^small\.go\t\d+ bytes\n$`)},
		{3, regexp.MustCompile(`^small\.go: file, \d+ bytes, sha256 [0-9a-f]{64}\n$`)},
		{4, regexp.MustCompile(`^v000001\t\S+\tedit_file\t4096 bytes\tsha256 [0-9a-f]{12}\n$`)},
	} {
		r := run.Results[tc.step]
		t.Logf("%s: the model reads %d characters: %q", r.Tool, len(r.Content), r.Content)
		if r.IsError || !tc.want.MatchString(r.Content) {
			t.Errorf("%s: the model reads %q, want text matching %s", r.Tool, r.Content, tc.want)
		}
	}
}
