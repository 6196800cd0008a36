// Package npm tests the npm packages (npm/ at the module's root) as a user
// gets them, by running scripts/npm-smoke.sh from go test.
package npm

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestNpmPackages packs the main package and this machine's platform
// package, installs them from their tarballs without the network, and runs
// editguard through npx: --version, an exit status, an MCP initialize to
// serve, and SIGTERM to the launcher (see scripts/npm-smoke.sh). It is
// skipped with -short, where node, npm or bash is missing, and on a
// platform the packages do not cover.
func TestNpmPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds editguard and installs npm packages; skipped with -short")
	}
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64":
	default:
		t.Skipf("no npm package for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	for _, tool := range []string{"node", "npm", "npx", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH", tool)
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	// go test puts its own GOROOT/bin first on PATH, so the script builds
	// with the toolchain that runs the test.
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(dir, "..", "..", "scripts", "npm-smoke.sh"))
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
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
	err = cmd.Run()
	pw.Close()
	wg.Wait()
	if err != nil {
		t.Fatalf("scripts/npm-smoke.sh: %v", err)
	}
}
