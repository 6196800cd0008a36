package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitInit makes root a git work tree, or skips the test without git.
func gitInit(t *testing.T, root string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	if out, err := exec.Command("git", "-C", root, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// gitIgnores reports whether git ignores rel in the work tree root.
func gitIgnores(t *testing.T, root, rel string) bool {
	t.Helper()
	return exec.Command("git", "-C", root, "check-ignore", "-q", "--", rel).Run() == nil
}

// TestInitLocalSettings checks that Claude Code's deny rules and hooks go
// to this clone's settings, which git is then told to ignore once, and
// that the shared file is left alone.
func TestInitLocalSettings(t *testing.T) {
	for _, hooks := range []bool{false, true} {
		t.Run(map[bool]string{false: "mcp", true: "hooks"}[hooks], func(t *testing.T) {
			root := t.TempDir()
			gitInit(t, root)
			shared := "{\"model\": \"opus\"}\n"
			writeFile(t, root, claudeSharedSettings, shared)
			var extra []string
			if hooks {
				extra = []string{"--hooks"}
			}
			rep := runInitJSON(t, root, "claude-code", extra...)
			if got := readFile(t, root, claudeSharedSettings); got != shared {
				t.Errorf("init changed the shared settings:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(root, claudeLocalSettings)); err != nil {
				t.Fatalf("no local settings: %v", err)
			}
			if !gitIgnores(t, root, claudeLocalSettings) {
				t.Errorf("git does not ignore %s after init", claudeLocalSettings)
			}
			if !strings.Contains(strings.Join(rep.Notes, "\n"), "added /"+claudeLocalSettings) {
				t.Errorf("notes do not say the file was excluded: %q", rep.Notes)
			}
			exclude := readFile(t, root, ".git/info/exclude")
			runInitJSON(t, root, "claude-code", extra...)
			if again := readFile(t, root, ".git/info/exclude"); again != exclude {
				t.Errorf("a second init added to info/exclude again:\n%s", again)
			}
			if n := strings.Count(exclude, "/"+claudeLocalSettings+"\n"); n != 1 {
				t.Errorf("info/exclude names the local settings %d times, want 1:\n%s", n, exclude)
			}
		})
	}
}

// TestInitLocalSettingsBelowTop checks the pattern init excludes when the
// workspace is a directory below the repository's top.
func TestInitLocalSettingsBelowTop(t *testing.T) {
	top := t.TempDir()
	gitInit(t, top)
	root := filepath.Join(top, "sub", "project")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	runInitJSON(t, root, "claude-code")
	if !gitIgnores(t, root, claudeLocalSettings) {
		t.Errorf("git does not ignore %s in a workspace below the top", claudeLocalSettings)
	}
	if !gitIgnores(t, top, "sub/project/"+claudeLocalSettings) || gitIgnores(t, top, claudeLocalSettings) {
		t.Errorf("the exclude pattern is not anchored to the workspace:\n%s", readFile(t, top, ".git/info/exclude"))
	}
}

// TestInitSharedSettings checks --shared: the entries go to the shared
// file, nothing is excluded, and doctor finds them there.
func TestInitSharedSettings(t *testing.T) {
	root := t.TempDir()
	gitInit(t, root)
	rep := runInitJSON(t, root, "claude-code", "--shared")
	if rep.Files[1].Path != claudeSharedSettings {
		t.Fatalf("files = %+v, want the shared settings", rep.Files)
	}
	if _, err := os.Stat(filepath.Join(root, claudeLocalSettings)); err == nil {
		t.Error("--shared wrote the local settings too")
	}
	if data, _ := os.ReadFile(filepath.Join(root, ".git/info/exclude")); strings.Contains(string(data), "settings") {
		t.Errorf("--shared excluded a settings file:\n%s", data)
	}
	s := readJSON(t, root, claudeSharedSettings)
	if !contains(get(s, "permissions", "deny"), "Edit") {
		t.Errorf("shared settings lack the deny rules: %v", s)
	}
	code, dr := runDoctorJSON(t, root, "claude-code")
	cs := findChecks(dr, "claude-code", "settings")
	if len(cs) != 1 || !cs[0].OK {
		t.Errorf("doctor's settings checks after init --shared (exit %d): %+v", code, cs)
	}
}

// TestDoctorMergesClaudeSettings checks that doctor reads the local and
// the shared settings together, as Claude Code does: deny rules split
// across them are whole.
func TestDoctorMergesClaudeSettings(t *testing.T) {
	a := map[string]any{"permissions": map[string]any{"deny": []any{"Read", "Edit"}}, "model": "opus"}
	b := map[string]any{"permissions": map[string]any{"deny": []any{"Write"}, "allow": []any{"x"}}, "model": "sonnet"}
	m := mergeSettings(a, b)
	if got := get(m, "permissions", "deny"); !contains(got, "Read") || !contains(got, "Write") || !contains(got, "Edit") {
		t.Errorf("merged deny = %v, want both files' rules", got)
	}
	if !contains(get(m, "permissions", "allow"), "x") || m["model"] != "opus" {
		t.Errorf("merged = %v, want the shared allow kept and the local model first", m)
	}
	if got := get(a, "permissions", "deny"); len(got.([]any)) != 2 {
		t.Errorf("merging changed its first argument: %v", got)
	}
}
