package clients

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestClaudeCodeBashCheckoutDiscardsWork runs Claude Code under the hooks
// init --hooks writes, in a git repository where a person has an
// uncommitted change to f.txt, which the model never reads. Its model runs
// git checkout -- f.txt through Bash: the tool's result tells the model
// that the command discarded uncommitted work and names the history
// version, and restoring that version brings the person's work back.
func TestClaudeCodeBashCheckoutDiscardsWork(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = ws
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	f := filepath.Join(ws, "f.txt")
	os.WriteFile(f, []byte("committed\n"), 0o644)
	git("init", "-q")
	git("add", "f.txt")
	git("commit", "-qm", "f")
	os.WriteFile(f, []byte("a person's uncommitted work\n"), 0o644)

	settings, _ := json.MarshalIndent(map[string]any{
		"permissions": map[string]any{"allow": []string{"Read", "Edit", "Write", "Bash"}},
	}, "", "  ")
	os.MkdirAll(filepath.Join(ws, ".claude"), 0o755)
	if err := os.WriteFile(filepath.Join(ws, ".claude", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	initHooks(t, ws, "claude-code")
	script := []Step{{Tool: "Bash", Input: map[string]any{"command": "git checkout -- f.txt", "description": "discard the change"}}}
	run := runClaudeProject(t, ws, true, script)
	logRun(t, run)
	if len(run.Results) != len(script) {
		dumpRun(t, run)
		t.Fatalf("got %d tool results for %d steps", len(run.Results), len(script))
	}
	if b, _ := os.ReadFile(f); string(b) != "committed\n" {
		t.Fatalf("f.txt after the checkout = %q", b)
	}
	r := run.Results[0]
	text := r.Content + strings.Join(r.Parts, "") + r.Along
	m := regexp.MustCompile(`editguard restore f\.txt (v[0-9]+)`).FindStringSubmatch(text)
	if !strings.Contains(text, "discarded uncommitted work") || m == nil {
		dumpRun(t, run)
		t.Fatalf("the model was not told of the uncommitted work git checkout discarded, with its version:\n%s", text)
	}
	bin := editguardBin(t)
	for _, args := range [][]string{{"read", "f.txt"}, {"restore", "f.txt", m[1], "--yes"}} {
		if out, err := exec.Command(bin, append([]string{"--root", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("editguard %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if b, _ := os.ReadFile(f); string(b) != "a person's uncommitted work\n" {
		t.Errorf("f.txt after restoring %s = %q, want the person's work", m[1], b)
	}
}
