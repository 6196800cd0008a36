package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClaudeCodeHooksViaMCP runs Claude Code with its own Read, Edit and
// Write and editguard's hooks of type mcp_tool, as init --hooks --via mcp
// writes them: the hooks call the tool of "editguard hook --mcp", a server
// Claude Code starts with the session. A Read then an Edit is let through
// and recorded; an Edit of a line a person changed since is denied with
// STALE_FILE and the person's bytes stay; the hook tool is not offered to
// the model. Then, with the server unable to start, the same change goes
// through unguarded: Claude Code lets a tool run when its mcp_tool hook
// cannot be called (what init and the docs say).
func TestClaudeCodeHooksViaMCP(t *testing.T) {
	ws, a := claudeHookProject(t)
	bin := editguardBin(t)
	out, err := exec.Command(bin, "--root", ws, "init", "claude-code", "--hooks", "--via", "mcp").CombinedOutput()
	t.Logf("editguard init claude-code --hooks --via mcp:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(ws, "b.txt")
	script := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{Tool: "Edit", Input: map[string]any{"file_path": a, "old_string": "var X = 1", "new_string": "var X = 2"}},
		{
			Tool:   "Edit",
			Input:  map[string]any{"file_path": a, "old_string": "var X = 2", "new_string": "var X = 3"},
			Before: personChange(a, "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n"),
		},
		{Tool: "Write", Input: map[string]any{"file_path": newFile, "content": "new\n"}},
	}
	start := time.Now()
	run := runClaudeProject(t, ws, true, script)
	t.Logf("the run took %v", time.Since(start))
	for _, r := range run.Results {
		t.Logf("step %d %s: is_error=%v %q", r.Step, r.Tool, r.IsError, truncate(r.Content, 400))
	}
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	t.Logf("offered tools: %v", run.Offered)
	if slices.Contains(run.Offered, "mcp__editguard-hooks__hook") {
		t.Errorf("the model is offered the hooks' tool: %v", run.Offered)
	}
	if run.Results[1].IsError || run.Results[3].IsError {
		t.Errorf("a guarded Edit or Write was refused: %q / %q", run.Results[1].Content, run.Results[3].Content)
	}
	if stale := run.Results[2]; !stale.IsError || !strings.Contains(stale.Content, "STALE_FILE") || !strings.Contains(stale.Content, "reviewed") {
		t.Errorf("the Edit of the line someone changed: is_error=%v %q; want STALE_FILE showing the change", stale.IsError, stale.Content)
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n\nvar X = 2 // reviewed\n\nvar Y = 1\n" {
		t.Errorf("a.go = %q; the person's change must stay", got)
	}
	hookHistory(t, ws, "a.go", "b.txt")

	// The server cannot start: Claude Code runs the Edit anyway.
	mcpJSON := filepath.Join(ws, ".mcp.json")
	data, err := os.ReadFile(mcpJSON)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mcpJSON, []byte(strings.Replace(string(data), bin, filepath.Join(ws, "no-such-editguard"), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := ledgerLines(t, bin, ws)
	down := []Step{
		{Tool: "Read", Input: map[string]any{"file_path": a}},
		{
			Tool:   "Edit",
			Input:  map[string]any{"file_path": a, "old_string": "var Y = 1", "new_string": "var Y = 2"},
			Before: personChange(a, "package a\n\nvar X = 2 // reviewed twice\n\nvar Y = 1\n"),
		},
	}
	run = runClaudeProject(t, ws, true, down)
	for _, r := range run.Results {
		t.Logf("server down: step %d %s: is_error=%v %q", r.Step, r.Tool, r.IsError, truncate(r.Content, 400))
	}
	if len(run.Results) != len(down) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(down))
	}
	if run.Results[1].IsError {
		t.Errorf("with the server down the Edit was refused (%q): Claude Code no longer lets a tool run when its mcp_tool hook cannot be called; update init's note and the docs", run.Results[1].Content)
	}
	if after := ledgerLines(t, bin, ws); after != before {
		t.Errorf("the ledger grew from %d to %d records with the server down: the hook ran after all", before, after)
	}
	t.Logf("with the server down the Edit ran unguarded, as init says: a.go is now %q", mustRead(t, a))
}

// ledgerLines counts the records of ws's ledger.
func ledgerLines(t testing.TB, bin, ws string) int {
	t.Helper()
	out, err := exec.Command(bin, "--root", ws, "log", "--json").Output()
	if err != nil {
		t.Fatalf("editguard log: %v", err)
	}
	return len(ledgerRecords(t, out))
}

func mustRead(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// BenchmarkClaudeCodeHookCost runs Claude Code on one Read and ten Edits
// of a file, with no hooks, with init --hooks (editguard-hook, a process
// per event, handing it to a hook server) and with init --hooks --via mcp
// (the tool of a server Claude Code keeps running), the three in turn
// within each round, and reports each one's median milliseconds per run
// and what the hooks add per Edit over none (each Edit has two events),
// against the Claude Code the suite pins (it logs the version):
//
//	go test -run '^$' -bench ClaudeCodeHookCost -benchtime 5x ./test/clients
func BenchmarkClaudeCodeHookCost(b *testing.B) {
	const edits = 10
	// The Claude Code of the selected pins (package.json here, or
	// previous/ with EDITGUARD_TEST_CLIENTS=previous), said in the log so
	// that the numbers name the version they are of.
	var pkg struct{ Version string }
	if err := json.Unmarshal([]byte(mustRead(b, filepath.Join(nodePackage(b, "@anthropic-ai/claude-code"), "package.json"))), &pkg); err != nil || pkg.Version == "" {
		b.Fatalf("the version of the Claude Code installed: %v", err)
	}
	b.Logf("Claude Code %s", pkg.Version)
	modes := []string{"none", "command", "mcp"}
	ws := map[string]string{}
	for _, mode := range modes {
		dir, _ := claudeHookProject(b)
		switch mode {
		case "command":
			initHooks(b, dir, "claude-code")
		case "mcp":
			if out, err := exec.Command(editguardBin(b), "--root", dir, "init", "claude-code", "--hooks", "--via", "mcp").CombinedOutput(); err != nil {
				b.Fatalf("init --via mcp: %v\n%s", err, out)
			}
		}
		ws[mode] = dir
	}
	took := map[string][]time.Duration{}
	for i := range b.N {
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			a := filepath.Join(ws[mode], "a.go")
			if err := os.WriteFile(a, []byte("package a\n\nvar X = 0\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			script := []Step{{Tool: "Read", Input: map[string]any{"file_path": a}}}
			for k := range edits {
				script = append(script, Step{Tool: "Edit", Input: map[string]any{"file_path": a,
					"old_string": "var X = " + strconv.Itoa(k), "new_string": "var X = " + strconv.Itoa(k+1)}})
			}
			start := time.Now()
			run := runClaudeProject(b, ws[mode], true, script)
			took[mode] = append(took[mode], time.Since(start))
			for _, r := range run.Results {
				if r.IsError {
					b.Fatalf("%s: step %d %s refused: %s", mode, r.Step, r.Tool, r.Content)
				}
			}
		}
	}
	median := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2]) / 1e6
	}
	for _, mode := range modes {
		b.ReportMetric(median(took[mode]), mode+"-ms/run")
	}
	b.ReportMetric((median(took["command"])-median(took["none"]))/edits, "command-ms/edit")
	b.ReportMetric((median(took["mcp"])-median(took["none"]))/edits, "mcp-ms/edit")
}
