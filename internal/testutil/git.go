package testutil

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil/gittest"
)

// RequireGit skips the test when there is no git, and isolates git from
// the user's and the system's configuration.
func RequireGit(t *testing.T) {
	t.Helper()
	gittest.RequireGit(t)
}

// GitIn runs git with args in dir, with a fixed identity and default
// branch, and returns its output trimmed; a failure fails the test.
func GitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.GitIn(t, dir, args...)
}

// SyncRepo makes a bare repository whose main branch holds files, and
// returns its path.
func SyncRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	RequireGit(t)
	dir := t.TempDir()
	bare := filepath.Join(dir, "shared.git")
	GitIn(t, dir, "init", "-q", "--bare", bare)
	seed := filepath.Join(dir, "seed")
	GitIn(t, dir, "clone", "-q", bare, seed)
	for name, content := range files {
		WriteRaw(t, filepath.Join(seed, name), content)
	}
	GitIn(t, seed, "add", "-A")
	GitIn(t, seed, "commit", "-q", "-m", "initial")
	GitIn(t, seed, "push", "-q", "origin", "main")
	return bare
}

// WriteRaw writes content to the file p, making its directory.
func WriteRaw(t *testing.T, p, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Clone clones bare into a new directory name and opens a workspace
// there, closed when the test ends.
func Clone(t *testing.T, bare, name string) (*editguard.Workspace, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	GitIn(t, filepath.Dir(dir), "clone", "-q", bare, dir)
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

// Change reads p (if it exists) and writes content over it in session s.
func Change(t *testing.T, s *editguard.Session, p, content string) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Read(ctx, p, nil); err != nil && !errors.Is(err, editguard.ErrNotFound) {
		t.Fatalf("Read(%s) = %v", p, err)
	}
	if _, err := s.Write(ctx, p, content, nil); err != nil {
		t.Fatalf("Write(%s) = %v", p, err)
	}
}
