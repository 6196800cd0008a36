package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFlagSetsTouchNothing checks how completion and man learn the flags:
// every command that takes flags hands its flag set over before it does
// anything, so that nothing is created in the directory it runs in.
func TestFlagSetsTouchNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	sets := flagSets(context.Background())
	var none []string
	for _, c := range commandList {
		if sets[c.name].Lookup("root") == nil {
			none = append(none, c.name)
		}
	}
	if len(none) != 0 {
		t.Errorf("commands whose flags were not learnt: %v, want none", none)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("learning the flags created %v", ents)
	}
	if sets["read"].Lookup("offset") == nil || sets["edit"].Lookup("old") == nil {
		t.Error("the flag sets lack the commands' own flags")
	}
}

// TestBashCompletion runs the bash script in bash, as bash calls it.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	var script bytes.Buffer
	if err := bashCompletion(&script, flagSets(context.Background())); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "editguard.bash")
	if err := os.WriteFile(file, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); _editguard; printf '%s\n' "${COMPREPLY[@]}"`, "bash", file)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"editguard", "re"}, []string{"read", "replay", "restore", "rewind"}},
		{[]string{"editguard", "--root", "src", "wr"}, []string{"write"}},
		{[]string{"editguard", "--ro"}, []string{"--root"}},
		{[]string{"editguard", "read", "--of"}, []string{"--offset"}},
		{[]string{"editguard", "--session", "s", "edit", "--no-m"}, []string{"--no-merge"}},
	} {
		if got := complete(tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("completing %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}

// TestShellCompletionsParse checks the scripts with each shell's own
// syntax check, for the shells installed here.
func TestShellCompletionsParse(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			bin, err := exec.LookPath(sh)
			if err != nil {
				t.Skip(sh + " is not installed")
			}
			code, out, errs := cliRun(t, t.TempDir(), "completion", sh)
			if code != 0 || out == "" {
				t.Fatalf("completion %s: exit %d, %s", sh, code, errs)
			}
			file := filepath.Join(t.TempDir(), "editguard."+sh)
			os.WriteFile(file, []byte(out), 0o644)
			if msg, err := exec.Command(bin, "-n", file).CombinedOutput(); err != nil {
				t.Errorf("%s -n rejects the script: %v\n%s", sh, err, msg)
			}
		})
	}
}

// TestManPage renders the manual page with groff and its warnings on: no
// warning, every command has a section, and a help text's dots and
// backslashes stay text.
func TestManPage(t *testing.T) {
	code, out, errs := cliRun(t, t.TempDir(), "man")
	if code != 0 || !strings.HasPrefix(out, ".TH EDITGUARD 1 ") {
		t.Fatalf("man: exit %d, %s\n%.200s", code, errs, out)
	}
	for _, c := range commandList {
		if !strings.Contains(out, ".SS \"editguard "+roffEscape(c.name)) {
			t.Errorf("the page has no section for %s", c.name)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, ".") && !slices.Contains([]string{".TH", ".SH", ".SS", ".PP", ".TP", ".RS", ".RE", ".nf", ".fi", ".B"}, strings.Fields(line)[0]) {
			t.Errorf("a text line reads as a request: %q", line)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed")
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = strings.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
		t.Errorf("groff warns: %v\n%s", err, msg)
	}
}

func TestDidYouMean(t *testing.T) {
	for name, want := range map[string]string{
		"raed": `; did you mean "read"?`, "stat": `; did you mean "state"?`, "lo": `; did you mean "log"?`,
		"complet": `; did you mean "completion"?`, "frobnicate": "", "r": "",
	} {
		if got := didYouMean(name); got != want {
			t.Errorf("didYouMean(%q) = %q, want %q", name, got, want)
		}
	}
	code, _, errs := cliRun(t, t.TempDir(), "wirte")
	if code != exitUsage || !strings.Contains(errs, `unknown command "wirte"; did you mean "write"?`) {
		t.Errorf("editguard wirte: exit %d, %s", code, errs)
	}
}
