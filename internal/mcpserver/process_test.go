package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// editguardBin builds the editguard command once per test run.
func editguardBin(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the editguard binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "editguard-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "editguard")
		buildOut, buildErr = exec.Command(goTool, "build", "-o", binPath, "github.com/editguard/editguard/cmd/editguard").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build cmd/editguard: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// TestStdioProcesses runs two real `editguard serve` processes on one root,
// each an MCP server on stdio: their sessions conflict across processes.
func TestStdioProcesses(t *testing.T) {
	t.Parallel()
	bin := editguardBin(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := func() *mcp.ClientSession {
		cmd := exec.Command(bin, "--root", root, "serve")
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("connect to %s: %v", cmd, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := start(), start()
	res, err := a.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 19 {
		t.Fatalf("ListTools = %v, %v; want 19 tools", res, err)
	}
	ok(t, a, "read_file", map[string]any{"path": "a.txt"})
	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, a, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "two"})
	fails(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "one", "new_string": "three"}, editguard.CodeStaleFile)
	fails(t, b, "read_file", map[string]any{"path": "../etc/passwd"}, editguard.CodeOutsideRoot)
	ok(t, b, "read_file", map[string]any{"path": "a.txt"})
	ok(t, b, "edit_file", map[string]any{"path": "a.txt", "old_string": "two", "new_string": "three"})
	if got, err := os.ReadFile(filepath.Join(root, "a.txt")); err != nil || string(got) != "three\n" {
		t.Errorf("a.txt = %q, %v; want three", got, err)
	}
}

// TestHTTPProcess runs `editguard serve --http 127.0.0.1:0`, uses it, and
// stops it with SIGTERM: it must exit 0 promptly.
func TestHTTPProcess(t *testing.T) {
	t.Parallel()
	bin := editguardBin(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--root", root, "serve", "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	if !sc.Scan() {
		t.Fatalf("no output from %s: %v", cmd, sc.Err())
	}
	m := regexp.MustCompile(`http://(\S+)/mcp`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("first line %q does not name the endpoint", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	cs := httpConnect(t, "http://"+m[1]+"/mcp", nil)
	ok(t, cs, "read_file", map[string]any{"path": "a.txt"})
	ok(t, cs, "write_file", map[string]any{"path": "a.txt", "content": "two\n"})
	cs.Close()

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit within 15s of SIGTERM")
	}
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	bin := editguardBin(t)
	cmd := exec.Command(bin, "--root", t.TempDir(), "serve", "--http", "0.0.0.0:0")
	cmd.Env = append(os.Environ(), "EDITGUARD_TOKEN=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("serve --http 0.0.0.0:0 without a token = %v, want exit 2; stderr %s", err, stderr.String())
	}
	if !bytes.Contains(stderr.Bytes(), []byte("token")) {
		t.Errorf("stderr %q does not say a token is needed", stderr.String())
	}
}
