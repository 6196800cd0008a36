//go:build linux

package editguard_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// coverRun runs script between two checkpoints in w and returns the paths
// of the changes.
func coverRun(t *testing.T, w *editguard.Workspace, dir, script string) (*editguard.CommandResult, []string) {
	t.Helper()
	res := runCommand(t, w.NewSession("s"), dir, script)
	var paths []string
	for _, ch := range res.Changes {
		paths = append(paths, ch.Op+" "+ch.Path)
	}
	return res, paths
}

func coverTree(t *testing.T, dir string) {
	writeFile(t, dir, ".gitignore", ".env\n.env.*\n*.log\nnode_modules/\n")
	writeFile(t, dir, ".env", "SECRET=1\n")
	writeFile(t, dir, "sub/.env.local", "SECRET=2\n")
	writeFile(t, dir, "app.log", "log\n")
	writeFile(t, dir, "node_modules/m/.env", "in an ignored directory\n")
}

const coverScript = "rm .env sub/.env.local node_modules/m/.env; echo more >> app.log"

// TestCommandCoversEnvFiles: by default the checkpoints cover the .env
// files a .gitignore ignores (no commit brings them back), not other
// ignored files, and nothing in an ignored directory; the result says so.
func TestCommandCoversEnvFiles(t *testing.T) {
	w, dir := newWorkspace(t)
	coverTree(t, dir)
	res, got := coverRun(t, w, dir, coverScript)
	if want := []string{"deleted .env", "deleted sub/.env.local"}; !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	assertInHistory(t, w, ".env", []byte("SECRET=1\n"))
	assertInHistory(t, w, "sub/.env.local", []byte("SECRET=2\n"))
	if len(res.NotChecked) == 0 || !strings.Contains(res.NotChecked[0], ".env, .env.*") {
		t.Errorf("not checked %q, want the include patterns named", res.NotChecked)
	}
}

// TestCommandCoverageConfigured: .editguard/checkpoint-include replaces the
// default patterns, and Options.CheckpointInclude both.
func TestCommandCoverageConfigured(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		w, dir := newWorkspace(t)
		coverTree(t, dir)
		if err := os.WriteFile(filepath.Join(dir, ".editguard", "checkpoint-include"), []byte("# logs too\n*.log\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, got := coverRun(t, w, dir, coverScript)
		if want := []string{"changed app.log"}; !slices.Equal(got, want) {
			t.Fatalf("changes %q, want %q", got, want)
		}
	})
	t.Run("option", func(t *testing.T) {
		dir := t.TempDir()
		w, err := editguard.Open(dir, &editguard.Options{CheckpointInclude: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		coverTree(t, w.Dir())
		_, got := coverRun(t, w, w.Dir(), coverScript)
		if len(got) != 0 {
			t.Fatalf("changes %q, want none: nothing ignored is covered", got)
		}
	})
}
