package clients

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkClaudeCodeBashCost runs Claude Code on ten Bash calls, each
// changing one file, in a workspace of 20,000 files, with no hooks and with
// init --hooks (each call between two checkpoints of the hook server),
// the two in turn within each round (the first of a round alternating),
// and reports each one's median milliseconds per run and what the hooks
// add per Bash call over none. A third setup, noop, has the same hook
// events as init --hooks writes run a program that only reads its input
// (cat): what any command hook costs in Claude Code, the floor under
// editguard's. Before the rounds, one run of each warms
// the hook server (its first checkpoint reads every file) and the page
// cache. It is a benchmark, so it runs only when asked:
//
//	go test -run '^$' -bench ClaudeCodeBashCost -benchtime 5x ./test/clients
func BenchmarkClaudeCodeBashCost(b *testing.B) {
	const calls, files = 10, 20000
	modes := []string{"none", "noop", "hooks"}
	ws := map[string]string{}
	for _, mode := range modes {
		dir, err := filepath.EvalSymlinks(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		for i := range files {
			d := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/100))
			if i%100 == 0 {
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.go", i)), []byte(fmt.Sprintf("package d\n\nvar V%d = %d\n", i, i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		settings, _ := json.MarshalIndent(map[string]any{
			"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash"}},
		}, "", "  ")
		os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), settings, 0o644); err != nil {
			b.Fatal(err)
		}
		switch mode {
		case "hooks":
			initHooks(b, dir, "claude-code")
		case "noop":
			noop := []any{map[string]any{"type": "command", "command": "cat >/dev/null"}}
			hooks, _ := json.MarshalIndent(map[string]any{"hooks": map[string]any{
				"PreToolUse":         []any{map[string]any{"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", "hooks": noop}},
				"PostToolUse":        []any{map[string]any{"matcher": "Read|Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", "hooks": noop}},
				"PostToolUseFailure": []any{map[string]any{"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", "hooks": noop}},
				"PostToolBatch":      []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat >/dev/null", "async": true}}}},
			}}, "", "  ")
			if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.local.json"), hooks, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		ws[mode] = dir
	}
	script := func(round int) []Step {
		var s []Step
		for k := range calls {
			s = append(s, Step{Tool: "Bash", Input: map[string]any{
				"command":     "echo " + strconv.Itoa(round*calls+k) + " > out.txt",
				"description": "change a file"}})
		}
		return s
	}
	run := func(mode string, round int) time.Duration {
		start := time.Now()
		r := runClaudeProject(b, ws[mode], true, script(round))
		took := time.Since(start)
		if len(r.Results) != calls {
			dumpRun(b, r)
			b.Fatalf("%s: %d results for %d Bash calls", mode, len(r.Results), calls)
		}
		for _, res := range r.Results {
			if res.IsError {
				b.Fatalf("%s: step %d %s failed: %s", mode, res.Step, res.Tool, res.Content)
			}
		}
		return took
	}
	for _, mode := range modes {
		run(mode, 0)
	}
	b.ResetTimer()
	took := map[string][]time.Duration{}
	for i := range b.N {
		for j := range modes {
			mode := modes[(i+j)%len(modes)]
			took[mode] = append(took[mode], run(mode, i+1))
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
	b.ReportMetric((median(took["hooks"])-median(took["none"]))/calls, "hooks-ms/call")
	b.ReportMetric((median(took["noop"])-median(took["none"]))/calls, "noop-ms/call")
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		b.Logf("load average: %s", load)
	}
}
