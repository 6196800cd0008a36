package testutil

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard/internal/crashsim"
)

// A traced write is one guarded write of a child process of the test
// binary, recorded by strace: the package's TestTracedWriteChild runs
// TracedWriteOf in the workspace TracedEnv names.
const (
	TracedEnv     = "EDITGUARD_TRACED_WRITE_DIR"
	TraceBegin    = "EDITGUARD-TRACE-BEGIN\n"
	TraceEnd      = "EDITGUARD-TRACE-END\n"
	TracedOld     = "old content\nsecond line\n"
	TracedNew     = "new content, which is longer than the old one\nsecond line\n"
	tracedSyscall = "trace=openat,write,pwrite64,fsync,fdatasync,syncfs,rename,renameat,renameat2,flock,unlinkat,close,ftruncate,mkdirat,linkat"
)

// TracedWriteOf is the traced child's body: it reads a.txt in dir and
// writes content over it between the markers the tracer looks for.
func TracedWriteOf(t *testing.T, dir, content string) {
	ctx := context.Background()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("traced")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	os.Stderr.WriteString(TraceBegin)
	if _, err := s.Write(ctx, "a.txt", content, nil); err != nil {
		t.Fatal(err)
	}
	os.Stderr.WriteString(TraceEnd)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TracedWrite is a recorded guarded write: the workspace before it, and the
// system calls between the markers.
type TracedWrite struct {
	Root    string
	Initial *crashsim.FS // the tree before the traced process started
	Calls   []crashsim.Syscall
	Begin   int // index of the first call of the write
	End     int // index of the end marker
}

// TraceWrite prepares a workspace holding a.txt (created through editguard,
// so the history, ledger and lock files exist) and runs one guarded write
// over it under strace, in the test binary's TestTracedWriteChild. It
// skips the test if strace is not installed.
func TraceWrite(t *testing.T) *TracedWrite {
	t.Helper()
	strace := NeedStrace(t)
	w, dir := NewWorkspace(t)
	s := w.NewSession("setup")
	if _, err := s.Write(context.Background(), "a.txt", TracedOld, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tw := TraceChild(t, strace, dir, "TestTracedWriteChild", TracedEnv)
	if got := ReadFile(t, dir, "a.txt"); got != TracedNew {
		t.Fatalf("traced write left %q, want %q", got, TracedNew)
	}
	return tw
}

// NeedStrace returns strace's path, or skips the test.
func NeedStrace(t *testing.T) string {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	return strace
}

// TraceChild snapshots the workspace at dir, runs the test child in this
// test binary under strace with env set to dir, and returns the recorded
// calls with the child's begin and end markers found.
func TraceChild(t *testing.T, strace, dir, child, env string) *TracedWrite {
	t.Helper()
	initial, err := crashsim.Snapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-xx", "-s", "16777216", "-e", tracedSyscall, "-o", log,
		os.Args[0], "-test.run=^"+child+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("traced %s: %v\n%s", child, err, out.String())
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls, err := crashsim.ParseStrace(f)
	if err != nil {
		t.Fatal(err)
	}
	tw := &TracedWrite{Root: dir, Initial: initial, Calls: calls, Begin: -1, End: -1}
	for i, c := range calls {
		if c.Name == "write" && len(c.Args) > 1 {
			switch string(c.Args[1].Str) {
			case TraceBegin:
				tw.Begin = i + 1
			case TraceEnd:
				tw.End = i
			}
		}
	}
	if tw.Begin < 0 || tw.End < tw.Begin {
		t.Fatalf("trace markers not found in %d calls", len(calls))
	}
	return tw
}
