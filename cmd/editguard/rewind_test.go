package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rewindJSON is what rewind --json prints.
type rewindJSON struct {
	Session string `json:"session"`
	Rewound []struct {
		Path          string `json:"path"`
		ToSHA256      string `json:"to_sha256"`
		Deleted       bool   `json:"deleted"`
		Version       string `json:"version"`
		BackupVersion string `json:"backup_version"`
	} `json:"rewound"`
	Refused []struct {
		Path  string `json:"path"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"refused"`
}

// TestRewindHookSession rewinds what Claude Code's own Edit and Write tools
// did under the hooks, in session claude-<id>, leaving a file another
// session changed since.
func TestRewindHookSession(t *testing.T) {
	dir := t.TempDir()
	cli := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--root", dir}, args...), strings.NewReader(""), &out, &errb)
		return out.String(), errb.String(), code
	}
	a, b, c := filepath.Join(dir, "a.go"), filepath.Join(dir, "b.go"), filepath.Join(dir, "c.go")
	os.WriteFile(a, []byte("package a\n"), 0o644)
	os.WriteFile(b, []byte("package b\n"), 0o644)
	for _, f := range []struct{ path, tool, content string }{
		{a, "Edit", "package a // edited\n"},
		{b, "Edit", "package b // edited\n"},
		{c, "Write", "package c\n"},
	} {
		if f.tool == "Edit" {
			hookRun(t, dir, ev("PostToolUse", "Read", f.path, nil))
		}
		if reason, _ := hookRun(t, dir, ev("PreToolUse", f.tool, f.path, nil)); reason != "" {
			t.Fatalf("%s %s denied: %s", f.tool, f.path, reason)
		}
		os.WriteFile(f.path, []byte(f.content), 0o644) // the tool's write
		hookRun(t, dir, ev("PostToolUse", f.tool, f.path, nil))
	}
	// Another session changes b.go after the agent.
	if _, errs, code := cli("read", "b.go"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := cli("edit", "b.go", "--old", "edited", "--new", "edited twice"); code != 0 {
		t.Fatal(errs)
	}

	out, errs, code := cli("rewind", "--session", "claude-3f2a-session", "--json")
	if code != exitConflict {
		t.Fatalf("rewind exited %d, want %d: %s %s", code, exitConflict, out, errs)
	}
	var res rewindJSON
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("rewind --json printed %q: %v", out, err)
	}
	var rewound []string
	for _, f := range res.Rewound {
		rewound = append(rewound, f.Path)
		if f.BackupVersion == "" || f.Deleted != (f.Path == "c.go") {
			t.Errorf("rewound %+v", f)
		}
	}
	if !slices.Equal(rewound, []string{"a.go", "c.go"}) {
		t.Errorf("rewound %q, want a.go and c.go", rewound)
	}
	if len(res.Refused) != 1 || res.Refused[0].Path != "b.go" || res.Refused[0].Error.Code != "STALE_FILE" {
		t.Errorf("refused %+v, want b.go with STALE_FILE", res.Refused)
	}
	if got, _ := os.ReadFile(a); string(got) != "package a\n" {
		t.Errorf("a.go = %q, want it as before the agent's edit", got)
	}
	if got, _ := os.ReadFile(b); string(got) != "package b // edited twice\n" {
		t.Errorf("b.go = %q, want the other session's change kept", got)
	}
	if _, err := os.Stat(c); !os.IsNotExist(err) {
		t.Errorf("c.go, which the agent created, still exists (%v)", err)
	}
}

// TestRewindTo rewinds only the changes from a ledger record, or a time, on.
func TestRewindTo(t *testing.T) {
	dir := t.TempDir()
	cli := func(stdin string, args ...string) (string, int) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"--root", dir}, args...), strings.NewReader(stdin), &out, &errb)
		return out.String() + errb.String(), code
	}
	for _, v := range []string{"v1\n", "v2\n", "v3\n"} {
		if out, code := cli(v, "--session", "agent", "write", "f.txt"); code != 0 {
			t.Fatalf("write: %d %s", code, out)
		}
	}
	out, code := cli("", "log", "--reverse", "--json", "--path", "f.txt")
	if code != 0 {
		t.Fatalf("log: %d %s", code, out)
	}
	type record struct {
		Seq  uint64    `json:"seq"`
		Time time.Time `json:"time"`
	}
	var recs []record
	for _, line := range logLines(t, out) {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	if len(recs) != 3 {
		t.Fatalf("log has %d records, want 3: %s", len(recs), out)
	}
	fileIs := func(when, want string) {
		t.Helper()
		if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != want {
			t.Errorf("f.txt after %s = %q, want %q", when, got, want)
		}
	}
	if out, code := cli("", "rewind", "--session", "agent", "--to", strconv.FormatUint(recs[2].Seq, 10)); code != 0 {
		t.Fatalf("rewind --to SEQ: %d %s", code, out)
	}
	fileIs("rewind --to SEQ", "v2\n")
	if out, code := cli("", "rewind", "--session", "agent", "--to", recs[1].Time.Format(time.RFC3339Nano)); code != 0 {
		t.Fatalf("rewind --to TIME: %d %s", code, out)
	}
	fileIs("rewind --to TIME", "v1\n")
	if out, code := cli("", "rewind", "--session", "agent"); code != 0 {
		t.Fatalf("rewind: %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.txt")); !os.IsNotExist(err) {
		t.Errorf("f.txt exists after rewinding the session that created it (%v)", err)
	}
}
