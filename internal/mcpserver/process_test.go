package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
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
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
		if err != nil {
			t.Fatalf("connect to %s: %v", cmd, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := start(), start()
	res, err := a.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != len(toolset.Names(false)) {
		t.Fatalf("ListTools = %v, %v; want %d tools", res, err, len(toolset.Names(false)))
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

// startServe starts `editguard --root root serve args...` and returns the
// endpoint URL it prints, everything it printed before, and the process,
// which is stopped with SIGTERM when the test ends.
func startServe(t *testing.T, root string, args ...string) (url, before string, cmd *exec.Cmd) {
	t.Helper()
	cmd = exec.Command(editguardBin(t), append([]string{"--root", root, "serve"}, args...)...)
	cmd.Env = append(os.Environ(), "EDITGUARD_TOKEN=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve exited with %v after SIGTERM, want 0", err)
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Error("serve did not exit within 15s of SIGTERM")
		}
	})
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`serving MCP on (https?://\S+/mcp)`)
	var out bytes.Buffer
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], out.String(), cmd
		}
	}
	t.Fatalf("serve %q did not say where it serves: %s", args, out.String())
	return "", "", nil
}

// TestRemoteProcess runs `editguard serve` as a remote server, with a
// tokens file and TLS, on an address of this machine that is not loopback
// (0.0.0.0 when it has none), and finds the agents in `editguard log`.
func TestRemoteProcess(t *testing.T) {
	t.Parallel()
	host, dir, root := "0.0.0.0", t.TempDir(), t.TempDir()
	var ips []net.IP
	if ip := nonLoopbackIP(); ip != nil {
		host, ips = ip.String(), []net.IP{ip}
	}
	certFile, keyFile, pool := selfSigned(t, dir, ips...)
	alice, bob := testToken(1), testToken(2)
	tokens := writeFile(t, dir, "tokens", "alice "+alice+"\nbob "+bob+"\n", 0o600)
	url, _, _ := startServe(t, root, "--http", host+":0", "--tokens", tokens, "--tls-cert", certFile, "--tls-key", keyFile)
	if !regexp.MustCompile(`^https://`).MatchString(url) {
		t.Fatalf("serve prints %s, want an https:// endpoint", url)
	}
	url = regexp.MustCompile(`//(0\.0\.0\.0|\[::\])`).ReplaceAllString(url, "//127.0.0.1")
	if resp, _ := do(t, &http.Client{Transport: tlsTransport(pool)}, "POST", url, nil, initialize); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST without a token = %d, want 401", resp.StatusCode)
	}
	ca := httpConnect(t, url, &http.Client{Transport: withToken{alice, tlsTransport(pool)}})
	cb := httpConnect(t, url, &http.Client{Transport: withToken{bob, tlsTransport(pool)}})
	ok(t, ca, "write_file", map[string]any{"path": "a.txt", "content": "alice\n"})
	ok(t, cb, "write_file", map[string]any{"path": "b.txt", "content": "bob\n"})
	out, err := exec.Command(editguardBin(t), "--root", root, "log").CombinedOutput()
	if err != nil {
		t.Fatalf("editguard log: %v\n%s", err, out)
	}
	for _, want := range []string{`alice/mcp-` + ca.ID()[:8] + `\s+write_file\s+a\.txt`, `bob/mcp-` + cb.ID()[:8] + `\s+write_file\s+b\.txt`} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("editguard log does not match %q:\n%s", want, out)
		}
	}
}

// TestServeInsecureWarns: plain HTTP on an address that is not loopback
// starts only with --insecure, and says what that means.
func TestServeInsecureWarns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := writeFile(t, dir, "tokens", "alice "+testToken(1)+"\n", 0o600)
	url, before, _ := startServe(t, t.TempDir(), "--http", "0.0.0.0:0", "--tokens", tokens, "--insecure")
	if !regexp.MustCompile(`warning: serving plain HTTP on 0\.0\.0\.0:0 \(--insecure\)`).MatchString(before) {
		t.Errorf("no warning before %s: %q", url, before)
	}
	if !regexp.MustCompile(`^http://`).MatchString(url) {
		t.Errorf("serve --insecure prints %s, want an http:// endpoint", url)
	}
}
