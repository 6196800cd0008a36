package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// cliRun runs editguard in-process on root and returns the exit code,
// stdout and stderr.
func cliRun(t testing.TB, root string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--root", root}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func runInitJSON(t *testing.T, root, client string, extra ...string) *initReport {
	t.Helper()
	noHookServer(t)
	code, out, errs := cliRun(t, root, append([]string{"init", client, "--json"}, extra...)...)
	if code != 0 {
		t.Fatalf("init %s: exit %d\n%s%s", client, code, out, errs)
	}
	var rep initReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("init %s --json: %v\n%s", client, err, out)
	}
	return &rep
}

func writeFile(t *testing.T, root, name, text string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func readJSON(t *testing.T, root, name string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(readFile(t, root, name)), &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// get walks v along path.
func get(v any, path ...string) any {
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func strs(v ...string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// initFiles are the files init writes for each client.
var initFiles = map[string][]string{
	"claude-code": {".mcp.json", ".claude/settings.local.json"},
	"gemini":      {".gemini/settings.json"},
	"codex":       {".codex/config.toml", "AGENTS.md"},
	"cursor":      {".cursor/mcp.json"},
}

// checkInit checks the entries init must have made for client in root.
func checkInit(t *testing.T, root, client string) {
	t.Helper()
	serve := strs("--root", ".", "serve")
	eg, _ := installed(t)
	switch client {
	case "claude-code":
		m := readJSON(t, root, ".mcp.json")
		want := map[string]any{"type": "stdio", "command": eg, "args": serve}
		if got := get(m, "mcpServers", "editguard"); !reflect.DeepEqual(got, want) {
			t.Errorf(".mcp.json: mcpServers.editguard = %v, want %v", got, want)
		}
		s := readJSON(t, root, ".claude/settings.local.json")
		for _, tool := range claudeDenied {
			if !contains(get(s, "permissions", "deny"), tool) {
				t.Errorf("permissions.deny lacks %s: %v", tool, get(s, "permissions", "deny"))
			}
		}
		if !contains(get(s, "permissions", "allow"), "mcp__editguard") {
			t.Errorf("permissions.allow lacks mcp__editguard: %v", get(s, "permissions", "allow"))
		}
		if !contains(get(s, "enabledMcpjsonServers"), "editguard") {
			t.Errorf("enabledMcpjsonServers lacks editguard: %v", get(s, "enabledMcpjsonServers"))
		}
		if got := get(s, "env", "ENABLE_TOOL_SEARCH"); got != "false" {
			t.Errorf("env.ENABLE_TOOL_SEARCH = %v, want \"false\"", got)
		}
	case "gemini":
		s := readJSON(t, root, ".gemini/settings.json")
		want := map[string]any{"command": eg, "args": serve, "trust": true}
		if got := get(s, "mcpServers", "editguard"); !reflect.DeepEqual(got, want) {
			t.Errorf("mcpServers.editguard = %v, want %v", got, want)
		}
		ex := get(s, "tools", "exclude")
		if ex == nil {
			ex = get(s, "excludeTools")
		}
		for _, tool := range geminiExcluded {
			if !contains(ex, tool) {
				t.Errorf("excluded tools lack %s: %v", tool, ex)
			}
		}
	case "codex":
		d, err := parseTOML(readFile(t, root, ".codex/config.toml"))
		if err != nil {
			t.Fatalf("config.toml: %v", err)
		}
		if got := d.get("mcp_servers", "editguard", "command"); got != eg {
			t.Errorf("mcp_servers.editguard.command = %v, want %s", got, eg)
		}
		if got := d.get("mcp_servers", "editguard", "args"); !reflect.DeepEqual(got, serve) {
			t.Errorf("mcp_servers.editguard.args = %v", got)
		}
		if got := d.get("mcp_servers", "editguard", "default_tools_approval_mode"); got != "approve" {
			t.Errorf("mcp_servers.editguard.default_tools_approval_mode = %v", got)
		}
	case "cursor":
		m := readJSON(t, root, ".cursor/mcp.json")
		want := map[string]any{"command": eg, "args": strs("--root", "${workspaceFolder}", "serve")}
		if got := get(m, "mcpServers", "editguard"); !reflect.DeepEqual(got, want) {
			t.Errorf("mcpServers.editguard = %v, want %v", got, want)
		}
	}
}

func contains(arr any, s string) bool {
	a, _ := arr.([]any)
	for _, v := range a {
		if v == s {
			return true
		}
	}
	return false
}

func TestInitEmpty(t *testing.T) {
	for client, files := range initFiles {
		t.Run(client, func(t *testing.T) {
			root := t.TempDir()
			rep := runInitJSON(t, root, client)
			if len(rep.Files) != len(files) {
				t.Fatalf("files %v, want %v", rep.Files, files)
			}
			for i, f := range rep.Files {
				if f.Path != files[i] || f.Action != "created" || len(f.Added) == 0 {
					t.Errorf("file %d: %+v, want %s created", i, f, files[i])
				}
			}
			checkInit(t, root, client)
			before := map[string]string{}
			for _, f := range files {
				before[f] = readFile(t, root, f)
			}
			// A second run changes nothing.
			rep = runInitJSON(t, root, client)
			for _, f := range rep.Files {
				if f.Action != "unchanged" || len(f.Added) != 0 || len(f.Present) == 0 {
					t.Errorf("second run: %+v, want unchanged with everything present", f)
				}
				if got := readFile(t, root, f.Path); got != before[f.Path] {
					t.Errorf("second run changed %s:\n%s\nwas\n%s", f.Path, got, before[f.Path])
				}
			}
		})
	}
}

func TestInitDryRun(t *testing.T) {
	root := t.TempDir()
	eg, _ := installed(t)
	code, out, errs := cliRun(t, root, "init", "claude-code", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if !strings.Contains(out, ".mcp.json: would be created") || !strings.Contains(out, `+      "command": "`+eg+`",`) || strings.Contains(out, "check: ") {
		t.Errorf("dry run output lacks the plan or the diff:\n%s", out)
	}
	for _, f := range initFiles["claude-code"] {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("dry run wrote %s", f)
		}
	}
}

// TestInitMerges runs init over configurations that hold other settings:
// they survive, in their order and layout, and only editguard's entries
// are added.
func TestInitMerges(t *testing.T) {
	root := t.TempDir()
	mcp := "{\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other-server\", \"args\": []}\n    },\n    \"zzz\": 1\n}\n"
	settings := "{\r\n\t\"model\": \"opus\",\r\n\t\"permissions\": {\r\n\t\t\"allow\": [\r\n\t\t\t\"Bash(go test:*)\"\r\n\t\t],\r\n\t\t\"deny\": [\"Read\"]\r\n\t},\r\n\t\"hooks\": {}\r\n}\r\n"
	gemini := `{"theme": "Dracula", "excludeTools": ["run_shell_command"], "mcpServers": {}}`
	codex := "# my settings\nmodel = \"o3\"   # the model\n\n[mcp_servers.other]\ncommand = \"x\"\nargs = [\n  \"a\", # first\n  'b',\n]\nenv = { K = \"v\" }\n\n[profiles.fast]\nmodel = \"\"\"\nmini\"\"\"\n"
	cursor := "{}"
	writeFile(t, root, ".mcp.json", mcp)
	writeFile(t, root, ".claude/settings.local.json", settings)
	writeFile(t, root, ".gemini/settings.json", gemini)
	writeFile(t, root, ".codex/config.toml", codex)
	writeFile(t, root, ".cursor/mcp.json", cursor)
	agents := "# Project\n\nRun go test ./... before a commit."
	writeFile(t, root, "AGENTS.md", agents)

	for client := range initFiles {
		rep := runInitJSON(t, root, client)
		for _, f := range rep.Files {
			if f.Action != "changed" {
				t.Errorf("%s %s: %s, want changed", client, f.Path, f.Action)
			}
		}
		checkInit(t, root, client)
	}

	// Everything that was there is still there.
	if got := readFile(t, root, "AGENTS.md"); !strings.HasPrefix(got, agents+"\n\n"+agentsBegin+"\n") || !strings.HasSuffix(got, agentsEnd+"\n") {
		t.Errorf("AGENTS.md = %q, want the project's text, then editguard's section", got)
	}
	gotMCP := readFile(t, root, ".mcp.json")
	if !strings.HasPrefix(gotMCP, "{\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other-server\", \"args\": []},\n        \"editguard\": {\n            \"type\": \"stdio\",") ||
		!strings.HasSuffix(gotMCP, "\n    },\n    \"zzz\": 1\n}\n") {
		t.Errorf(".mcp.json lost its layout:\n%s", gotMCP)
	}
	s := readFile(t, root, ".claude/settings.local.json")
	if !strings.HasPrefix(s, "{\r\n\t\"model\": \"opus\",\r\n\t\"permissions\": {\r\n\t\t\"allow\": [\r\n\t\t\t\"Bash(go test:*)\",\r\n\t\t\t\"mcp__editguard\"\r\n\t\t],\r\n\t\t\"deny\": [\"Read\", \"Edit\",") {
		t.Errorf(".claude/settings.local.json lost its layout or line endings:\n%q", s)
	}
	sj := readJSON(t, root, ".claude/settings.local.json")
	if get(sj, "model") != "opus" || get(sj, "hooks") == nil || !contains(get(sj, "permissions", "allow"), "Bash(go test:*)") {
		t.Errorf("settings lost entries: %v", sj)
	}
	if n := strings.Count(s, `"Read"`); n != 1 {
		t.Errorf(`"Read" appears %d times in deny`, n)
	}
	g := readJSON(t, root, ".gemini/settings.json")
	if get(g, "theme") != "Dracula" || !contains(get(g, "excludeTools"), "run_shell_command") || get(g, "tools") != nil {
		t.Errorf("gemini settings: %v (the old format keeps excludeTools)", g)
	}
	c := readFile(t, root, ".codex/config.toml")
	if !strings.HasPrefix(c, "# my settings\nmodel = \"o3\"   # the model\n\ntool_output_token_limit = 40000\n\n[mcp_servers.other]") ||
		!strings.HasPrefix(withoutOutputLimit(c), codex) {
		t.Errorf("config.toml: what was there changed:\n%s", c)
	}
	d, err := parseTOML(c)
	if err != nil || d.get("mcp_servers", "other", "command") != "x" || d.get("profiles", "fast", "model") != "mini" {
		t.Errorf("config.toml: %v %v", err, d)
	}
}

// TestInitKeepsOtherEditguard leaves an editguard entry with other
// settings as it is, and says so.
func TestInitKeepsOtherEditguard(t *testing.T) {
	root := t.TempDir()
	mcp := `{"mcpServers": {"editguard": {"command": "editguard", "args": ["--root", "/src", "serve", "--approve", "ask"]}}}` + "\n"
	settings := `{"env": {"ENABLE_TOOL_SEARCH": "true"}}` + "\n"
	codex := "[mcp_servers]\neditguard = { command = \"/opt/eg\", args = [\"serve\"] }\n"
	writeFile(t, root, ".mcp.json", mcp)
	writeFile(t, root, ".claude/settings.local.json", settings)
	writeFile(t, root, ".codex/config.toml", codex)
	code, out, errs := cliRun(t, root, "init", "claude-code")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if got := readFile(t, root, ".mcp.json"); got != mcp {
		t.Errorf(".mcp.json changed:\n%s", got)
	}
	if !strings.Contains(out, "left as it is: mcpServers.editguard has other settings") ||
		!strings.Contains(out, `left as it is: env.ENABLE_TOOL_SEARCH is "true", not "false"`) {
		t.Errorf("output does not report the entries left alone:\n%s", out)
	}
	// The server entry is left alone; the hooks for Codex's own tools,
	// which are not there, are added after what was there.
	rep := runInitJSON(t, root, "codex")
	if f := rep.Files[0]; f.Action != "changed" || len(f.Kept) != 1 || len(f.Added) != 3 {
		t.Errorf("codex: %+v", f)
	}
	if got := readFile(t, root, ".codex/config.toml"); !strings.HasPrefix(withoutOutputLimit(got), codex) {
		t.Errorf("config.toml: what was there changed:\n%s", got)
	}
}

// TestInitGeminiExcludedNames: Gemini CLI's built-in tools are excluded by
// class, and an exclusion by a name editguard's tools also have (such as
// read_file, which hides mcp_editguard_read_file too) is reported, not
// removed.
func TestInitGeminiExcludedNames(t *testing.T) {
	root := t.TempDir()
	gemini := "{\n  \"tools\": {\"exclude\": [\"read_file\", \"write_file\", \"replace\", \"web_fetch\"]}\n}\n"
	writeFile(t, root, ".gemini/settings.json", gemini)
	rep := runInitJSON(t, root, "gemini")
	f := rep.Files[0]
	if f.Action != "changed" {
		t.Errorf("action %s, want changed", f.Action)
	}
	if len(f.Kept) != 1 || !strings.Contains(f.Kept[0], "tools.exclude lists read_file, write_file, which hides editguard's tool") {
		t.Errorf("kept: %q", f.Kept)
	}
	s := readJSON(t, root, ".gemini/settings.json")
	ex := get(s, "tools", "exclude")
	for _, name := range []string{"read_file", "write_file", "replace", "web_fetch", "ReadFileTool", "WriteFileTool", "EditTool"} {
		if !contains(ex, name) {
			t.Errorf("tools.exclude lacks %s: %v", name, ex)
		}
	}
	// A fresh configuration names no editguard tool.
	root = t.TempDir()
	if f := runInitJSON(t, root, "gemini").Files[0]; len(f.Kept) != 0 {
		t.Errorf("fresh configuration: kept %q", f.Kept)
	}
}

// TestInitRefusesBrokenFiles: a file that does not parse is an error, and
// no file is written.
func TestInitRefusesBrokenFiles(t *testing.T) {
	for _, tt := range []struct{ client, file, text, want string }{
		{"claude-code", ".claude/settings.local.json", "{\n  \"model\": \"opus\",\n}\n", ".claude/settings.local.json: not valid JSON: line 3"},
		{"claude-code", ".mcp.json", `{"mcpServers": []}`, ".mcp.json: mcpServers is not an object"},
		{"gemini", ".gemini/settings.json", `["not an object"]`, "not an object"},
		{"codex", ".codex/config.toml", "[mcp_servers.x]\ncommand = \n", ".codex/config.toml: not valid TOML: line 2"},
		{"codex", ".codex/config.toml", "mcp_servers = { other = { command = \"x\" } }\n", "inline table"},
		{"cursor", ".cursor/mcp.json", "", ""},
	} {
		root := t.TempDir()
		writeFile(t, root, tt.file, tt.text)
		code, out, errs := cliRun(t, root, "init", tt.client)
		if tt.want == "" {
			// An empty file is taken as an empty configuration.
			if code != 0 {
				t.Errorf("%s over an empty %s: exit %d: %s", tt.client, tt.file, code, errs)
			}
			continue
		}
		if code != exitError || !strings.Contains(errs, "INVALID_ARGUMENT") || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "hint: fix ") {
			t.Errorf("%s over %q: exit %d, stderr %q; want INVALID_ARGUMENT with %q", tt.client, tt.text, code, errs, tt.want)
		}
		if got := readFile(t, root, tt.file); got != tt.text {
			t.Errorf("%s was changed to %q", tt.file, got)
		}
		for _, f := range initFiles[tt.client] {
			if f != tt.file {
				if _, err := os.Stat(filepath.Join(root, f)); err == nil {
					t.Errorf("%s written although %s does not parse", f, tt.file)
				}
			}
		}
		_ = out
	}
}

func TestInitUsage(t *testing.T) {
	root := t.TempDir()
	if code, _, errs := cliRun(t, root, "init"); code != exitUsage || !strings.Contains(errs, "claude-code, codex, cursor, gemini") {
		t.Errorf("init without a client: exit %d %q", code, errs)
	}
	if code, _, errs := cliRun(t, root, "init", "vim"); code != exitUsage || !strings.Contains(errs, `unknown client "vim"`) {
		t.Errorf("init vim: exit %d %q", code, errs)
	}
}

func TestParseTOML(t *testing.T) {
	good := []string{
		"",
		"a = 1\nb = 'x'\n[t]\nc = [1, 2,]\n[[arr]]\nx = 1\n[[arr]]\nx = 2\n",
		"a.b.c = \"d\" # comment\n\"quoted key\" = 1979-05-27T07:32:00Z\nd = 1979-05-27 07:32:00\n",
		"s = \"\"\"\nline \\\n  more\"\"\"\nl = '''a'b'''\nf = -1.5e3\ni = +inf\nh = 0xff\n",
		"t = { a = 1, b = { c = [\"x\"] } }\n",
	}
	for _, s := range good {
		if _, err := parseTOML(s); err != nil {
			t.Errorf("parseTOML(%q): %v", s, err)
		}
	}
	bad := []string{
		"a = \n",
		"a = 1\na = 2\n",
		"[t]\n[t]\n",
		"a = \"unterminated\n",
		"a = 1 b = 2\n",
		"[t\n",
		"t = { a = 1 }\n[t.b]\n",
		"= 1\n",
		"a = [1 2]\n",
		"a = [1]\n[[a]]\n",
		// Scalars the small reader takes on trust and the full parser
		// refuses, as the client's own would.
		"a = 01\n",
		"a = 1__0\n",
		"a = 1979-13-40\n",
		"a = 0x\n",
		"a = 1e\n",
	}
	for _, s := range bad {
		if _, err := parseTOML(s); err == nil {
			t.Errorf("parseTOML(%q) succeeded, want an error", s)
		}
	}
	d, err := parseTOML("[a]\nb.c = \"\\u00e9\\t\"\n")
	if err != nil || d.get("a", "b", "c") != "é\t" {
		t.Errorf("escapes: %v %v", d.get("a", "b", "c"), err)
	}
}

// hookFiles are the files init --hooks writes for each client.
var hookFiles = map[string]string{
	"claude-code": ".claude/settings.local.json",
	"gemini":      ".gemini/settings.json",
	"codex":       ".codex/config.toml",
}

// hookGroups returns the hook groups of event in client's file in root,
// as the client reads them: [{"matcher": M, "hooks": [{"command": C, ...}]}].
func hookGroups(t *testing.T, root, client, event string) []any {
	t.Helper()
	if client == "codex" {
		d, err := parseTOML(readFile(t, root, hookFiles[client]))
		if err != nil {
			t.Fatal(err)
		}
		g, _ := d.get("hooks", event).([]any)
		return g
	}
	g, _ := get(readJSON(t, root, hookFiles[client]), "hooks", event).([]any)
	return g
}

// checkHook checks that one group of event in client's file runs
// editguard hook, for the tools matcher matches and nothing else.
func checkHook(t *testing.T, root, client, event string, tools, notTools []string) {
	t.Helper()
	var found []string
	for _, g := range hookGroups(t, root, client, event) {
		hs, _ := get(g, "hooks").([]any)
		for _, h := range hs {
			if c, _ := get(h, "command").(string); isHookCommand(c) {
				m, _ := get(g, "matcher").(string)
				found = append(found, m)
				re, err := regexp.Compile(m)
				if err != nil {
					t.Fatalf("%s matcher %q: %v", event, m, err)
				}
				for _, tool := range tools {
					if !re.MatchString(tool) {
						t.Errorf("%s matcher %q does not match %s", event, m, tool)
					}
				}
				for _, tool := range notTools {
					if re.MatchString(tool) {
						t.Errorf("%s matcher %q matches %s", event, m, tool)
					}
				}
				if !strings.Contains(c, "--client") != (client == "claude-code") {
					t.Errorf("%s command %q does not name the client %s", event, c, client)
				}
			}
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: %d groups run editguard hook, want 1: %v", event, len(found), found)
	}
}

// hookEvents is how many events init --hooks configures for each client.
var hookEvents = map[string]int{"claude-code": 5, "gemini": 2, "codex": 2}

func checkHooks(t *testing.T, root, client string) {
	t.Helper()
	switch client {
	case "claude-code":
		checkHook(t, root, client, "PreToolUse", []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "PowerShell"}, []string{"Read", "WebFetch"})
		checkHook(t, root, client, "PostToolUse", []string{"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "PowerShell"}, []string{"WebFetch"})
		checkHook(t, root, client, "PostToolUseFailure", []string{"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "PowerShell"}, []string{"WebFetch"})
		// The shell commands of skills and slash commands: events of no
		// tool, so groups without a matcher.
		if groups := hookGroups(t, root, client, "PostSkillShellCommand"); len(groups) != 0 {
			t.Errorf("hooks.PostSkillShellCommand, an event Claude Code does not know: %v", groups)
		}
		for _, event := range []string{"PreSkillShellCommand", "PostToolBatch"} {
			checkHook(t, root, client, event, []string{"deploy"}, nil)
			for _, g := range hookGroups(t, root, client, event) {
				if _, ok := g.(map[string]any)["matcher"]; ok {
					t.Errorf("hooks.%s has a matcher: %v", event, g)
				}
			}
		}
	case "gemini":
		checkHook(t, root, client, "BeforeTool", []string{"write_file", "replace", "run_shell_command"}, []string{"read_file", "mcp_editguard_write_file"})
		checkHook(t, root, client, "AfterTool", []string{"read_file", "write_file", "replace", "run_shell_command"}, []string{"mcp_editguard_read_file", "read_many_files"})
	case "codex":
		checkHook(t, root, client, "PreToolUse", []string{"apply_patch", "Bash"}, []string{"mcp__editguard__apply_patch", "write_stdin"})
		checkHook(t, root, client, "PostToolUse", []string{"apply_patch", "Bash"}, []string{"write_stdin"})
	}
}

// TestInitHooks: init --hooks adds editguard's hooks next to the hooks and
// settings already there, keeping them as they were, and a second run
// adds nothing.
func TestInitHooks(t *testing.T) {
	existing := map[string]string{
		"claude-code": "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit.sh\"}]}\n    ],\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  },\n  \"permissions\": {\"deny\": [\"Read\", \"WebFetch\"]}\n}\n",
		"gemini":      "{\"theme\": \"Dracula\", \"hooks\": {\"AfterTool\": []}, \"tools\": {\"exclude\": [\"EditTool\"]}}",
		"codex":       "model = \"o3\"\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"audit.sh\"\n\n[mcp_servers.other]\ncommand = \"x\"\n",
	}
	for client, file := range hookFiles {
		t.Run(client, func(t *testing.T) {
			for _, text := range []string{"", existing[client]} {
				root := t.TempDir()
				if text != "" {
					writeFile(t, root, file, text)
				}
				rep := runInitJSON(t, root, client, "--hooks")
				if len(rep.Files) != 1 || rep.Files[0].Path != file || len(rep.Files[0].Added) != hookEvents[client] {
					t.Fatalf("init %s --hooks: %+v", client, rep.Files)
				}
				checkHooks(t, root, client)
				got := readFile(t, root, file)
				if text != "" {
					f := rep.Files[0]
					// The tools turned off are reported (Codex has no such setting).
					reported := len(f.Kept) == 1 && strings.Contains(f.Kept[0], "which the hooks guard")
					if f.Action != "changed" || reported != (client != "codex") {
						t.Errorf("over existing settings: %+v", f)
					}
					switch client {
					case "codex":
						if !strings.HasPrefix(got, text) {
							t.Errorf("config.toml: what was there changed:\n%s", got)
						}
						if g := hookGroups(t, root, client, "PreToolUse"); len(g) != 2 || get(g[0], "matcher") != "Bash" {
							t.Errorf("the Bash hook is not kept first: %v", g)
						}
					default:
						s := readJSON(t, root, file)
						if client == "claude-code" && (get(s, "model") != "opus" || get(s, "hooks", "Stop") == nil || len(hookGroups(t, root, client, "PreToolUse")) != 2) {
							t.Errorf("settings lost entries:\n%s", got)
						}
						if client == "gemini" && get(s, "theme") != "Dracula" {
							t.Errorf("settings lost entries:\n%s", got)
						}
					}
					if client == "claude-code" && !strings.HasPrefix(got, "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"audit.sh\"}]},\n      {\n        \"matcher\":") {
						t.Errorf("settings lost their layout:\n%s", got)
					}
				}
				// A second run changes nothing.
				rep = runInitJSON(t, root, client, "--hooks")
				if f := rep.Files[0]; f.Action != "unchanged" || len(f.Added) != 0 || len(f.Present) != hookEvents[client] {
					t.Errorf("second run: %+v", f)
				}
				if again := readFile(t, root, file); again != got {
					t.Errorf("second run changed %s:\n%s\nwas\n%s", file, again, got)
				}
			}
		})
	}
}

// TestInitHooksCommand: the hooks run editguard-hook by its absolute path,
// installed next to editguard, with the root and the client, ending in
// "|| exit 2" so that a program the shell cannot start blocks the tool;
// the check after writing runs it.
func TestInitHooksCommand(t *testing.T) {
	_, hook := installed(t)
	want := map[string]string{
		"claude-code": hook + ` --root "$CLAUDE_PROJECT_DIR" || exit 2`,
		"gemini":      hook + " --root . --client gemini || exit 2",
		"codex":       hook + " --root . --client codex || exit 2",
	}
	for client, cmd := range want {
		root := t.TempDir()
		rep := runInitJSON(t, root, client, "--hooks")
		checkHooks(t, root, client)
		event := "PreToolUse"
		if client == "gemini" {
			event = "BeforeTool"
		}
		groups := hookGroups(t, root, client, event)
		if len(groups) != 1 {
			t.Fatalf("%s: %d %s groups", client, len(groups), event)
		}
		hs, _ := get(groups[0], "hooks").([]any)
		if c, _ := get(hs[0], "command").(string); c != cmd {
			t.Errorf("%s: command %q, want %q", client, c, cmd)
		}
		if !isHookCommand(cmd) {
			t.Errorf("isHookCommand(%q) = false", cmd)
		}
		var probed bool
		for _, c := range rep.Checks {
			probed = probed || c.Check == "hook" && c.OK && strings.Contains(c.Message, "answered a probe")
		}
		if !probed || len(failedChecks(rep.Checks)) > 0 {
			t.Errorf("%s: checks %+v", client, rep.Checks)
		}
	}
}

// TestInitHooksKeepsOtherEditguard: a hook group that runs editguard hook
// in another way is left as it is, and reported.
func TestInitHooksKeepsOtherEditguard(t *testing.T) {
	root := t.TempDir()
	text := `{"hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "/opt/bin/editguard --root /src hook --fail-open"}]}]}}`
	writeFile(t, root, ".claude/settings.local.json", text)
	f := runInitJSON(t, root, "claude-code", "--hooks").Files[0]
	if len(f.Kept) != 1 || !strings.Contains(f.Kept[0], "hooks.PreToolUse has an editguard hook with other settings") || len(f.Added) != 4 {
		t.Errorf("%+v", f)
	}
	if g := hookGroups(t, root, "claude-code", "PreToolUse"); len(g) != 1 {
		t.Errorf("PreToolUse: %v", g)
	}
}

// TestInitHooksRefusesBrokenFiles: a file that does not parse, or whose
// hooks cannot take editguard's, is an error, and nothing is written.
func TestInitHooksRefusesBrokenFiles(t *testing.T) {
	for _, tt := range []struct{ client, text, want string }{
		{"claude-code", "{\"hooks\": {\"PreToolUse\": [}\n", "not valid JSON: line 1"},
		{"claude-code", `{"hooks": {"PreToolUse": {"matcher": "Edit"}}}`, "hooks.PreToolUse is not an array"},
		{"claude-code", `{"hooks": []}`, "hooks is not an object"},
		{"gemini", `{"hooks": "none"}`, "hooks is not an object"},
		{"codex", "[[hooks.PreToolUse]\n", "not valid TOML: line 1"},
		{"codex", "hooks = { PreToolUse = [] }\n", "hooks is an inline table"},
		{"codex", "[hooks]\nPreToolUse = [{ matcher = \"Bash\" }]\n", "hooks.PreToolUse is an inline array"},
		{"codex", "[hooks.PreToolUse]\nmatcher = \"Bash\"\n", "hooks.PreToolUse is not an array of tables"},
		{"codex", "hooks = 1\n", "hooks is not a table"},
	} {
		root := t.TempDir()
		file := hookFiles[tt.client]
		writeFile(t, root, file, tt.text)
		code, _, errs := cliRun(t, root, "init", tt.client, "--hooks")
		if code != exitError || !strings.Contains(errs, "INVALID_ARGUMENT") || !strings.Contains(errs, tt.want) || !strings.Contains(errs, "hint: fix ") {
			t.Errorf("%s over %q: exit %d, stderr %q; want INVALID_ARGUMENT with %q", tt.client, tt.text, code, errs, tt.want)
		}
		if got := readFile(t, root, file); got != tt.text {
			t.Errorf("%s was changed to %q", file, got)
		}
	}
	if code, _, errs := cliRun(t, t.TempDir(), "init", "cursor", "--hooks"); code != exitUsage || !strings.Contains(errs, "no hooks for cursor") {
		t.Errorf("init cursor --hooks: exit %d %q", code, errs)
	}
}

// TestInitHooksWidensEarlierMatchers: hooks an earlier init wrote, before
// the shell tools were guarded, get the matchers of now on the next run,
// with everything else in the file as it was; a second run changes
// nothing.
func TestInitHooksWidensEarlierMatchers(t *testing.T) {
	earlier := map[string]string{
		"claude-code": `{"hooks": {"PreToolUse": [{"matcher": "Write|Edit|MultiEdit|NotebookEdit", "hooks": [{"type": "command", "command": "editguard --root \"$CLAUDE_PROJECT_DIR\" hook"}]}], "PostToolUse": [{"matcher": "Read|Write|Edit|MultiEdit|NotebookEdit", "hooks": [{"type": "command", "command": "editguard --root \"$CLAUDE_PROJECT_DIR\" hook"}]}]}, "model": "opus"}`,
		"gemini":      `{"hooks": {"BeforeTool": [{"matcher": "^(write_file|replace)$", "hooks": [{"name": "editguard", "type": "command", "command": "editguard --root . hook --client gemini"}]}], "AfterTool": [{"matcher": "^(read_file|write_file|replace)$", "hooks": [{"name": "editguard", "type": "command", "command": "editguard --root . hook --client gemini"}]}]}}`,
		"codex":       "model = \"o3\"\n\n[[hooks.PreToolUse]]\nmatcher = \"^apply_patch$\"\n\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"editguard --root . hook --client codex\"\n\n[[hooks.PostToolUse]]\nmatcher = \"^apply_patch$\"\n\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"editguard --root . hook --client codex\"\n\n[[hooks.PostToolUse]]\nmatcher = \"^apply_patch$\"\n\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"audit.sh\"\n",
	}
	for client, text := range earlier {
		t.Run(client, func(t *testing.T) {
			root := t.TempDir()
			file := hookFiles[client]
			writeFile(t, root, file, text)
			f := runInitJSON(t, root, client, "--hooks").Files[0]
			if f.Action != "changed" || len(f.Added) != hookEvents[client] || !strings.Contains(f.Added[0], ", was for ") {
				t.Fatalf("%+v", f)
			}
			checkHooks(t, root, client)
			got := readFile(t, root, file)
			if client == "codex" {
				if !strings.Contains(got, "[[hooks.PostToolUse]]\nmatcher = \"^apply_patch$\"\n\n[[hooks.PostToolUse.hooks]]\ntype = \"command\"\ncommand = \"audit.sh\"") {
					t.Errorf("another program's hook was changed:\n%s", got)
				}
			} else if client == "claude-code" && get(readJSON(t, root, file), "model") != "opus" {
				t.Errorf("settings lost entries:\n%s", got)
			}
			for _, event := range []string{"PreToolUse", "BeforeTool"} {
				if g := hookGroups(t, root, client, event); client != "gemini" && event == "PreToolUse" && len(g) != 1 {
					t.Errorf("%s: %d groups, want the one widened", event, len(g))
				}
			}
			f = runInitJSON(t, root, client, "--hooks").Files[0]
			if f.Action != "unchanged" || len(f.Added) != 0 {
				t.Errorf("second run: %+v", f)
			}
		})
	}
}

// withoutOutputLimit is a Codex config.toml without the line init adds at
// its root (and the blank line after it).
func withoutOutputLimit(s string) string {
	return strings.Replace(s, "tool_output_token_limit = 40000\n\n", "", 1)
}

// TestInitCodexOutputLimit: init codex sets tool_output_token_limit at the
// root of config.toml, before the first table and outside any multi-line
// string, so that Codex passes editguard's pages whole; a limit set already
// is kept, and reported when it is lower.
func TestInitCodexOutputLimit(t *testing.T) {
	for _, tt := range []struct{ text, want, kept string }{
		{"", "tool_output_token_limit = 40000\n\n[mcp_servers.editguard]", ""},
		{"[profiles.x]\nmodel = \"m\"\n", "tool_output_token_limit = 40000\n\n[profiles.x]", ""},
		{"note = \"\"\"\n[not a table]\n\"\"\"\n[t]\nk = 1\n", "note = \"\"\"\n[not a table]\n\"\"\"\ntool_output_token_limit = 40000\n\n[t]", ""},
		{"tool_output_token_limit = 8000\n", "tool_output_token_limit = 8000\n", "tool_output_token_limit is 8000"},
		{"tool_output_token_limit = 100_000\n", "tool_output_token_limit = 100_000\n", ""},
	} {
		root := t.TempDir()
		if tt.text != "" {
			writeFile(t, root, ".codex/config.toml", tt.text)
		}
		f := runInitJSON(t, root, "codex").Files[0]
		got := readFile(t, root, ".codex/config.toml")
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("over %q:\n%s\nwant it to start with %q", tt.text, got, tt.want)
		}
		d, err := parseTOML(got)
		if eg, _ := installed(t); err != nil || d.get("tool_output_token_limit") == nil || d.get("mcp_servers", "editguard", "command") != eg {
			t.Errorf("over %q: %v %v", tt.text, err, d)
		}
		if kept := strings.Join(f.Kept, "\n"); !strings.Contains(kept, tt.kept) || (tt.kept == "") != (kept == "") {
			t.Errorf("over %q: kept %q, want %q", tt.text, f.Kept, tt.kept)
		}
		// A second run changes nothing.
		if f := runInitJSON(t, root, "codex").Files[0]; f.Action != "unchanged" {
			t.Errorf("over %q, second run: %+v", tt.text, f)
		}
	}
}

// TestInitHooksViaMCP checks what init claude-code --hooks --via mcp
// writes: the server of "hook --mcp" in .mcp.json, mcp_tool hooks on the
// guarded tools, the hook tool denied to the model and the server enabled;
// that its check calls the server; that doctor checks it too; that a second
// run changes nothing; and that --via is refused where it does not apply.
func TestInitHooksViaMCP(t *testing.T) {
	root := t.TempDir()
	rep := runInitJSON(t, root, "claude-code", "--hooks", "--via", "mcp")
	if failed := failedChecks(rep.Checks); len(failed) > 0 || len(rep.Checks) == 0 {
		t.Fatalf("checks %+v", rep.Checks)
	}
	if last := rep.Checks[len(rep.Checks)-1]; !strings.Contains(last.Message, "answered a probe") || !strings.Contains(last.Message, "fails open") {
		t.Errorf("the server's check says %q", last.Message)
	}
	srv, _ := get(readJSON(t, root, ".mcp.json"), "mcpServers", hookMCPServer).(map[string]any)
	if srv == nil || fmt.Sprint(srv["args"]) != "[--root . hook --mcp]" || !filepath.IsAbs(srv["command"].(string)) {
		t.Fatalf(".mcp.json: %s", readFile(t, root, ".mcp.json"))
	}
	settings := readJSON(t, root, claudeLocalSettings)
	for event, tools := range map[string]string{"PreToolUse": "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", "PostToolUse": "Read|Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell",
		"PreSkillShellCommand": ""} {
		groups, _ := get(settings, "hooks", event).([]any)
		if len(groups) != 1 {
			t.Fatalf("hooks.%s = %v", event, groups)
		}
		g := groups[0].(map[string]any)
		h := g["hooks"].([]any)[0].(map[string]any)
		in, _ := h["input"].(map[string]any)
		m, _ := g["matcher"].(string)
		if m != tools || !isMCPHook(h) || h["tool"] != hookToolName || in["tool_input"] != "${tool_input}" || in["session_id"] != "${session_id}" {
			t.Errorf("hooks.%s = %v", event, g)
		}
		// A skill's shell command is the event's own field.
		if (tools == "") != (in["command"] == "${command}") {
			t.Errorf("hooks.%s: input %v", event, in)
		}
	}
	if !contains(get(settings, "permissions", "deny"), hookMCPTool) || !contains(get(settings, "enabledMcpjsonServers"), hookMCPServer) {
		t.Errorf("settings: %s", readFile(t, root, claudeLocalSettings))
	}
	again := runInitJSON(t, root, "claude-code", "--hooks", "--via", "mcp")
	for _, f := range again.Files {
		if f.Action != "unchanged" {
			t.Errorf("a second init changed %s: %+v", f.Path, f)
		}
	}
	code, out, errs := cliRun(t, root, "doctor", "claude-code")
	if code != 0 || !strings.Contains(out, "hook server in .mcp.json") {
		t.Errorf("doctor: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{
		{"init", "claude-code", "--via", "mcp"},
		{"init", "gemini", "--hooks", "--via", "mcp"},
		{"init", "claude-code", "--hooks", "--via", "http"},
	} {
		if code, _, errs := cliRun(t, root, args...); code != exitUsage || !strings.Contains(errs, "--via") {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
}

// TestInitKeepsJSONC: a settings file with comments and trailing commas
// (Gemini CLI's settings allow them) is edited in place: every comment
// stays where it was, the entries are added, and a second init changes
// nothing.
func TestInitKeepsJSONC(t *testing.T) {
	root := t.TempDir()
	const orig = `{
  // The theme I like.
  "ui": {"theme": "GitHub",}, /* trailing comma above */
  "mcpServers": {
    // another server
    "other": {"command": "other-server"},
  },
}
`
	writeFile(t, root, ".gemini/settings.json", orig)
	runInitJSON(t, root, "gemini")
	got := readFile(t, root, ".gemini/settings.json")
	for _, keep := range []string{"// The theme I like.", "/* trailing comma above */", "// another server", `"other": {"command": "other-server"},`} {
		if !strings.Contains(got, keep) {
			t.Errorf("settings lost %q:\n%s", keep, got)
		}
	}
	d, err := parseJSONDoc(got, true)
	if err != nil {
		t.Fatalf("the edited settings do not parse: %v\n%s", err, got)
	}
	if srv, _ := d.decode(d.get("mcpServers", "editguard")).(map[string]any); srv == nil || srv["trust"] != true {
		t.Errorf("mcpServers.editguard = %v:\n%s", srv, got)
	}
	again := runInitJSON(t, root, "gemini")
	for _, f := range again.Files {
		if f.Action != "unchanged" {
			t.Errorf("a second init changed %s:\n%s", f.Path, readFile(t, root, f.Path))
		}
	}
	// doctor reads the file as Gemini CLI does.
	if code, out, errs := cliRun(t, root, "doctor", "gemini"); code != 0 || strings.Contains(out, "not valid JSON") {
		t.Errorf("doctor gemini: exit %d\n%s%s", code, out, errs)
	}
}
