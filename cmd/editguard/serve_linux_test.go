package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestServeNotesTerminal starts serve with a terminal on stdin: it says
// once what it is for, then serves as before.
func TestServeNotesTerminal(t *testing.T) {
	_, tty := openPTY(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--root", t.TempDir(), "serve"}, tty, &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "editguard init claude-code") {
		if time.Now().After(deadline) {
			t.Fatalf("no note on stderr: %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	if n := strings.Count(stderr.String(), "serving MCP on stdin/stdout"); n != 1 {
		t.Errorf("note printed %d times: %q", n, stderr.String())
	}
	if stdout.String() != "" {
		t.Errorf("stdout, the MCP channel, got %q", stdout.String())
	}
}

// TestServeQuietOnPipe: an MCP client starts serve with a pipe on stdin,
// and stderr stays quiet.
func TestServeQuietOnPipe(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--root", t.TempDir(), "serve"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 || stderr.Len() != 0 {
		t.Errorf("serve with empty stdin: exit %d, stderr %q", code, stderr.String())
	}
}

// TestServeQuietStop: stopping serve (Ctrl-C, SIGTERM: its context ends)
// while a client is connected logs no error.
func TestServeQuietStop(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int)
	go func() { done <- run(ctx, []string{"--root", t.TempDir(), "serve"}, r, &stdout, &stderr) }()
	w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"))
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stdout.String(), `"id":1`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || stderr.String() != "" {
		t.Errorf("serve stopped: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"id":1`) {
		t.Fatalf("serve never answered initialize: %q", stdout.String())
	}
}
