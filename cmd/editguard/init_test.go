package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// cliRun runs editguard in-process on root and returns the exit code,
// stdout and stderr.
func cliRun(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"--root", root}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func runInitJSON(t *testing.T, root, client string, extra ...string) *initReport {
	t.Helper()
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
	"claude-code": {".mcp.json", ".claude/settings.json"},
	"gemini":      {".gemini/settings.json"},
	"codex":       {".codex/config.toml"},
	"cursor":      {".cursor/mcp.json"},
}

// checkInit checks the entries init must have made for client in root.
func checkInit(t *testing.T, root, client string) {
	t.Helper()
	serve := strs("--root", ".", "serve")
	switch client {
	case "claude-code":
		m := readJSON(t, root, ".mcp.json")
		want := map[string]any{"type": "stdio", "command": "editguard", "args": serve}
		if got := get(m, "mcpServers", "editguard"); !reflect.DeepEqual(got, want) {
			t.Errorf(".mcp.json: mcpServers.editguard = %v, want %v", got, want)
		}
		s := readJSON(t, root, ".claude/settings.json")
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
		want := map[string]any{"command": "editguard", "args": serve, "trust": true}
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
		if got := d.get("mcp_servers", "editguard", "command"); got != "editguard" {
			t.Errorf("mcp_servers.editguard.command = %v", got)
		}
		if got := d.get("mcp_servers", "editguard", "args"); !reflect.DeepEqual(got, serve) {
			t.Errorf("mcp_servers.editguard.args = %v", got)
		}
		if got := d.get("mcp_servers", "editguard", "default_tools_approval_mode"); got != "approve" {
			t.Errorf("mcp_servers.editguard.default_tools_approval_mode = %v", got)
		}
	case "cursor":
		m := readJSON(t, root, ".cursor/mcp.json")
		want := map[string]any{"command": "editguard", "args": strs("--root", "${workspaceFolder}", "serve")}
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
	code, out, errs := cliRun(t, root, "init", "claude-code", "--dry-run")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if !strings.Contains(out, ".mcp.json: would be created") || !strings.Contains(out, `+      "command": "editguard",`) {
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
	writeFile(t, root, ".claude/settings.json", settings)
	writeFile(t, root, ".gemini/settings.json", gemini)
	writeFile(t, root, ".codex/config.toml", codex)
	writeFile(t, root, ".cursor/mcp.json", cursor)

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
	gotMCP := readFile(t, root, ".mcp.json")
	if !strings.HasPrefix(gotMCP, "{\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other-server\", \"args\": []},\n        \"editguard\": {\n            \"type\": \"stdio\",") ||
		!strings.HasSuffix(gotMCP, "\n    },\n    \"zzz\": 1\n}\n") {
		t.Errorf(".mcp.json lost its layout:\n%s", gotMCP)
	}
	s := readFile(t, root, ".claude/settings.json")
	if !strings.HasPrefix(s, "{\r\n\t\"model\": \"opus\",\r\n\t\"permissions\": {\r\n\t\t\"allow\": [\r\n\t\t\t\"Bash(go test:*)\",\r\n\t\t\t\"mcp__editguard\"\r\n\t\t],\r\n\t\t\"deny\": [\"Read\", \"Edit\",") {
		t.Errorf(".claude/settings.json lost its layout or line endings:\n%q", s)
	}
	sj := readJSON(t, root, ".claude/settings.json")
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
	if !strings.HasPrefix(c, codex) {
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
	writeFile(t, root, ".claude/settings.json", settings)
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
	rep := runInitJSON(t, root, "codex")
	if f := rep.Files[0]; f.Action != "unchanged" || len(f.Kept) != 1 {
		t.Errorf("codex: %+v", f)
	}
	if got := readFile(t, root, ".codex/config.toml"); got != codex {
		t.Errorf("config.toml changed:\n%s", got)
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
		{"claude-code", ".claude/settings.json", "{\n  \"model\": \"opus\",\n}\n", ".claude/settings.json: not valid JSON: line 3"},
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
