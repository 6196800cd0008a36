package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			// Someone else changes small.go after it was read; the line the
			// edit replaces is still there.
			Before: func() error {
				f, err := os.OpenFile(filepath.Join(ws, "small.go"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				_, err = f.WriteString("// changed on disk by someone else\n")
				if err2 := f.Close(); err == nil {
					err = err2
				}
				return err
			},
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

	paths := []string{"small.go", "big.go", "new.txt", "small.go"}
	for i, r := range run.Results {
		if r.Count != 1 {
			t.Errorf("step %d: %d tool_result blocks, want 1", i, r.Count)
		}
		if !strings.Contains(r.Content, paths[i]) {
			t.Errorf("step %d (%s): result does not mention %s", i, r.Tool, paths[i])
		}
	}
	for i := range 3 {
		if run.Results[i].IsError {
			t.Errorf("step %d (%s): is_error set: %s", i, run.Results[i].Tool, truncate(run.Results[i].Content, 500))
		}
	}
	edit := run.Results[3]
	if !edit.IsError || !strings.Contains(edit.Content, "STALE_FILE") {
		t.Errorf("edit_file after an external change: is_error=%v, want an error with STALE_FILE; got %s", edit.IsError, truncate(edit.Content, 500))
	}
	if got, err := os.ReadFile(filepath.Join(ws, "new.txt")); err != nil || len(got) != 1<<20 {
		t.Errorf("new.txt: %d bytes, err %v; want %d bytes", len(got), err, 1<<20)
	}
}
