// Package interop runs the Node interop suite (*.test.mjs in this
// directory) from go test: the official MCP TypeScript SDK, as a real client,
// against the editguard binary built from this tree.
package interop

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestNodeSDKInterop builds cmd/editguard, installs the pinned SDKs with
// npm ci when node_modules is missing, and runs node --test on the suite.
// It is skipped with -short and when node is not installed; when node is
// there but npm ci fails, the test fails: a broken install must not pass as
// a skip.
func TestNodeSDKInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node and editguard processes; skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if !installed(dir, "sdk", "client") {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("node is installed but npm is not; cannot install the interop dependencies: %v", err)
		}
		run(ctx, t, dir, nil, npm, "ci", "--no-audit", "--no-fund")
	}

	bin := filepath.Join(t.TempDir(), "editguard")
	// go test puts its own GOROOT/bin first on PATH, so this is the same
	// toolchain that runs the test.
	run(ctx, t, filepath.Join(dir, "..", ".."), nil, "go", "build", "-o", bin, "./cmd/editguard")

	files, err := filepath.Glob(filepath.Join(dir, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no *.test.mjs files in %s (err %v)", dir, err)
	}
	args := append([]string{"--test", "--test-reporter=spec"}, files...)
	run(ctx, t, dir, []string{"EDITGUARD_BIN=" + bin}, node, args...)
}

// installed reports whether the packages @modelcontextprotocol/NAME are
// all in dir's node_modules.
func installed(dir string, names ...string) bool {
	for _, name := range names {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", name)); err != nil {
			return false
		}
	}
	return true
}

// run runs name with args in dir, streams its output to t.Log line by line,
// and fails the test if it does not exit 0.
func run(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	cmd.Stderr = pw
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			t.Log(sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	if err != nil {
		t.Fatalf("%s %v in %s: %v", name, args, dir, err)
	}
}
