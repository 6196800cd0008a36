package clients

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCodexToolSearchFindsTools runs Codex CLI with a model it knows
// (gpt-5.5), for which it offers MCP tools only behind its tool_search,
// and searches as a model would, in plain words: each search must load
// the editguard tool it names among its first three results, so that a
// model looking for a file tool finds editguard's rather than settling for
// the shell or Codex's own apply_patch; a search naming two tools must
// load both (a search loads every tool it returns, eight here).
func TestCodexToolSearchFindsTools(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	searches := []struct {
		query, want string
		rank        int // at most
	}{
		{"read file", "read_file", 3},
		{"edit file", "edit_file", 3},
		{"list directory", "list_directory", 3},
		{"write file", "write_file", 3},
		{"search text in files", "search_text", 3},
		{"restore previous version of a file", "restore_file", 3},
		{"apply patch to several files", "apply_patch", 3},
		// Two tools in one search: the one a report once found
		// without read_file.
		{"read file edit file", "read_file", 8},
		{"read file edit file", "edit_file", 3},
	}
	var script []Step
	for _, s := range searches {
		script = append(script, Step{Tool: "tool_search", Input: map[string]any{"query": s.query}})
	}
	run := runCodex(t, ws, script, codexOptions{model: "gpt-5.5"})
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool_search results for %d searches", len(run.Results), len(script))
	}
	for i, s := range searches {
		found := strings.Split(run.Results[i].Content, "\n")
		rank := slices.Index(found, "mcp__editguard__"+s.want) + 1
		t.Logf("%q: %s at rank %d of %v", s.query, s.want, rank, found)
		if rank == 0 || rank > s.rank {
			t.Errorf("tool_search %q: %s at rank %d, want it among the first %d: %v", s.query, s.want, rank, s.rank, found)
		}
	}
}
