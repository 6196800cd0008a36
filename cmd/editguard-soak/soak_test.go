package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/soak"
)

// editguardBin is the editguard command built once for the tests of this
// package; empty under -short, where the runs are skipped.
var editguardBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "editguard-soak-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	editguardBin = filepath.Join(dir, "editguard")
	var out bytes.Buffer
	if err := build(context.Background(), editguardBin, &out); err != nil {
		fmt.Fprintf(os.Stderr, "build editguard: %v\n%s", err, out.Bytes())
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runSoak runs c in a fresh directory and fails the test on any violation,
// printing the report either way.
func runSoak(t *testing.T, c soak.Config) *soak.Report {
	t.Helper()
	if testing.Short() {
		t.Skip("a timed run of real processes; skipped with -short")
	}
	c.Editguard, c.Dir = editguardBin, t.TempDir()
	rep, err := soak.Run(context.Background(), c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var table strings.Builder
	rep.WriteTable(&table)
	t.Logf("report:\n%s", table.String())
	if !rep.OK() {
		t.Errorf("%d violations (see the report)", len(rep.Violations))
	}
	return rep
}

// TestSoak is the short variant of "editguard-soak -mode soak": CLI
// processes, MCP sessions and an unguarded writer on twelve files. The MCP
// sessions need no process start; with fewer files they leave the CLI
// workers, whose read and edit are two processes some 200 ms apart, almost
// no window in which a file stays unchanged (on six files, 1 to 4 of some
// 90 CLI edits committed, and none on a busy machine; on twelve, 5 to 11
// with a spinning process beside it).
func TestSoak(t *testing.T) {
	rep := runSoak(t, soak.Config{
		Mode: soak.ModeSoak, Duration: 12 * time.Second,
		CLIWorkers: 3, MCPSessions: 3, Files: 12,
		UnguardedPause: 20 * time.Millisecond, UnguardedThink: 5 * time.Millisecond,
	})
	// A run that exercised nothing proves nothing: both kinds of client
	// must have committed, been refused, and met the unguarded writer.
	if rep.Committed["cli"] == 0 || rep.Committed["mcp"] == 0 {
		t.Errorf("commits by kind = %v, want some by cli and by mcp", rep.Committed)
	}
	if rep.Refused["STALE_FILE"] == 0 {
		t.Errorf("no STALE_FILE refusals: the writers never conflicted")
	}
	if rep.UnguardedWrites == 0 {
		t.Errorf("the unguarded writer never wrote")
	}
	if rep.HistoryVersions == 0 {
		t.Errorf("no history version was checked")
	}
}

// TestSoakLargeFiles is TestSoak on files of 200 KB: every change replaces
// a file editguard holds under a lease and links into history, while the
// unguarded writer's in-place writes wait for the holds and break them.
func TestSoakLargeFiles(t *testing.T) {
	rep := runSoak(t, soak.Config{
		Mode: soak.ModeSoak, Duration: 8 * time.Second,
		CLIWorkers: 2, MCPSessions: 3, Files: 4, Pad: 200_000,
		UnguardedPause: 20 * time.Millisecond, UnguardedThink: 5 * time.Millisecond,
	})
	if rep.Committed["mcp"] == 0 || rep.UnguardedWrites == 0 {
		t.Errorf("commits by kind = %v, unguarded writes %d: want both", rep.Committed, rep.UnguardedWrites)
	}
}

func TestRunUsage(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{[]string{"-mode", "bogus"}, 2},
		{[]string{"-nosuchflag"}, 2},
		{[]string{"extra"}, 2},
		{[]string{"-h"}, 0},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if got := run(context.Background(), tt.args, &stdout, &stderr); got != tt.want {
			t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, stderr.String())
		}
	}
}

// TestRunCommand runs the program itself briefly, as documented.
func TestRunCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("a timed run of real processes; skipped with -short")
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-duration", "2s", "-p", "1", "-q", "1", "-files", "1", "-editguard", editguardBin, "-progress", "0"}
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run(%q) = %d, want 0; stdout:\n%s\nstderr:\n%s", args, code, stdout.String(), stderr.String())
	}
	for _, want := range []string{"lost updates", "violations", "cli edit", "mcp edit"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}
