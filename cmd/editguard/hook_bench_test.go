package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkHook measures "editguard hook" as a client runs it: one process
// per event, a Claude Code event on standard input, a 4 KiB file. Each
// sub-benchmark reports the median and 90th percentile of the wall time
// from starting the process to its exit (p50-ms, p90-ms):
//
//   - hello: a Go program that prints one line, the floor of any Go
//     program's start on this machine;
//   - version: editguard version, which opens no workspace;
//   - Read: the event after a Read (the read is recorded);
//   - Edit: the events around an Edit: before it (pre-p50-ms: the check
//     and the history snapshot), then the tool's change (not timed), then
//     after it (post-p50-ms: the ledger record and the new read).
//
// Each editguard case runs twice: with the binary go build makes here
// ("default": with cgo where there is a C compiler, a dynamically linked
// program) and with CGO_ENABLED=0 ("static"), which starts sooner.
//
// Run it with
//
//	go test -run '^$' -bench BenchmarkHook -benchtime 200x ./cmd/editguard
func BenchmarkHook(b *testing.B) {
	dir := b.TempDir()
	bins := map[string]string{"default": filepath.Join(dir, "editguard"), "static": filepath.Join(dir, "editguard-static")}
	for name, bin := range bins {
		cmd := exec.Command("go", "build", "-o", bin, ".")
		if name == "static" {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build (%s): %v\n%s", name, err, out)
		}
	}
	hello := filepath.Join(dir, "hello")
	src := filepath.Join(dir, "hello.go")
	os.WriteFile(src, []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644)
	build := exec.Command("go", "build", "-o", hello, src)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}

	ws := filepath.Join(dir, "ws")
	os.Mkdir(ws, 0o755)
	a := filepath.Join(ws, "a.go")
	content := func(i int) []byte {
		line := strings.Repeat("x", 58)
		var buf bytes.Buffer
		for buf.Len() < 4096-64 {
			buf.WriteString("// " + line + "\n")
		}
		buf.WriteString(strings.Repeat(string(rune('a'+i%2)), 4096-buf.Len()-1) + "\n")
		return buf.Bytes()
	}
	if err := os.WriteFile(a, content(0), 0o644); err != nil {
		b.Fatal(err)
	}
	event := func(name, tool string) []byte {
		ev, _ := json.Marshal(map[string]any{
			"session_id": "5c2e0b7e-bench", "transcript_path": filepath.Join(dir, "t.jsonl"), "cwd": ws,
			"permission_mode": "default", "hook_event_name": name, "tool_name": tool,
			"tool_input": map[string]any{"file_path": a, "old_string": "x", "new_string": "y"},
		})
		return ev
	}
	run := func(b *testing.B, stdin []byte, args ...string) time.Duration {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdin = bytes.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start)
		if err != nil || bytes.Contains(out.Bytes(), []byte("deny")) {
			b.Fatalf("%v: %v %s", args, err, out.Bytes())
		}
		return d
	}
	simple := func(name string, stdin []byte, args ...string) {
		b.Run(name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				ds = append(ds, run(b, stdin, args...))
			}
			reportTimes(b, "", ds)
		})
	}
	simple("hello", nil, hello)
	for _, build := range []string{"default", "static"} {
		bin := bins[build]
		hook := []string{bin, "--root", ws, "hook"}
		simple(build+"/version", nil, bin, "version")
		simple(build+"/Read", event("PostToolUse", "Read"), hook...)
		b.Run(build+"/Edit", func(b *testing.B) {
			run(b, event("PostToolUse", "Read"), hook...) // the read the edits need
			var pre, post []time.Duration
			i := 0
			for b.Loop() {
				pre = append(pre, run(b, event("PreToolUse", "Edit"), hook...))
				i++
				if err := os.WriteFile(a, content(i), 0o644); err != nil {
					b.Fatal(err)
				}
				post = append(post, run(b, event("PostToolUse", "Edit"), hook...))
			}
			reportTimes(b, "pre-", pre)
			reportTimes(b, "post-", post)
		})
	}
}

// reportTimes adds the median and 90th percentile of ds, in milliseconds.
func reportTimes(b *testing.B, prefix string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), prefix+"p50-ms")
	b.ReportMetric(ms(ds[len(ds)*9/10]), prefix+"p90-ms")
}
