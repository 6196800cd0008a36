package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// runDoctorJSON runs doctor --json on root and returns its exit code and
// report.
func runDoctorJSON(t *testing.T, root string, args ...string) (int, *doctorReport) {
	t.Helper()
	noHookServer(t)
	code, out, errs := cliRun(t, root, append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: exit %d, %v\n%s%s", code, err, out, errs)
	}
	return code, &rep
}

// findCheck returns the checks of client and kind.
func findChecks(rep *doctorReport, client, kind string) []*setupCheck {
	var cs []*setupCheck
	for _, c := range rep.Checks {
		if c.Client == client && c.Check == kind {
			cs = append(cs, c)
		}
	}
	return cs
}

// TestDoctorWorking: after init of each client, MCP server and hooks,
// every check of doctor is ok, and it exits 0.
func TestDoctorWorking(t *testing.T) {
	root := t.TempDir()
	for _, c := range [][]string{{"claude-code"}, {"claude-code", "--hooks"}, {"gemini"}, {"gemini", "--hooks"}, {"codex"}, {"cursor"}} {
		runInitJSON(t, root, c[0], c[1:]...)
	}
	code, rep := runDoctorJSON(t, root)
	if code != 0 || !rep.OK {
		t.Fatalf("exit %d: %+v", code, failedChecks(rep.Checks))
	}
	for _, client := range []string{"claude-code", "gemini", "codex", "cursor"} {
		if len(findChecks(rep, client, "server")) != 1 {
			t.Errorf("%s: no server check", client)
		}
		for _, kind := range []string{"program", "version"} {
			if len(findChecks(rep, client, kind)) == 0 {
				t.Errorf("%s: no %s check", client, kind)
			}
		}
		if client != "cursor" && (len(findChecks(rep, client, "hook")) != 1 || len(findChecks(rep, client, "settings")) != 1) {
			t.Errorf("%s: hook or settings checks missing: %+v", client, rep.Checks)
		}
	}
	if ws := findChecks(rep, "", "workspace"); len(ws) != 1 || !ws[0].OK {
		t.Errorf("workspace: %+v", ws)
	}
	// The text form says the same, and doctor CLIENT checks one.
	code, out, errs := cliRun(t, root, "doctor", "gemini")
	if code != 0 || !strings.Contains(out, "ok      gemini server: the MCP server in .gemini/settings.json (") ||
		!strings.Contains(out, "ok      gemini hook: the hook command in .gemini/settings.json (") || strings.Contains(out, "claude-code") ||
		!strings.HasSuffix(out, " checks ok\n") {
		t.Errorf("doctor gemini: exit %d\n%s%s", code, out, errs)
	}
}

// TestDoctorBroken: a configuration naming a program that is not there, or
// a name alone not on PATH, a hook that does not answer as editguard, an
// older program, and settings init writes that are missing are each a
// problem with what to do; doctor exits 1.
func TestDoctorBroken(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(t.TempDir(), "gone", "editguard")
	writeFile(t, root, ".mcp.json", `{"mcpServers": {"editguard": {"type": "stdio", "command": "`+missing+`", "args": ["--root", ".", "serve"]}}}`)
	writeFile(t, root, ".claude/settings.local.json", `{"permissions": {"deny": ["Read"]}}`)
	code, out, errs := cliRun(t, root, "doctor", "claude-code")
	if code != exitError ||
		!strings.Contains(out, "PROBLEM claude-code program: .mcp.json names "+missing+", which does not exist: the client cannot start it, and is not guarded\n        fix: install editguard and editguard-hook: git clone") ||
		!strings.Contains(out, "PROBLEM claude-code settings: .claude/settings.local.json: permissions.deny lacks Edit, Write, MultiEdit, NotebookEdit") ||
		!strings.Contains(out, "permissions.allow lacks mcp__editguard") ||
		!strings.Contains(out, "checks found a problem: editguard does not guard this setup as configured until they are fixed") {
		t.Errorf("missing program: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "server:") {
		t.Errorf("the server of a missing program was started:\n%s", out)
	}

	// A name alone, not on this PATH; a hook program that answers
	// nothing; an output limit that is too low.
	t.Setenv("PATH", t.TempDir())
	root = t.TempDir()
	old := fakeProgram(t, t.TempDir(), hookName, "cat >/dev/null; exit 0")
	writeFile(t, root, ".codex/config.toml", "tool_output_token_limit = 8000\n\n[mcp_servers.editguard]\ncommand = \"editguard\"\nargs = [\"--root\", \".\", \"serve\"]\ndefault_tools_approval_mode = \"approve\"\n\n"+
		"[[hooks.PreToolUse]]\nmatcher = \"^(apply_patch|Bash)$\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \""+old+" --root . --client codex\"\n")
	code, rep := runDoctorJSON(t, root)
	if code != exitError || rep.OK {
		t.Errorf("exit %d, ok %v", code, rep.OK)
	}
	want := map[string]string{
		"program":  ".codex/config.toml names editguard by its name alone, and it is not on this PATH",
		"hook":     "does not work: it answered \"nothing\", not editguard's answer to a probe",
		"version":  "cannot tell the version of " + old,
		"settings": "tool_output_token_limit is 8000, less than 40000",
	}
	for kind, msg := range want {
		found := false
		for _, c := range findChecks(rep, "codex", kind) {
			found = found || !c.OK && strings.Contains(c.Message, msg) && c.Fix != ""
		}
		if !found {
			t.Errorf("no %s problem %q in %+v", kind, msg, findChecks(rep, "codex", kind))
		}
	}
	found := false
	for _, c := range findChecks(rep, "codex", "settings") {
		found = found || strings.Contains(c.Message, "no editguard hook on hooks.PostToolUse runs for apply_patch, Bash")
	}
	if !found {
		t.Errorf("the missing PostToolUse hook is not reported: %+v", rep.Checks)
	}
}

// TestDoctorVersion: a program of another version than this editguard is
// a problem.
func TestDoctorVersion(t *testing.T) {
	root := t.TempDir()
	runInitJSON(t, root, "claude-code")
	old := readBuildInfo
	readBuildInfo = func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, true
	}
	defer func() { readBuildInfo = old }()
	code, rep := runDoctorJSON(t, root)
	v := findChecks(rep, "claude-code", "version")
	if code != exitError || len(v) != 1 || v[0].OK || !strings.Contains(v[0].Message, "is editguard devel, and this editguard is v9.9.9") ||
		!strings.Contains(v[0].Fix, "both from one build") {
		t.Errorf("exit %d: %+v", code, v)
	}
}

// TestDoctorUntrustedState: a state directory written under another user
// key is a problem of the workspace, with what to do.
func TestDoctorUntrustedState(t *testing.T) {
	root := t.TempDir()
	t.Setenv("EDITGUARD_STATE_HOME", t.TempDir())
	w, err := editguard.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.NewSession("s").Write(t.Context(), "a.txt", "a\n", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Setenv("EDITGUARD_STATE_HOME", t.TempDir())
	code, rep := runDoctorJSON(t, root)
	ws := findChecks(rep, "", "workspace")
	if code != exitError || len(ws) != 1 || ws[0].OK || !strings.Contains(ws[0].Message, "the state directory is not trusted") ||
		!strings.Contains(ws[0].Fix, "--set-aside") {
		t.Errorf("exit %d: %+v", code, ws)
	}
	// Nothing configured is a problem too.
	if cs := findChecks(rep, "", "config"); len(cs) != 1 || !strings.Contains(cs[0].Message, "no client is configured") {
		t.Errorf("config: %+v", cs)
	}
}

// TestDoctorUsage: an unknown client is a usage error; a client that is not
// configured, or a file that does not parse, is a problem.
func TestDoctorUsage(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cliRun(t, root, "doctor", "vim"); code != exitUsage || !strings.Contains(errs, `unknown client "vim"`) {
		t.Errorf("doctor vim: exit %d %q", code, errs)
	}
	code, rep := runDoctorJSON(t, root, "cursor")
	if cs := findChecks(rep, "cursor", "config"); code != exitError || len(cs) != 1 || !strings.Contains(cs[0].Fix, "editguard init cursor") {
		t.Errorf("cursor not configured: exit %d %+v", code, rep.Checks)
	}
	writeFile(t, root, ".gemini/settings.json", "{\n")
	code, rep = runDoctorJSON(t, root)
	if cs := findChecks(rep, "gemini", "config"); code != exitError || len(cs) != 1 || !strings.Contains(cs[0].Message, ".gemini/settings.json is not valid JSON") {
		t.Errorf("broken file: exit %d %+v", code, rep.Checks)
	}
	if _, err := os.Stat(filepath.Join(root, ".mcp.json")); err == nil {
		t.Errorf("doctor wrote a configuration")
	}
}
