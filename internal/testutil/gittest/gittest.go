// Package gittest runs git for tests. It imports nothing of the module, so
// that the tests of a package the root depends on (internal/gitsync) can
// use it without a cycle through internal/testutil.
package gittest

import (
	"os/exec"
	"strings"
	"testing"
)

// RequireGit skips the test when git is not installed, and gives git an
// empty home and no system configuration.
func RequireGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
}

// GitIn runs git with args in dir, with a fixed identity and default
// branch, and returns its output trimmed; a failure fails the test.
func GitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
