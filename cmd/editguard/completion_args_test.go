package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// editguardOnPath puts this test binary on PATH as the editguard program
// (TestMain dispatches on the name it is started by), for the completion
// scripts, which run it for the candidates that depend on a workspace.
func editguardOnPath(t *testing.T) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "editguard")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// completionWorkspace makes a workspace where session alice changed a.txt
// twice (so that it has two versions) and returns its root.
func completionWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	writeFile(t, ws, "a.txt", "one\n")
	for _, c := range [][2]string{{"one", "two"}, {"two", "three"}} {
		cliRun(t, ws, "--session", "alice", "read", "a.txt")
		if code, _, errs := cliRun(t, ws, "--session", "alice", "edit", "a.txt", "--old", c[0], "--new", c[1]); code != 0 {
			t.Fatal(errs)
		}
	}
	return ws
}

// TestCompletionList checks what completion --list prints, and that it
// creates no state where there is none.
func TestCompletionList(t *testing.T) {
	ws := completionWorkspace(t)
	list := func(root string, args ...string) []string {
		t.Helper()
		code, out, errs := cliRun(t, root, append([]string{"completion", "--list"}, args...)...)
		if code != 0 {
			t.Fatalf("completion --list %v: exit %d\n%s", args, code, errs)
		}
		return strings.Fields(out)
	}
	if got := list(ws, "shells"); !slices.Equal(got, []string{"bash", "zsh", "fish"}) {
		t.Errorf("shells: %q", got)
	}
	if got := list(ws, "clients"); !slices.Equal(got, initClientNames(initClients)) || !slices.Contains(got, "claude-code") {
		t.Errorf("clients: %q, want %q", got, initClientNames(initClients))
	}
	if got := list(ws, "sessions"); !slices.Contains(got, "alice") {
		t.Errorf("sessions: %q, want alice among them", got)
	}
	if got := list(ws, "versions", "a.txt"); !slices.Equal(got, []string{"v000002", "v000001"}) {
		t.Errorf("versions of a.txt: %q, want v000002 v000001", got)
	}
	empty := t.TempDir()
	if got := list(empty, "sessions"); len(got) != 0 {
		t.Errorf("sessions where there is no state: %q", got)
	}
	if got := list(empty, "versions", "a.txt"); len(got) != 0 {
		t.Errorf("versions where there is no state: %q", got)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("completion --list created %v", ents)
	}
	if code, _, errs := cliRun(t, ws, "completion", "--list", "colours"); code != exitUsage || !strings.Contains(errs, "--list takes shells, clients, sessions or versions") {
		t.Errorf("completion --list colours: exit %d\n%s", code, errs)
	}
}

// TestBashCompletesArguments runs the bash script for the arguments that
// are names: shells, clients, sessions and versions.
func TestBashCompletesArguments(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	editguardOnPath(t)
	ws := completionWorkspace(t)
	code, script, errs := cliRun(t, ws, "completion", "bash")
	if code != 0 {
		t.Fatal(errs)
	}
	file := filepath.Join(t.TempDir(), "editguard.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(dir string, words ...string) []string {
		t.Helper()
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _editguard; printf '%s\n' "${COMPREPLY[@]}"`, "bash", file)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	elsewhere := t.TempDir()
	for _, tc := range []struct {
		dir   string
		words []string
		want  []string
	}{
		{elsewhere, []string{"editguard", "completion", ""}, []string{"bash", "zsh", "fish"}},
		{elsewhere, []string{"editguard", "completion", "f"}, []string{"fish"}},
		{elsewhere, []string{"editguard", "init", "cl"}, []string{"claude-code"}},
		{elsewhere, []string{"editguard", "--root", ws, "--session", "al"}, []string{"alice"}},
		{ws, []string{"editguard", "log", "-n", "3", "--session", "al"}, []string{"alice"}},
		{elsewhere, []string{"editguard", "--root", ws, "restore", "a.txt", ""}, []string{"v000001", "v000002"}},
		{ws, []string{"editguard", "diff", "--json", "a.txt", "v0000"}, []string{"v000001", "v000002"}},
		{ws, []string{"editguard", "--session", "alice", "restore", "a."}, []string{"a.txt"}},
		{ws, []string{"editguard", "search", "-e", "x", "a."}, []string{"a.txt"}},
	} {
		got := complete(tc.dir, tc.words...)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("completing %q = %q, want %q", tc.words, got, want)
		}
	}
}

// TestFishCompletesArguments asks fish itself (complete -C) for the
// arguments that are names, with the fish script loaded.
func TestFishCompletesArguments(t *testing.T) {
	fish, err := exec.LookPath("fish")
	if err != nil {
		t.Skip("fish is not installed")
	}
	editguardOnPath(t)
	ws := completionWorkspace(t)
	var script strings.Builder
	if err := fishCompletion(&script, flagSets(context.Background())); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "editguard.fish")
	if err := os.WriteFile(file, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(line string) []string {
		t.Helper()
		cmd := exec.Command(fish, "--no-config", "-c", `source $argv[1]; complete -C $argv[2]`, file, line)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fish: %v\n%s", err, out)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l != "" {
				c, _, _ := strings.Cut(l, "\t")
				got = append(got, c)
			}
		}
		slices.Sort(got)
		return got
	}
	for line, want := range map[string][]string{
		"editguard completion ":             {"bash", "fish", "zsh"},
		"editguard init cl":                 {"claude-code"},
		"editguard --session al":            {"alice"},
		"editguard --root . restore a.txt ": {"v000001", "v000002"},
		"editguard diff a.txt v":            {"v000001", "v000002"},
	} {
		if got := complete(line); !slices.Equal(got, want) {
			t.Errorf("fish completes %q as %q, want %q", line, got, want)
		}
	}
	// A flag of one letter is offered as one: -n, as help spells it.
	if got := complete("editguard log -"); !slices.Contains(got, "-n") || !slices.Contains(got, "--reverse") || slices.Contains(got, "--n") {
		t.Errorf("fish completes the flags of log as %q, want -n and --reverse", got)
	}
}
