package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// BenchmarkHookServed measures what a hook server does for one Claude Code
// Edit: the event before it (check, history snapshot) and the event after
// it (ledger record, new read), in process, without the process start that
// BenchmarkHook measures, each until its answer is ready (the server makes
// the event's ledger record durable after answering). Reported as pre-us
// and post-us per edit.
//
//	go test -run '^$' -bench BenchmarkHookServed -benchtime 300x ./cmd/editguard
func BenchmarkHookServed(b *testing.B) {
	ws := b.TempDir()
	a := filepath.Join(ws, "a.go")
	os.WriteFile(a, []byte(strings.Repeat("// xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", 60)), 0o644)
	w, err := editguard.Open(ws, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	evt := func(name, tool string) []byte {
		ev, _ := json.Marshal(map[string]any{"session_id": "s", "cwd": ws, "hook_event_name": name, "tool_name": tool, "tool_input": map[string]any{"file_path": a, "old_string": "x", "new_string": "y"}})
		return ev
	}
	call := func(ev []byte) time.Duration {
		s := time.Now()
		var out, errb bytes.Buffer
		var later []func()
		e := &env{root: ws, sessionName: defaultSession, stdin: bytes.NewReader(ev), stdout: &out, stderr: &errb, ws: w, answered: &later}
		if code := report(e, runHook(context.Background(), e, []string{"--client", "claude-code"})); code != 0 || out.Len() > 0 {
			b.Fatal(code, errb.String(), out.String())
		}
		d := time.Since(s)
		// What the server does after answering, untimed.
		for _, f := range later {
			f()
		}
		return d
	}
	call(evt("PostToolUse", "Read"))
	var pre, post time.Duration
	i := 0
	for b.Loop() {
		pre += call(evt("PreToolUse", "Edit"))
		i++
		os.WriteFile(a, []byte(strings.Repeat("// xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", 60)+strconv.Itoa(i)), 0o644)
		post += call(evt("PostToolUse", "Edit"))
	}
	b.ReportMetric(float64(pre.Microseconds())/float64(b.N), "pre-us")
	b.ReportMetric(float64(post.Microseconds())/float64(b.N), "post-us")
}
