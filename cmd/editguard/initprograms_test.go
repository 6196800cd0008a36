package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

// The programs init writes in these tests: the copy of the test binary
// that TestMain puts on PATH as "editguard" (under that name it runs as
// editguard), and editguard-hook built next to it, as go install puts the
// two. The test binary itself lies in a temporary build directory of the
// go command, which init rightly refuses to write.
var testPrograms = sync.OnceValues(func() (string, error) {
	eg, err := exec.LookPath("editguard")
	if err == nil {
		eg, err = filepath.EvalSymlinks(eg)
	}
	if err != nil {
		return "", err
	}
	hook := filepath.Join(filepath.Dir(eg), hookName)
	if !isProgram(hook) {
		// The one builtPrograms built, without version control
		// information, as the test binary has none: both are "devel".
		built, err := builtPrograms()
		if err != nil {
			return "", err
		}
		data, err := os.ReadFile(built[1])
		if err == nil {
			err = os.WriteFile(hook, data, 0o755)
		}
		if err != nil {
			return "", err
		}
	}
	return eg, nil
})

func init() {
	executable = testPrograms
}

// installed returns the paths of editguard and editguard-hook that init
// writes in these tests.
func installed(t *testing.T) (eg, hook string) {
	t.Helper()
	eg, err := testPrograms()
	if err != nil {
		t.Fatal(err)
	}
	return eg, filepath.Join(filepath.Dir(eg), hookName)
}

// noHookServer keeps editguard-hook from starting a hook server for the
// rest of the test: its socket directory would be under a file, so it runs
// editguard hook itself, every time. (init and doctor run each hook command
// once; a server they started would outlive the test.)
//
// The file's path is short: were the socket's path too long for a socket
// address, editguard-hook would use a directory under $TMPDIR instead.
func noHookServer(t *testing.T) {
	t.Helper()
	f, err := os.CreateTemp("", "eg")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	t.Setenv("XDG_RUNTIME_DIR", f.Name())
	if sock, _, _, err := hookwire.Socket(t.TempDir()); err != nil || !strings.HasPrefix(sock, f.Name()+"/") {
		t.Fatalf("the hook socket would be %s (%v), not under %s", sock, err, f.Name())
	}
}

// fakeProgram writes an executable shell script at dir/name and returns
// its path.
func fakeProgram(t *testing.T, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// withPrograms makes init find this program at self, and editguard-hook on
// PATH at onPath ("" for none).
func withPrograms(t *testing.T, self, onPath string) {
	t.Helper()
	oldExe, oldLook := executable, lookPath
	t.Cleanup(func() { executable, lookPath = oldExe, oldLook })
	executable = func() (string, error) { return self, nil }
	lookPath = func(name string) (string, error) {
		if name == hookName && onPath != "" {
			return onPath, nil
		}
		return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
	}
}

// TestResolvePrograms: init writes the absolute path of this program, with
// symbolic links resolved, and of the editguard-hook next to it, else the
// one on PATH; the names alone with --bare-names.
func TestResolvePrograms(t *testing.T) {
	dir := t.TempDir()
	real := fakeProgram(t, filepath.Join(dir, "real"), "editguard", "exit 0")
	hook := fakeProgram(t, filepath.Join(dir, "real"), hookName, "exit 0")
	link := filepath.Join(dir, "bin", "editguard")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	real, _ = filepath.EvalSymlinks(real)
	hook, _ = filepath.EvalSymlinks(hook)

	withPrograms(t, link, "")
	p, err := resolvePrograms("claude-code", false, true)
	if err != nil || p.editguard != real || p.hook != hook {
		t.Errorf("next to each other: %+v, %v; want %s and %s", p, err, real, hook)
	}
	p, err = resolvePrograms("claude-code", false, false)
	if err != nil || p.editguard != real || p.hook != "" {
		t.Errorf("without hooks: %+v, %v", p, err)
	}

	// editguard-hook only on PATH, through a link.
	os.Remove(hook)
	elsewhere := fakeProgram(t, filepath.Join(dir, "other"), hookName, "exit 0")
	hookLink := filepath.Join(dir, "pathdir", hookName)
	os.MkdirAll(filepath.Dir(hookLink), 0o755)
	os.Symlink(elsewhere, hookLink)
	elsewhere, _ = filepath.EvalSymlinks(elsewhere)
	withPrograms(t, link, hookLink)
	if p, err := resolvePrograms("gemini", false, true); err != nil || p.hook != elsewhere {
		t.Errorf("hook on PATH: %+v, %v; want %s", p, err, elsewhere)
	}

	// Names alone: nothing is looked up.
	withPrograms(t, filepath.Join(dir, "missing", "editguard"), "")
	if p, err := resolvePrograms("codex", true, true); err != nil || p != (initPrograms{editguard: "editguard", hook: "editguard-hook"}) {
		t.Errorf("--bare-names: %+v, %v", p, err)
	}
	if p, err := resolvePrograms("codex", true, false); err != nil || p.hook != "" {
		t.Errorf("--bare-names without hooks: %+v, %v", p, err)
	}
}

// TestResolveProgramsMissing: a program init would write that cannot be
// found is an error that names it and how to install it.
func TestResolveProgramsMissing(t *testing.T) {
	dir := t.TempDir()
	eg := fakeProgram(t, dir, "editguard", "exit 0")
	withPrograms(t, eg, "")
	_, err := resolvePrograms("codex", false, true)
	var ge *editguard.Error
	if !errors.As(err, &ge) || ge.Code != editguard.CodeNotFound || !strings.Contains(ge.Message, "editguard-hook is not installed") ||
		!strings.Contains(ge.RecoveryHint, "go install ./cmd/editguard ./cmd/editguard-hook") || !strings.Contains(ge.RecoveryHint, "--bare-names") {
		t.Errorf("no editguard-hook: %v (hint %q)", err, ge.RecoveryHint)
	}
	// This program gone (replaced while it runs, say).
	withPrograms(t, filepath.Join(dir, "gone", "editguard"), "")
	if _, err := resolvePrograms("claude-code", false, false); !errors.As(err, &ge) || ge.Code != editguard.CodeNotFound {
		t.Errorf("this program gone: %v", err)
	}
}

// TestInitRefusesMissingHook: with editguard-hook neither next to editguard
// nor on PATH, init with hooks (and init codex, which writes hooks too)
// refuses, says what is missing and how to install it, and writes nothing.
func TestInitRefusesMissingHook(t *testing.T) {
	eg := fakeProgram(t, t.TempDir(), "editguard", "exit 0")
	withPrograms(t, eg, "")
	for _, args := range [][]string{{"codex"}, {"claude-code", "--hooks"}, {"gemini", "--hooks"}} {
		root := t.TempDir()
		code, out, errs := cliRun(t, root, append([]string{"init"}, args...)...)
		if code != exitError || !strings.Contains(errs, "NOT_FOUND: editguard-hook is not installed: it is neither next to "+eg+" nor on PATH") ||
			!strings.Contains(errs, "nothing was written") || !strings.Contains(errs, "hint: install editguard and editguard-hook: git clone https://github.com/editguard/editguard") {
			t.Errorf("init %v: exit %d\n%s%s", args, code, out, errs)
		}
		if entries, _ := os.ReadDir(root); len(entries) != 0 {
			t.Errorf("init %v wrote %v", args, entries)
		}
	}
}

// TestInGoBuildDir tells the go command's temporary build directories from
// other paths.
func TestInGoBuildDir(t *testing.T) {
	t.Setenv("GOCACHE", "/cache/go-build")
	for p, want := range map[string]bool{
		"/tmp/go-build1234567/b001/exe/editguard":        true,
		"/var/folders/x/T/go-build99/b001/exe/editguard": true,
		"/home/me/go/bin/editguard":                      false,
		"/home/me/go-builds/bin/editguard":               false,
		"/opt/go-build/bin/editguard":                    false,
		"/opt/go-buildx1/editguard":                      false,
		"/cache/go-build/3f/3f9a-d/editguard":            true, // GOCACHE below
		"/cache/go-build-other/editguard":                false,
	} {
		if got := inGoBuildDir(p); got != want {
			t.Errorf("inGoBuildDir(%q) = %v", p, got)
		}
	}
}

// TestInitRefusesGoRun: this test binary, which the go command built in a
// temporary directory as go run does, is not written into a configuration:
// init refuses and says to install editguard first; --bare-names is
// allowed.
func TestInitRefusesGoRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !inGoBuildDir(self) {
		t.Skipf("the test binary %s is not in a build directory of the go command", self)
	}
	old := executable
	executable = os.Executable
	defer func() { executable = old }()
	root := t.TempDir()
	code, out, errs := cliRun(t, root, "init", "claude-code")
	if code != exitError || !strings.Contains(errs, "INVALID_ARGUMENT: this editguard runs from "+self+", a build directory of go run") ||
		!strings.Contains(errs, "nothing was written") || !strings.Contains(errs, "go install ./cmd/editguard ./cmd/editguard-hook") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("init wrote %v", entries)
	}
	// With the names alone there is no path to get wrong.
	if code, out, errs := cliRun(t, root, "init", "claude-code", "--bare-names"); code != 0 || !strings.Contains(readFile(t, root, ".mcp.json"), `"command": "editguard",`) {
		t.Errorf("--bare-names: exit %d\n%s%s", code, out, errs)
	}
}

// TestInitBareNames: --bare-names writes the names alone, and the check
// after writing looks them up on PATH: found, init succeeds; not found,
// the configuration stays written and init says loudly that it does not
// work.
func TestInitBareNames(t *testing.T) {
	root := t.TempDir()
	rep := runInitJSON(t, root, "codex", "--bare-names")
	d, _ := parseTOML(readFile(t, root, ".codex/config.toml"))
	if got := d.get("mcp_servers", "editguard", "command"); got != "editguard" {
		t.Errorf("command %v, want editguard", got)
	}
	if !strings.Contains(readFile(t, root, ".codex/config.toml"), "command = \"editguard-hook --root . --client codex || exit 2\"") {
		t.Errorf("the hooks do not run editguard-hook by name:\n%s", readFile(t, root, ".codex/config.toml"))
	}
	if len(failedChecks(rep.Checks)) != 0 || len(rep.Checks) == 0 {
		t.Errorf("checks with both programs on PATH: %+v", rep.Checks)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "--bare-names: the client starts editguard by its name alone") {
		t.Errorf("notes: %q", rep.Notes)
	}

	// Neither program on PATH.
	t.Setenv("PATH", t.TempDir())
	root = t.TempDir()
	noHookServer(t)
	code, out, errs := cliRun(t, root, "init", "gemini", "--hooks", "--bare-names")
	if code != exitError || !strings.Contains(out, "check: PROBLEM gemini program: .gemini/settings.json names editguard-hook by its name alone, and it is not on this PATH") ||
		!strings.Contains(errs, "editguard: the setup init wrote does not work: ") ||
		!strings.Contains(errs, "until this is fixed, Gemini CLI is not guarded by editguard. The configuration was written and stays as it is; run editguard doctor gemini once it is fixed.") {
		t.Errorf("not on PATH: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(readFile(t, root, ".gemini/settings.json"), `"command": "editguard-hook --root . --client gemini || exit 2"`) {
		t.Errorf("the configuration was not written:\n%s", readFile(t, root, ".gemini/settings.json"))
	}
	// The flag is in init's help.
	if _, out, _ := cliRun(t, root, "help", "init"); !strings.Contains(out, "--bare-names") {
		t.Errorf("init's help lacks --bare-names:\n%s", out)
	}
}

// TestInitCheckFails: a program that does not answer as editguard makes
// init fail after writing, saying why, and the configuration stays.
func TestInitCheckFails(t *testing.T) {
	eg := fakeProgram(t, t.TempDir(), "editguard", "echo 'cannot start: broken install' >&2; exit 3")
	withPrograms(t, eg, "")
	root := t.TempDir()
	code, out, errs := cliRun(t, root, "init", "claude-code", "--json")
	if code != exitError {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	var rep initReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var server *setupCheck
	for _, c := range rep.Checks {
		if c.Check == "server" {
			server = c
		}
	}
	if server == nil || server.OK || !strings.Contains(server.Message, "does not answer an MCP initialize: it ended before answering (exit status 3); it printed: cannot start: broken install") {
		t.Errorf("server check: %+v", server)
	}
	if !strings.Contains(errs, "the setup init wrote does not work") {
		t.Errorf("stderr: %s", errs)
	}
	if got := get(readJSON(t, root, ".mcp.json"), "mcpServers", "editguard", "command"); got != eg {
		t.Errorf("command %v, want %s written", got, eg)
	}
}

// TestInitUpdatesBareNames: an entry an earlier init wrote with a bare name,
// or naming a program that is gone, gets the installed program's path; one
// naming another installed editguard is left as it is.
func TestInitUpdatesBareNames(t *testing.T) {
	eg, hook := installed(t)
	root := t.TempDir()
	writeFile(t, root, ".mcp.json", `{"mcpServers": {"editguard": {"type": "stdio", "command": "editguard", "args": ["--root", ".", "serve"]}}}`+"\n")
	writeFile(t, root, ".codex/config.toml", "tool_output_token_limit = 40000\n\n[mcp_servers.editguard]\ncommand = \"/gone/bin/editguard\"\nargs = [\"--root\", \".\", \"serve\"]\ndefault_tools_approval_mode = \"approve\"\n\n"+
		"[[hooks.PreToolUse]]\nmatcher = \"^(apply_patch|Bash)$\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"editguard-hook --root . --client codex\"\n\n"+
		"[[hooks.PostToolUse]]\nmatcher = \"^(apply_patch|Bash)$\"\n\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"editguard --root . hook --client codex\"\n")
	writeFile(t, root, ".gemini/settings.json", `{"hooks": {"BeforeTool": [{"matcher": "^(write_file|replace|run_shell_command)$", "hooks": [{"name": "editguard", "type": "command", "command": "editguard-hook --root . --client gemini"}]}]}}`)

	f := runInitJSON(t, root, "claude-code").Files[0]
	if f.Action != "changed" || len(f.Added) != 1 || f.Added[0] != "mcpServers.editguard: command "+eg+", was editguard" {
		t.Errorf(".mcp.json: %+v", f)
	}
	if got := get(readJSON(t, root, ".mcp.json"), "mcpServers", "editguard", "command"); got != eg {
		t.Errorf(".mcp.json command %v", got)
	}
	f = runInitJSON(t, root, "codex").Files[0]
	if f.Action != "changed" || len(f.Added) != 3 || len(f.Kept) != 0 || !strings.Contains(f.Added[0], "command "+eg+", was /gone/bin/editguard") ||
		!strings.Contains(f.Added[2], "runs "+hook+" --root . --client codex || exit 2, was editguard --root . hook --client codex") {
		t.Errorf("config.toml: %+v", f)
	}
	c := readFile(t, root, ".codex/config.toml")
	if strings.Count(c, "command = \""+hook+" --root . --client codex || exit 2\"") != 2 || !strings.Contains(c, "command = \""+eg+"\"") {
		t.Errorf("config.toml:\n%s", c)
	}
	f = runInitJSON(t, root, "gemini", "--hooks").Files[0]
	if f.Action != "changed" || len(f.Added) != 2 || !strings.Contains(f.Added[0], "runs "+hook+" --root . --client gemini || exit 2, was editguard-hook --root . --client gemini") {
		t.Errorf("gemini: %+v", f)
	}
	// Another installed editguard is left as it is, as are the names
	// alone with --bare-names.
	other := filepath.Join(t.TempDir(), "editguard")
	if err := os.Link(eg, other); err != nil {
		data, _ := os.ReadFile(eg)
		os.WriteFile(other, data, 0o755)
	}
	root = t.TempDir()
	text := `{"mcpServers": {"editguard": {"type": "stdio", "command": "` + other + `", "args": ["--root", ".", "serve"]}}}` + "\n"
	writeFile(t, root, ".mcp.json", text)
	if f := runInitJSON(t, root, "claude-code").Files[0]; f.Action != "unchanged" || len(f.Present) != 1 {
		t.Errorf("another installed editguard: %+v", f)
	}
	writeFile(t, root, ".mcp.json", `{"mcpServers": {"editguard": {"type": "stdio", "command": "editguard", "args": ["--root", ".", "serve"]}}}`)
	if f := runInitJSON(t, root, "claude-code", "--bare-names").Files[0]; f.Action != "unchanged" {
		t.Errorf("--bare-names over a bare name: %+v", f)
	}
}

// TestCommandWords splits commands as a shell does for quoting.
func TestCommandWords(t *testing.T) {
	for c, want := range map[string][]string{
		`/a/editguard-hook --root "$CLAUDE_PROJECT_DIR"`: {"/a/editguard-hook", "--root", "$CLAUDE_PROJECT_DIR"},
		`'/my dir/editguard-hook' --root . --client x`:   {"/my dir/editguard-hook", "--root", ".", "--client", "x"},
		`/it\'s/editguard --root "a \"b\"" hook`:         {"/it's/editguard", "--root", `a "b"`, "hook"},
		"  editguard-hook\t--root  . ":                   {"editguard-hook", "--root", "."},
	} {
		got, _ := commandWords(c)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("commandWords(%q) = %q, want %q", c, got, want)
		}
	}
	// A path that needs quoting is quoted, and still recognized.
	c := hookCommand("codex", "/my dir/editguard-hook")
	if c != `'/my dir/editguard-hook' --root . --client codex || exit 2` || !isHookCommand(c) {
		t.Errorf("hookCommand: %q", c)
	}
	if compareHookCommand("codex", "editguard-hook --root . --client codex", c) != commandReplace {
		t.Errorf("a bare name is not replaced")
	}
	if compareHookCommand("codex", "/other/editguard-hook --root . --client codex || exit 2", c) != commandReplace {
		t.Errorf("a program that is gone is not replaced")
	}
	if compareHookCommand("codex", "editguard-hook --root . --client codex --fail-open", c) != commandOther {
		t.Errorf("a command with other settings is replaced")
	}
}
