package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"
)

func TestUIRefusesNonLoopbackAddr(t *testing.T) {
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "example.com:80"} {
		var out bytes.Buffer
		if code := cli(t, dir, &out, "ui", "--addr", addr); code != exitUsage {
			t.Errorf("ui --addr %s: exit %d, want %d\n%s", addr, code, exitUsage, out.String())
		}
		if !strings.Contains(out.String(), "loopback") {
			t.Errorf("ui --addr %s: the refusal does not say why:\n%s", addr, out.String())
		}
	}
}

// TestUIServesThePage runs the command, opens the address it prints,
// and stops it by ending its context.
func TestUIServesThePage(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if code := cli(t, dir, &out, "write", "a.txt", "--json"); code != 0 {
		t.Fatalf("write: %d\n%s", code, out.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		var errb bytes.Buffer
		done <- run(ctx, []string{"--root", dir, "ui"}, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "editguard ui: ")
	if !ok || !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.Contains(u, "/?t=") {
		t.Fatalf("the command printed %q", line)
	}
	base := u[:strings.Index(u, "/?t=")]
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET / without the token: %d, want 403", resp.StatusCode)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err = c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "a.txt") || !strings.Contains(string(body), "write_file") {
		t.Fatalf("GET the printed address: %d\n%s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("ui exited %d after its context ended, want 0", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ui did not stop within 20 s of its context ending")
	}
}
