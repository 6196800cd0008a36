package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/hookwire"
)

// BenchmarkHook measures "editguard hook" as a client runs it: one process
// per event, a Claude Code event on standard input, a 4 KiB file. The
// time is the wall time from starting the process to its exit.
//
// Each iteration runs every program once, in turn, so that a machine
// whose speed drifts (other work on it) slows them alike:
//
//   - hello: a Go program that prints one line, the floor of any Go
//     program's start on this machine;
//   - default: editguard as go build makes it here (with cgo where there
//     is a C compiler: net and os/user, which dependencies import, then
//     make it a dynamically linked program);
//   - static: editguard built with CGO_ENABLED=0;
//   - baseline: the editguard binary named by $EDITGUARD_HOOK_BASELINE,
//     if set (an older build, to compare with);
//   - fast: editguard-hook, as go build makes it, next to the default
//     editguard, with its hook server started before the timing (see
//     internal/hookwire). It has no version sub-benchmark.
//
// The sub-benchmarks are version (editguard version: start and exit,
// no workspace), Bash (the event before a tool that is not a file tool:
// nothing to check, so for editguard-hook the round trip to its server),
// Read (the event after a Read: the read is recorded) and
// Edit (the event before an Edit: the check and the history snapshot; then
// the tool's change, not timed; then the event after it: the ledger record
// and the new read). Each reports the median and 90th percentile of every
// program, in milliseconds (static-p50-ms, ...; for Edit, static-pre-p50-ms
// and static-post-p50-ms); ns/op is a whole round of programs.
//
// Run it with
//
//	go test -run '^$' -bench BenchmarkHook -benchtime 200x ./cmd/editguard
func BenchmarkHook(b *testing.B) {
	dir := b.TempDir()
	type program struct {
		name string
		bin  string
	}
	progs := []program{{"default", filepath.Join(dir, "editguard")}, {"static", filepath.Join(dir, "editguard-static")}}
	for _, p := range progs {
		cmd := exec.Command("go", "build", "-o", p.bin, ".")
		if p.name == "static" {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build (%s): %v\n%s", p.name, err, out)
		}
	}
	if bin := os.Getenv("EDITGUARD_HOOK_BASELINE"); bin != "" {
		progs = append(progs, program{"baseline", bin})
	}
	fast := program{"fast", filepath.Join(dir, "editguard-hook")}
	if out, err := exec.Command("go", "build", "-o", fast.bin, "../editguard-hook").CombinedOutput(); err != nil {
		b.Fatalf("go build editguard-hook: %v\n%s", err, out)
	}
	progs = append(progs, fast)
	rundir := b.TempDir()
	b.Setenv("XDG_RUNTIME_DIR", rundir)
	defer func() {
		locks, _ := filepath.Glob(filepath.Join(rundir, "editguard", "*.lock"))
		for _, l := range locks {
			data, _ := os.ReadFile(l)
			if pid, _ := strconv.Atoi(strings.TrimSpace(string(data))); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}()
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
		var buf bytes.Buffer
		for buf.Len() < 4096-64 {
			buf.WriteString("// " + strings.Repeat("x", 58) + "\n")
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
	hook := func(p program) []string {
		if p.name == "fast" {
			return []string{p.bin, "--root", ws}
		}
		return []string{p.bin, "--root", ws, "hook"}
	}
	// The first event starts the hook server; wait for it.
	run(b, event("PostToolUse", "Read"), hook(fast)...)
	sock, _, _, err := hookwire.Socket(ws)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		} else if i == 500 {
			b.Fatal("no hook server started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	times := map[string][]time.Duration{}
	add := func(key string, d time.Duration) { times[key] = append(times[key], d) }
	report := func(b *testing.B) {
		for _, k := range slices.Sorted(maps.Keys(times)) {
			reportTimes(b, k, times[k])
		}
		clear(times)
	}

	b.Run("version", func(b *testing.B) {
		for b.Loop() {
			add("hello-", run(b, nil, hello))
			for _, p := range progs {
				if p.name == "fast" {
					continue
				}
				add(p.name+"-", run(b, nil, p.bin, "version"))
			}
		}
		report(b)
	})
	// One event per program and round: a tool that is not a file tool,
	// then the event after a Read.
	for _, ev := range []struct{ name, tool string }{{"PreToolUse", "Bash"}, {"PostToolUse", "Read"}} {
		b.Run(ev.tool, func(b *testing.B) {
			for b.Loop() {
				add("hello-", run(b, nil, hello))
				for _, p := range progs {
					add(p.name+"-", run(b, event(ev.name, ev.tool), hook(p)...))
				}
			}
			report(b)
		})
	}
	b.Run("Edit", func(b *testing.B) {
		run(b, event("PostToolUse", "Read"), hook(progs[0])...) // the read the edits need
		i := 0
		for b.Loop() {
			add("hello-", run(b, nil, hello))
			for _, p := range progs {
				add(p.name+"-pre-", run(b, event("PreToolUse", "Edit"), hook(p)...))
				i++
				if err := os.WriteFile(a, content(i), 0o644); err != nil {
					b.Fatal(err)
				}
				add(p.name+"-post-", run(b, event("PostToolUse", "Edit"), hook(p)...))
			}
		}
		report(b)
	})
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
