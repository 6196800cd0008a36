package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

var initCmd = &command{
	name:    "init",
	args:    "claude-code|gemini|codex|cursor [--hooks] [--dry-run] [--json]",
	summary: "add editguard to a client's configuration in the workspace",
	help: `Init adds editguard's MCP server to the project configuration of a client
in the workspace root (--root), and, where the client allows it, turns off
the client's own file tools so that the model reads and changes files
through editguard's:

  claude-code  .mcp.json: mcpServers.editguard
               .claude/settings.json: permissions.deny Read, Edit, Write,
               MultiEdit, NotebookEdit; permissions.allow mcp__editguard;
               enabledMcpjsonServers editguard; env.ENABLE_TOOL_SEARCH
               "false" (the tools are loaded directly, not behind a search)
  gemini       .gemini/settings.json: mcpServers.editguard with trust
               true (its tools run without asking); tools.exclude
               ReadFileTool, WriteFileTool, EditTool, the classes of the
               built-in read_file, write_file and replace (excludeTools in
               the old settings format)
  codex        .codex/config.toml: [mcp_servers.editguard] with
               default_tools_approval_mode "approve" (its tools run
               without asking), and the hooks below for Codex's own
               apply_patch and exec_command, which cannot be turned off
  cursor       .cursor/mcp.json: mcpServers.editguard

With --hooks, init leaves the client's own file tools on and guards
them with "editguard hook" instead (see "editguard help hook"); it adds
the hooks, not the MCP server:

  claude-code  .claude/settings.json: hooks.PreToolUse for Write, Edit,
               MultiEdit, NotebookEdit, Bash and hooks.PostToolUse for
               those and Read, running
               editguard --root "$CLAUDE_PROJECT_DIR" hook
  gemini       .gemini/settings.json: hooks.BeforeTool for write_file,
               replace and run_shell_command and hooks.AfterTool for
               those and read_file, running
               editguard --root . hook --client gemini
  codex        .codex/config.toml: [[hooks.PreToolUse]] and
               [[hooks.PostToolUse]] for apply_patch and Bash (Codex's
               exec_command), running editguard --root . hook --client codex

A hook group that already runs editguard hook is left as it is; other
hooks stay as they are. Deny rules or exclusions that turn the guarded
tools off are reported, not removed.

Existing files are merged, never replaced: init adds only its own entries
and leaves every other byte as it was. An entry that is already there with
other settings (say, an editguard server with other arguments) is left as
it is and reported. A file that does not parse is an error, and then
nothing is changed. Running init again changes nothing.

The server is started as "editguard" from PATH with --root ".", the
directory the client starts it in (Cursor: ${workspaceFolder}). The files
are written like any editguard change, so "editguard history FILE" lists
what they held before.

--dry-run shows the changes without writing them. With --json it prints
{client, root, dry_run, files: [{path, action, added, present, kept,
diff}], notes}; action is created, changed or unchanged.`,
}

// initFile is what init did, or would do, to one file.
type initFile struct {
	Path    string   `json:"path"`
	Action  string   `json:"action"`            // created, changed or unchanged
	Added   []string `json:"added,omitempty"`   // entries init added
	Present []string `json:"present,omitempty"` // entries that were there already
	Kept    []string `json:"kept,omitempty"`    // entries there with other settings, left as they are
	Diff    string   `json:"diff,omitempty"`    // with --dry-run

	exists    bool
	old, text string
	tools     []string // the names of editguard's tools
}

// initReport is the result of init.
type initReport struct {
	Client string      `json:"client"`
	Root   string      `json:"root"`
	DryRun bool        `json:"dry_run"`
	Files  []*initFile `json:"files"`
	Notes  []string    `json:"notes,omitempty"`
}

// An initClient is what init writes for one client.
type initClient struct {
	files []initSpec
	notes []string
}

// An initSpec edits one configuration file: edit gets the file's text
// ("" for a new file) and returns the new text.
type initSpec struct {
	path string
	edit func(f *initFile, text string) (string, error)
}

// serveArgs are the arguments that start editguard's server on the
// directory the client starts it in.
var serveArgs = []string{"--root", ".", "serve"}

// claudeDenied are Claude Code's own file tools, which init turns off.
var claudeDenied = []string{"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"}

// geminiExcluded are Gemini CLI's own file tools read_file, write_file and
// replace, which init turns off. They are named by class: Gemini CLI also
// matches an excluded name against an MCP tool's name without its
// mcp_SERVER_ prefix, so excluding "read_file" would hide editguard's
// read_file as well.
var geminiExcluded = []string{"ReadFileTool", "WriteFileTool", "EditTool"}

var initClients = map[string]initClient{
	"claude-code": {
		files: []initSpec{
			{".mcp.json", func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					return addServerJSON(d, f, orderedObject{{"type", "stdio"}, {"command", "editguard"}, {"args", serveArgs}})
				})
			}},
			{filepath.Join(".claude", "settings.json"), func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					if err := addStrings(d, f, []string{"permissions", "deny"}, claudeDenied); err != nil {
						return err
					}
					if err := addStrings(d, f, []string{"permissions", "allow"}, []string{"mcp__editguard"}); err != nil {
						return err
					}
					if err := addStrings(d, f, []string{"enabledMcpjsonServers"}, []string{"editguard"}); err != nil {
						return err
					}
					if n := d.get("disabledMcpjsonServers"); n != nil && n.kind == '[' && containsString(n, "editguard") {
						f.Kept = append(f.Kept, "disabledMcpjsonServers lists editguard, so Claude Code will not start it; remove it there")
					}
					return addValue(d, f, []string{"env", "ENABLE_TOOL_SEARCH"}, "false")
				})
			}},
		},
		notes: []string{
			"Claude Code applies permissions.allow and enabledMcpjsonServers of .claude/settings.json only in a trusted workspace: run claude here once and accept the trust dialog. Until then it asks before each editguard tool call, and a headless run (-p) refuses them; the deny rules apply either way.",
			"Bash can still change files outside editguard's tools: run init claude-code --hooks as well to run each Bash command between two checkpoints, which record and keep every file it changes.",
		},
	},
	"gemini": {
		files: []initSpec{
			{filepath.Join(".gemini", "settings.json"), func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					if err := addServerJSON(d, f, orderedObject{{"command", "editguard"}, {"args", serveArgs}, {"trust", true}}); err != nil {
						return err
					}
					// The settings format before Gemini CLI 0.3 had a
					// top-level excludeTools; later ones have tools.exclude.
					path := []string{"tools", "exclude"}
					if d.get("excludeTools") != nil {
						path = []string{"excludeTools"}
					}
					if err := addStrings(d, f, path, geminiExcluded); err != nil {
						return err
					}
					if n := d.get(path...); n != nil && n.kind == '[' {
						var hidden []string
						for _, name := range f.tools {
							if containsString(n, name) {
								hidden = append(hidden, name)
							}
						}
						if len(hidden) > 0 {
							f.Kept = append(f.Kept, fmt.Sprintf("%s lists %s, which hides editguard's tool of that name as well (Gemini CLI matches the name without the mcp_editguard_ prefix); remove it", strings.Join(path, "."), strings.Join(hidden, ", ")))
						}
					}
					return nil
				})
			}},
		},
		notes: []string{
			"Gemini CLI reads .gemini/settings.json only in a trusted folder: run gemini here once and trust the folder (a headless run can set GEMINI_CLI_TRUST_WORKSPACE=true; --skip-trust trusts it only after the settings were read, so they are ignored).",
			"Gemini CLI warns that tools.exclude is deprecated in favour of policy rules, but it does not load a project's .gemini/policies, and a rule that denies read_file hides editguard's read_file too; the class names in tools.exclude hide only the built-in tools.",
			"A headless run (-p) in the default approval mode hides editguard's write_file: Gemini CLI denies its own write_file there and applies that to an MCP tool of the same name. Use --approval-mode auto_edit (or yolo) for headless runs.",
			"run_shell_command can still change files outside editguard's tools: run init gemini --hooks as well to run each command between two checkpoints, which record and keep every file it changes.",
		},
	},
	"codex": {
		files: []initSpec{
			// Codex offers its own apply_patch and exec_command first, and
			// they cannot be turned off: their hooks guard them too.
			{filepath.Join(".codex", "config.toml"), func(f *initFile, text string) (string, error) {
				out, err := editCodex(f, text)
				if err != nil {
					return "", err
				}
				if out, err = editCodexOutputLimit(f, out); err != nil {
					return "", err
				}
				return editCodexHooks(f, out)
			}},
		},
		notes: []string{
			"Codex reads .codex/config.toml only in a trusted project; otherwise put the same [mcp_servers.editguard] table in ~/.codex/config.toml, with the project's absolute path after --root.",
			"Codex's own apply_patch and exec_command cannot be turned off in its configuration, so init adds editguard's hooks for them too (Codex runs them once they are trusted: review them with /hooks). With the OpenAI models it knows, Codex offers MCP tools behind its tool_search tool, so the model finds editguard's tools by searching for them.",
		},
	},
	"cursor": {
		files: []initSpec{
			{filepath.Join(".cursor", "mcp.json"), func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					return addServerJSON(d, f, orderedObject{{"command", "editguard"}, {"args", []string{"--root", "${workspaceFolder}", "serve"}}})
				})
			}},
		},
		notes: []string{
			"Cursor's own edit tools cannot be turned off in mcp.json: ask for the editguard tools in a project rule (.cursor/rules).",
		},
	},
}

func initClientNames(clients map[string]initClient) []string {
	var names []string
	for n := range clients {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runInit(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(initCmd.name)
	dryRun := fs.Bool("dry-run", false, "show the changes, write nothing")
	hooks := fs.Bool("hooks", false, "guard the client's own file tools with editguard hook, instead of adding the MCP server")
	fs.BoolVar(&e.json, "json", false, "print what was done as JSON")
	pos, err := parseCommand(e, initCmd, fs, args)
	if err != nil {
		return err
	}
	clients := initClients
	if *hooks {
		clients = initHookClients
	}
	if len(pos) != 1 {
		return usagef(initCmd.name, "init takes one client: %s", strings.Join(initClientNames(clients), ", "))
	}
	client, ok := clients[pos[0]]
	switch {
	case !ok && *hooks && initClients[pos[0]].files != nil:
		return usagef(initCmd.name, "editguard has no hooks for %s: use one of %s, or init %s without --hooks", pos[0], strings.Join(initClientNames(clients), ", "), pos[0])
	case !ok:
		return usagef(initCmd.name, "unknown client %q: use one of %s", pos[0], strings.Join(initClientNames(clients), ", "))
	}
	ws, err := e.workspace()
	if err != nil {
		return err
	}
	s := ws.NewSession("editguard-init")
	rep := &initReport{Client: pos[0], Root: ws.Dir(), DryRun: *dryRun}

	tools := toolset.Names(false)
	// Plan every file before writing any, so that a file that does not
	// parse leaves all of them as they were.
	for _, spec := range client.files {
		f := &initFile{Path: filepath.ToSlash(spec.path), tools: tools}
		r, err := s.Read(ctx, spec.path, nil)
		switch {
		case errors.Is(err, editguard.ErrNotFound):
		case err != nil:
			return err
		case r.Truncated:
			return fmt.Errorf("%s: read only in part", spec.path)
		default:
			f.exists, f.old = true, r.Content
		}
		if f.text, err = spec.edit(f, f.old); err != nil {
			return &editguard.Error{
				Code:         editguard.CodeInvalidArgument,
				Message:      err.Error(),
				Details:      map[string]any{"path": f.Path},
				RecoveryHint: fmt.Sprintf("fix %s (or move it aside), then run editguard init %s again; no file was changed", f.Path, pos[0]),
				Err:          err,
			}
		}
		rep.Files = append(rep.Files, f)
	}
	for _, f := range rep.Files {
		f.Action = "unchanged"
		if f.exists && f.text == f.old {
			continue
		}
		opts := &editguard.WriteOptions{DryRun: *dryRun, AllowPlaceholders: true}
		if !f.exists {
			opts.Precondition = &editguard.Precondition{MustNotExist: true}
		}
		r, err := s.Write(ctx, f.Path, f.text, opts)
		if err != nil {
			return err
		}
		f.Action = "changed"
		if !f.exists {
			f.Action = "created"
		}
		if *dryRun {
			f.Diff = r.Diff
		}
	}
	rep.Notes = append(rep.Notes, client.notes...)
	if _, err := exec.LookPath("editguard"); err != nil {
		note := "editguard is not on PATH, so the client cannot start it: install it (go install ./cmd/editguard in a clone of editguard)"
		if exe, err := os.Executable(); err == nil && !strings.Contains(exe, "go-build") {
			note += " or put " + exe + " in the configuration instead of \"editguard\""
		}
		rep.Notes = append(rep.Notes, note)
	}
	if e.json {
		return e.printJSON(rep)
	}
	printInit(e, rep)
	return nil
}

func printInit(e *env, rep *initReport) {
	w := e.stdout
	for _, f := range rep.Files {
		action := f.Action
		if rep.DryRun && action != "unchanged" {
			action = "would be " + action
		}
		fmt.Fprintf(w, "%s: %s\n", f.Path, action)
		for _, a := range f.Added {
			fmt.Fprintf(w, "  added %s\n", a)
		}
		for _, a := range f.Present {
			fmt.Fprintf(w, "  already present: %s\n", a)
		}
		for _, a := range f.Kept {
			fmt.Fprintf(w, "  left as it is: %s\n", a)
		}
		if f.Diff != "" {
			writeDiff(w, f.Diff, false)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if rep.DryRun {
		fmt.Fprintln(e.stderr, "dry run: no file written")
	}
}

// editJSON applies fn to text, a JSON object ("" for a new file).
func editJSON(f *initFile, text string, fn func(*jsonDoc) error) (string, error) {
	src := text
	if strings.TrimSpace(src) == "" {
		src = "{}\n"
	}
	d, err := parseJSONDoc(src)
	if err != nil {
		return "", fmt.Errorf("not valid JSON: %v", err)
	}
	if err := fn(d); err != nil {
		return "", err
	}
	if d.text == src {
		return text, nil
	}
	if !strings.HasSuffix(d.text, "\n") && (text == "" || strings.HasSuffix(text, "\n")) {
		d.text += "\n"
	}
	return d.text, nil
}

// addServerJSON adds mcpServers.editguard, or reports the one there.
func addServerJSON(d *jsonDoc, f *initFile, want orderedObject) error {
	const name = "mcpServers.editguard"
	n, err := d.ensure([]string{"mcpServers", "editguard"}, want)
	if err != nil {
		return err
	}
	if n == nil {
		f.Added = append(f.Added, name)
		return nil
	}
	got, _ := d.decode(n).(map[string]any)
	if sameServer(got, want) {
		f.Present = append(f.Present, name)
		return nil
	}
	f.Kept = append(f.Kept, fmt.Sprintf("%s has other settings: %s", name, d.text[n.start:n.end]))
	return nil
}

// sameServer reports whether the server entry got starts editguard as want
// does: the same arguments, and a command named editguard.
func sameServer(got map[string]any, want orderedObject) bool {
	if got == nil {
		return false
	}
	for _, m := range want {
		switch m.k {
		case "command":
			c, _ := got["command"].(string)
			if filepath.Base(c) != m.v {
				return false
			}
		case "args":
			wb, _ := json.Marshal(m.v)
			gb, _ := json.Marshal(got["args"])
			if string(wb) != string(gb) {
				return false
			}
		default:
			if v, ok := got[m.k]; ok && v != m.v {
				return false
			}
		}
	}
	return true
}

// addStrings adds vals to the array at path.
func addStrings(d *jsonDoc, f *initFile, path, vals []string) error {
	added, present, err := d.appendStrings(path, vals)
	if err != nil {
		return err
	}
	name := strings.Join(path, ".")
	if len(added) > 0 {
		f.Added = append(f.Added, name+": "+strings.Join(added, ", "))
	}
	if len(present) > 0 {
		f.Present = append(f.Present, name+": "+strings.Join(present, ", "))
	}
	return nil
}

// addValue sets the string at path unless it is set.
func addValue(d *jsonDoc, f *initFile, path []string, v string) error {
	name := strings.Join(path, ".")
	n, err := d.ensure(path, v)
	switch {
	case err != nil:
		return err
	case n == nil:
		f.Added = append(f.Added, fmt.Sprintf("%s = %q", name, v))
	case n.kind == '"' && n.str == v:
		f.Present = append(f.Present, fmt.Sprintf("%s = %q", name, v))
	default:
		f.Kept = append(f.Kept, fmt.Sprintf("%s is %s, not %q", name, d.text[n.start:n.end], v))
	}
	return nil
}

// codexServer is the table init appends to Codex's config.toml.
// Without default_tools_approval_mode "approve", Codex asks before each call
// of a tool that is not read-only, and codex exec refuses them ("MCP tool
// call requires approval, but approval policy is never").
var codexServer = "[mcp_servers.editguard]\ncommand = \"editguard\"\nargs = [" + strings.Join(func() []string {
	var q []string
	for _, a := range serveArgs {
		q = append(q, tomlString(a))
	}
	return q
}(), ", ") + "]\ndefault_tools_approval_mode = \"approve\"\n"

// codexOutputLimit is the tool_output_token_limit init sets in Codex's
// config.toml. With a model it has no metadata for, Codex cuts every tool
// output past about 10,000 tokens' worth of characters in the middle
// ("…N tokens truncated…"), so a model reading a file page by page missed
// half of each page; at 40,000 an editguard page, sized to its read
// budget, arrives whole.
const codexOutputLimit = 40000

// editCodexOutputLimit sets tool_output_token_limit, a key of the file's
// root, which TOML requires before the first table: it goes before the
// first table header where that leaves everything else as it was. A
// limit already set is kept, and reported if it is lower.
func editCodexOutputLimit(f *initFile, text string) (string, error) {
	const key = "tool_output_token_limit"
	doc, err := parseTOML(text)
	if err != nil {
		return "", fmt.Errorf("not valid TOML: %v", err)
	}
	if v := doc.get(key); v != nil {
		sv, _ := v.(tomlScalar)
		n, err := strconv.Atoi(strings.ReplaceAll(string(sv), "_", ""))
		switch {
		case err != nil:
			f.Kept = append(f.Kept, key+" is not a number")
		case n < codexOutputLimit:
			f.Kept = append(f.Kept, fmt.Sprintf("%s is %d: Codex cuts editguard's longer pages in the middle; raise it to %d", key, n, codexOutputLimit))
		default:
			f.Present = append(f.Present, key)
		}
		return text, nil
	}
	line := fmt.Sprintf("%s = %d\n", key, codexOutputLimit)
	lines := strings.SplitAfter(text, "\n")
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "[") {
			continue
		}
		head := strings.Join(lines[:i], "")
		if head != "" && !strings.HasSuffix(head, "\n") {
			head += "\n"
		}
		sep := ""
		if i < len(lines) {
			sep = "\n"
		}
		out := head + line + sep + strings.Join(lines[i:], "")
		nd, err := parseTOML(out)
		if err != nil || nd.get(key) != tomlScalar(strconv.Itoa(codexOutputLimit)) {
			continue
		}
		delete(nd.root, key)
		if reflect.DeepEqual(nd.root, doc.root) {
			f.Added = append(f.Added, fmt.Sprintf("%s = %d (whole pages)", key, codexOutputLimit))
			return out, nil
		}
	}
	f.Kept = append(f.Kept, fmt.Sprintf("%s could not be placed before the first table; add %s = %d at the top by hand", key, key, codexOutputLimit))
	return text, nil
}

// editCodex adds [mcp_servers.editguard] to Codex's config.toml.
func editCodex(f *initFile, text string) (string, error) {
	const name = "mcp_servers.editguard"
	doc, err := parseTOML(text)
	if err != nil {
		return "", fmt.Errorf("not valid TOML: %v", err)
	}
	switch ms := doc.get("mcp_servers").(type) {
	case nil:
	case map[string]any:
		if eg, ok := ms["editguard"]; ok {
			t, _ := eg.(map[string]any)
			cmd, _ := t["command"].(string)
			args, _ := t["args"].([]any)
			var sargs []string
			for _, a := range args {
				s, _ := a.(string)
				sargs = append(sargs, s)
			}
			if t != nil && filepath.Base(cmd) == "editguard" && slices.Equal(sargs, serveArgs) {
				f.Present = append(f.Present, name)
			} else {
				f.Kept = append(f.Kept, name+" has other settings")
			}
			return text, nil
		}
		if doc.inline["mcp_servers"] {
			return "", errors.New("mcp_servers is an inline table, which a [mcp_servers.editguard] table cannot extend; add editguard = { command = \"editguard\", args = [\"--root\", \".\", \"serve\"] } to it by hand")
		}
	default:
		return "", errors.New("mcp_servers is not a table")
	}
	out := text
	if out != "" {
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "\n"
	}
	out += codexServer
	// Check what was made.
	nd, err := parseTOML(out)
	if err != nil || nd.get("mcp_servers", "editguard", "command") != "editguard" {
		return "", fmt.Errorf("internal error: the new configuration does not parse as intended (%v)", err)
	}
	f.Added = append(f.Added, name)
	return out, nil
}
