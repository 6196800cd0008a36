package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	args:    "claude-code|gemini|codex|cursor [--hooks [--turns] [--via command|mcp]] [--shared] [--bare-names] [--dry-run] [--json]",
	summary: "add editguard to a client's configuration in the workspace",
	help: `Init adds editguard's MCP server to the project configuration of a client
in the workspace root (--root), and, where the client allows it, turns off
the client's own file tools so that the model reads and changes files
through editguard's:

  claude-code  .mcp.json: mcpServers.editguard
               .claude/settings.local.json: permissions.deny Read, Edit, Write,
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
               apply_patch and exec_command, which cannot be turned off;
               AGENTS.md: a marked section telling the model to use
               editguard's tools where they are offered
  cursor       .cursor/mcp.json: mcpServers.editguard

With --hooks, init leaves the client's own file tools on and guards
them with editguard's hooks instead (see "editguard help hook"); it adds
the hooks, not the MCP server:

  claude-code  .claude/settings.local.json: hooks.PreToolUse for Write, Edit,
               MultiEdit, NotebookEdit, Bash, PowerShell and
               hooks.PostToolUse for those and Read, and
               hooks.PreSkillShellCommand (the shell commands of skills
               and slash commands), running
               /PATH/TO/editguard-hook --root "$CLAUDE_PROJECT_DIR" || exit 2
  gemini       .gemini/settings.json: hooks.BeforeTool for write_file,
               replace and run_shell_command and hooks.AfterTool for
               those and read_file, running
               /PATH/TO/editguard-hook --root . --client gemini || exit 2
  codex        .codex/config.toml: [[hooks.PreToolUse]] and
               [[hooks.PostToolUse]] for apply_patch and Bash (Codex's
               exec_command), running
               /PATH/TO/editguard-hook --root . --client codex || exit 2

Claude Code's deny rules and hooks go to .claude/settings.local.json, this
clone's own settings, which git is told to ignore (init adds the file to
the repository's info/exclude when nothing ignores it yet): a teammate who
has not installed editguard keeps Claude Code's own tools, instead of
finding them denied by a committed file with only Bash left. --shared
writes them to .claude/settings.json instead, for a team that installs
editguard everywhere. Gemini CLI and Codex have no such local file: their
settings go to the project's file.

With --hooks --turns, init also runs the hook at the start of each turn
(Claude Code's UserPromptSubmit, Gemini CLI's BeforeAgent), where it does
what begin_turn does: the session forgets its reads, so each file must be
read again in this turn before the turn changes it, for teams that want
no change based on a read from an earlier turn.

Each client blocks a tool whose hook exits with status 2 and shows why;
"|| exit 2" makes a hook program that cannot be started (removed, say)
block the tool too, where Claude Code and Codex would let it run
unguarded.

With --hooks --via mcp (claude-code only), Claude Code's hooks are of
type mcp_tool: they call the tool "hook" of "editguard hook --mcp", a
server Claude Code starts with each session, so no process starts per
tool call (about half the time a command hook adds: docs/BENCHMARKS.md):

  claude-code  .mcp.json: mcpServers.editguard-hooks, running
               /PATH/TO/editguard --root . hook --mcp
               .claude/settings.local.json: the hooks above, of type
               mcp_tool; permissions.deny mcp__editguard-hooks__hook (the
               tool is the hooks', and the model must not record reads it
               did not make); enabledMcpjsonServers editguard-hooks

It fails open: when that server is not connected (it could not start, or
stopped) or the call fails, Claude Code lets the tool run unguarded and
says so only in its debug log. Command hooks, the default, fail closed.
"editguard doctor claude-code" checks the server. Codex (0.169) accepts
a hook of type mcp_tool in its configuration and never runs it, so --via
mcp is for Claude Code alone.

A hook group that already runs editguard's hook with other settings is
left as it is; other hooks stay as they are. Deny rules or exclusions
that turn the guarded tools off are reported, not removed.

The configuration names the installed programs by their absolute paths,
so that the client starts them whatever its PATH: editguard is this
program (symbolic links resolved), and editguard-hook the one next to it,
else the one on PATH. A program that cannot be found, or this program
when go run built it in a temporary directory, is an error, and then
nothing is written: install both first, with
  go install ./cmd/editguard ./cmd/editguard-hook
in a clone of editguard. --bare-names writes the names "editguard" and
"editguard-hook" alone, for a PATH you manage yourself. An editguard entry
an earlier init wrote with a bare name, or naming a program that is gone,
gets the path; one naming another installed editguard is left as it is.

The server is started with --root ".", the directory the client starts it
in (Cursor: ${workspaceFolder}).

Existing files are merged, never replaced: init adds only its own entries
and leaves every other byte as it was, comments and trailing commas
included in Gemini CLI's settings, which allow them. An entry that is already there with
other settings (say, an editguard server with other arguments) is left as
it is and reported. A file that does not parse is an error, and then
nothing is changed. Running init again changes nothing. The files are
written like any editguard change, so "editguard history FILE" lists what
they held before.

After writing, init runs what the configuration names, once, as the
client would: the MCP server must answer an MCP initialize, and each hook
command a probe event (which changes no file). If one does not, init says
why and exits with status 1: the configuration stays as written, and the
client would not be guarded until it is fixed ("editguard doctor CLIENT"
checks it again).

--dry-run shows the changes without writing them (and runs nothing). With
--json it prints {client, root, dry_run, files: [{path, action, added,
present, kept, diff}], notes, checks: [{client, check, ok, message, fix}]};
action is created, changed or unchanged.`,
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
	tools     []string     // the names of editguard's tools
	progs     initPrograms // the commands to write
	local     bool         // the client's local settings, kept out of the repository
	turns     bool         // --turns: hooks at each turn's start as well
}

// initReport is the result of init.
type initReport struct {
	Client string      `json:"client"`
	Root   string      `json:"root"`
	DryRun bool        `json:"dry_run"`
	Files  []*initFile `json:"files"`
	Notes  []string    `json:"notes,omitempty"`
	// Checks are what running the configuration once showed.
	Checks []*setupCheck `json:"checks,omitempty"`
}

// An initClient is what init writes for one client.
type initClient struct {
	files []initSpec
	notes []string
	mcp   bool // the configuration starts editguard's MCP server
	hooks bool // the configuration runs editguard-hook
}

// An initSpec edits one configuration file: edit gets the file's text
// ("" for a new file) and returns the new text. A spec with shared set
// names the client's local settings, kept out of the repository: --shared
// writes the shared file instead.
type initSpec struct {
	path   string
	shared string
	edit   func(f *initFile, text string) (string, error)
}

// Claude Code's settings files in a project: this clone's own, and the
// one a repository shares.
const (
	claudeLocalSettings  = ".claude/settings.local.json"
	claudeSharedSettings = ".claude/settings.json"
)

// serveArgs are the arguments that start editguard's server on the
// directory the client starts it in.
var serveArgs = []string{"--root", ".", "serve"}

// cursorServeArgs are the arguments of Cursor's configuration, which names
// the workspace ${workspaceFolder}.
var cursorServeArgs = []string{"--root", "${workspaceFolder}", "serve"}

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
			{path: ".mcp.json", edit: func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					return addServerJSON(d, f, orderedObject{{"type", "stdio"}, {"command", f.progs.editguard}, {"args", serveArgs}})
				})
			}},
			{path: claudeLocalSettings, shared: claudeSharedSettings, edit: func(f *initFile, text string) (string, error) {
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
			"Claude Code applies permissions.allow and enabledMcpjsonServers of its project settings only in a trusted workspace: run claude here once and accept the trust dialog. Until then it asks before each editguard tool call, and a headless run (-p) refuses them; the deny rules apply either way.",
			"Bash can still change files outside editguard's tools: run init claude-code --hooks as well to run each Bash command between two checkpoints, which record and keep every file it changes.",
		},
		mcp: true,
	},
	"gemini": {
		files: []initSpec{
			{path: filepath.Join(".gemini", "settings.json"), edit: func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					if err := addServerJSON(d, f, orderedObject{{"command", f.progs.editguard}, {"args", serveArgs}, {"trust", true}}); err != nil {
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
		mcp: true,
	},
	"codex": {
		files: []initSpec{
			// Codex offers its own apply_patch and exec_command first, and
			// they cannot be turned off: their hooks guard them too.
			{path: filepath.Join(".codex", "config.toml"), edit: func(f *initFile, text string) (string, error) {
				out, err := editCodex(f, text)
				if err != nil {
					return "", err
				}
				if out, err = editCodexOutputLimit(f, out); err != nil {
					return "", err
				}
				return editCodexHooks(f, out)
			}},
			{path: agentsFile, edit: editAgents},
		},
		notes: []string{
			"Codex reads .codex/config.toml only in a trusted project; otherwise put the same [mcp_servers.editguard] table in ~/.codex/config.toml, with the project's absolute path after --root.",
			"Codex's own apply_patch and exec_command cannot be turned off in its configuration, so init adds editguard's hooks for them too (Codex runs them once they are trusted: review them with /hooks). With the OpenAI models it knows, Codex offers MCP tools behind its tool_search tool, so the model finds editguard's tools by searching for them.",
		},
		mcp:   true,
		hooks: true,
	},
	"cursor": {
		files: []initSpec{
			{path: filepath.Join(".cursor", "mcp.json"), edit: func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					return addServerJSON(d, f, orderedObject{{"command", f.progs.editguard}, {"args", cursorServeArgs}})
				})
			}},
		},
		notes: []string{
			"Cursor's own edit tools cannot be turned off in mcp.json: ask for the editguard tools in a project rule (.cursor/rules).",
		},
		mcp: true,
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

// initRun is one init: its flags, the client chosen and what it did.
type initRun struct {
	e                            *env
	name                         string // the client
	client                       initClient
	dryRun, hooks, turns, shared bool
	bare                         bool
	via                          string // --via: how the hooks reach editguard
	progs                        initPrograms
	s                            *editguard.Session
	rep                          *initReport
}

func runInit(ctx context.Context, e *env, args []string) error {
	r := &initRun{e: e}
	fs := newFlagSet(initCmd.name)
	fs.BoolVar(&r.dryRun, "dry-run", false, "show the changes, write nothing")
	fs.BoolVar(&r.hooks, "hooks", false, "guard the client's own file tools with editguard's hooks, instead of adding the MCP server")
	fs.StringVar(&r.via, "via", "command", "with --hooks for claude-code: `command` (editguard-hook, a process per event; fails closed)\nor mcp (a tool on an MCP server Claude Code keeps running; Claude Code lets the tool run when it is down)")
	fs.BoolVar(&r.turns, "turns", false, "with --hooks: also forget the session's reads at the start of each turn (Claude Code, Gemini CLI)")
	fs.BoolVar(&r.shared, "shared", false, "write Claude Code's deny rules and hooks to .claude/settings.json, which the repository shares,\nnot to this clone's .claude/settings.local.json")
	fs.BoolVar(&r.bare, "bare-names", false, "write the programs' names alone (editguard, editguard-hook), not their absolute paths,\nfor a PATH you manage yourself: the client must find them on its own PATH")
	fs.BoolVar(&e.json, "json", e.json, "print what was done as JSON")
	pos, err := parseCommand(e, initCmd, fs, args)
	if err != nil {
		return err
	}
	if err := r.choose(pos); err != nil {
		return err
	}
	// Find the programs before anything is written: a configuration that
	// names a program the client cannot start leaves it unguarded.
	if r.progs, err = resolvePrograms(r.name, r.bare, r.client.hooks); err != nil {
		return err
	}
	ws, err := e.workspace()
	if err != nil {
		return err
	}
	r.s = ws.NewSession("editguard-init")
	r.rep = &initReport{Client: r.name, Root: ws.Dir(), DryRun: r.dryRun}
	if err := r.plan(ctx); err != nil {
		return err
	}
	if err := r.write(ctx); err != nil {
		return err
	}
	r.notes(ctx, ws.Dir())
	if !r.dryRun {
		// Run what the configuration now names, as the client will.
		setup, err := readClientSetup(ws.Dir(), r.name)
		if err != nil {
			return err
		}
		r.rep.Checks = runSetupChecks(ctx, setup, r.client.mcp, r.client.hooks, &r.progs)
		if r.via == "mcp" {
			r.rep.Checks = append(r.rep.Checks, checkHookMCP(ctx, ws.Dir(), r.progs.editguard))
		}
	}
	return r.report()
}

// choose picks the client the command line names, among those of the mode
// (MCP server or hooks), and checks the flags that depend on it.
func (r *initRun) choose(pos []string) error {
	clients := initClients
	if r.hooks {
		clients = initHookClients
	}
	if len(pos) != 1 {
		return usagef(initCmd.name, "init takes one client: %s", strings.Join(initClientNames(clients), ", "))
	}
	var ok bool
	r.name = pos[0]
	r.client, ok = clients[r.name]
	switch {
	case !ok && r.hooks && initClients[r.name].files != nil:
		return usagef(initCmd.name, "editguard has no hooks for %s: use one of %s, or init %s without --hooks", r.name, strings.Join(initClientNames(clients), ", "), r.name)
	case !ok:
		return usagef(initCmd.name, "unknown client %q: use one of %s", r.name, strings.Join(initClientNames(clients), ", "))
	case r.turns && (!r.hooks || turnHooks[r.name].event == ""):
		return usagef(initCmd.name, "--turns needs --hooks, for claude-code or gemini")
	case r.via != "command" && r.via != "mcp":
		return usagef(initCmd.name, "--via takes command or mcp, not %q", r.via)
	case r.via == "mcp" && (!r.hooks || r.name != "claude-code"):
		return usagef(initCmd.name, "--via mcp needs --hooks, for claude-code (Claude Code's hooks of type mcp_tool)")
	case r.via == "mcp":
		r.client = claudeHooksViaMCP
	}
	return nil
}

// plan reads and edits every file before any is written, so that a file
// that does not parse leaves all of them as they were.
func (r *initRun) plan(ctx context.Context) error {
	tools := toolset.Names(false)
	for _, spec := range r.client.files {
		if r.shared && spec.shared != "" {
			spec.path, spec.shared = spec.shared, ""
		}
		f := &initFile{Path: filepath.ToSlash(spec.path), tools: tools, progs: r.progs, local: spec.shared != "", turns: r.turns}
		res, err := r.s.Read(ctx, spec.path, nil)
		switch {
		case errors.Is(err, editguard.ErrNotFound):
		case err != nil:
			return err
		case res.Truncated:
			return fmt.Errorf("%s: read only in part", spec.path)
		default:
			f.exists, f.old = true, res.Content
		}
		if f.text, err = spec.edit(f, f.old); err != nil {
			return &editguard.Error{
				Code:         editguard.CodeInvalidArgument,
				Message:      err.Error(),
				Details:      map[string]any{"path": f.Path},
				RecoveryHint: fmt.Sprintf("fix %s (or move it aside), then run editguard init %s again; no file was changed", f.Path, r.name),
				Err:          err,
			}
		}
		r.rep.Files = append(r.rep.Files, f)
	}
	return nil
}

// write writes each planned file that changed, as a guarded change (a new
// file must still not exist), or with --dry-run keeps its diff.
func (r *initRun) write(ctx context.Context) error {
	for _, f := range r.rep.Files {
		f.Action = "unchanged"
		if f.exists && f.text == f.old {
			continue
		}
		opts := &editguard.WriteOptions{DryRun: r.dryRun, AllowPlaceholders: true}
		if !f.exists {
			opts.Precondition = &editguard.Precondition{MustNotExist: true}
		}
		res, err := r.s.Write(ctx, f.Path, f.text, opts)
		if err != nil {
			return err
		}
		f.Action = "changed"
		if !f.exists {
			f.Action = "created"
		}
		if r.dryRun {
			f.Diff = res.Diff
		}
	}
	return nil
}

// notes adds the client's notes, what keeping its local settings out of
// git took, and what --bare-names asks of the PATH.
func (r *initRun) notes(ctx context.Context, root string) {
	r.rep.Notes = append(r.rep.Notes, r.client.notes...)
	for _, f := range r.rep.Files {
		if f.local {
			r.rep.Notes = append(r.rep.Notes, keepLocal(ctx, root, f.Path, r.dryRun)...)
		}
	}
	if r.bare {
		r.rep.Notes = append(r.rep.Notes, "--bare-names: the client starts editguard by its name alone, so editguard and editguard-hook must be on the PATH the client runs with (which may not be this shell's); run editguard doctor "+r.name+" from there to check")
	}
}

// report prints what init did, and fails when the setup it wrote does not
// work.
func (r *initRun) report() error {
	e := r.e
	if e.json {
		if err := e.printJSON(r.rep); err != nil {
			return err
		}
	} else {
		printInit(e, r.rep)
	}
	if failed := failedChecks(r.rep.Checks); len(failed) > 0 {
		fmt.Fprintf(e.stderr, "editguard: the setup init wrote does not work: %s\n", failed[0].Message)
		if failed[0].Fix != "" {
			fmt.Fprintf(e.stderr, "hint: %s\n", failed[0].Fix)
		}
		fmt.Fprintf(e.stderr, "editguard: until this is fixed, %s is not guarded by editguard. The configuration was written and stays as it is; run editguard doctor %s once it is fixed.\n", clientTitle(r.name), r.name)
		return exitStatus(exitError)
	}
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
	for _, c := range rep.Checks {
		printCheck(w, "check: ", c)
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
	d, err := parseJSONDoc(src, jsoncFiles[f.Path])
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
	return addNamedServerJSON(d, f, "editguard", want)
}

// addNamedServerJSON adds mcpServers.SERVER, or reports the one there.
func addNamedServerJSON(d *jsonDoc, f *initFile, server string, want orderedObject) error {
	name := "mcpServers." + server
	n, err := d.ensure([]string{"mcpServers", server}, want)
	if err != nil {
		return err
	}
	if n == nil {
		f.Added = append(f.Added, name)
		return nil
	}
	got, _ := d.decode(n).(map[string]any)
	if !sameServer(got, want) {
		f.Kept = append(f.Kept, fmt.Sprintf("%s has other settings: %s", name, d.text[n.start:n.end]))
		return nil
	}
	c, _ := got["command"].(string)
	if compareServerCommand(c, f.progs.editguard) != commandReplace {
		f.Present = append(f.Present, name)
		return nil
	}
	// An earlier init's bare name, or a program that is gone.
	cn := n.member("command")
	if err := d.splice(cn.start, cn.end, string(mustJSON(f.progs.editguard))); err != nil {
		return err
	}
	f.Added = append(f.Added, fmt.Sprintf("%s: command %s, was %s", name, f.progs.editguard, c))
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
			w, _ := m.v.(string)
			if filepath.Base(c) != filepath.Base(w) {
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

// codexServer is the table init appends to Codex's config.toml, starting
// the program command. Without default_tools_approval_mode "approve", Codex
// asks before each call of a tool that is not read-only, and codex exec
// refuses them ("MCP tool call requires approval, but approval policy is
// never").
func codexServer(command string) string {
	var q []string
	for _, a := range serveArgs {
		q = append(q, tomlString(a))
	}
	return "[mcp_servers.editguard]\ncommand = " + tomlString(command) + "\nargs = [" + strings.Join(q, ", ") + "]\ndefault_tools_approval_mode = \"approve\"\n"
}

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
			switch {
			case t == nil || filepath.Base(cmd) != editguardName || !slices.Equal(sargs, serveArgs):
				f.Kept = append(f.Kept, name+" has other settings")
			case compareServerCommand(cmd, f.progs.editguard) != commandReplace:
				f.Present = append(f.Present, name)
			default:
				// An earlier init's bare name, or a program that is gone.
				if out, ok := setTOMLKey(text, "[mcp_servers.editguard]", "command", tomlString(f.progs.editguard)); ok {
					f.Added = append(f.Added, fmt.Sprintf("%s: command %s, was %s", name, f.progs.editguard, cmd))
					return out, nil
				}
				f.Kept = append(f.Kept, fmt.Sprintf("%s starts %s, which the client may not find: set its command to %s", name, cmd, tomlString(f.progs.editguard)))
			}
			return text, nil
		}
		if doc.inline["mcp_servers"] {
			return "", fmt.Errorf("mcp_servers is an inline table, which a [mcp_servers.editguard] table cannot extend; add editguard = { command = %s, args = [\"--root\", \".\", \"serve\"] } to it by hand", tomlString(f.progs.editguard))
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
	out += codexServer(f.progs.editguard)
	// Check what was made.
	nd, err := parseTOML(out)
	if err != nil || nd.get("mcp_servers", "editguard", "command") != f.progs.editguard {
		return "", fmt.Errorf("internal error: the new configuration does not parse as intended (%v)", err)
	}
	f.Added = append(f.Added, name)
	return out, nil
}

// setTOMLKey sets key to the TOML value val in the table whose header line
// is header, line by line: the key's line in that table is replaced, with
// its indentation, and every other byte stays as it was. It reports false
// when there is no such line, and when the result does not parse or
// changed anything else.
func setTOMLKey(text, header, key, val string) (string, bool) {
	before, err := parseTOML(text)
	if err != nil {
		return text, false
	}
	lines := strings.SplitAfter(text, "\n")
	in := false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = t == header
			continue
		}
		k, _, ok := strings.Cut(t, "=")
		if !in || !ok || strings.TrimSpace(k) != key {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		nl := ""
		if strings.HasSuffix(l, "\n") {
			nl = "\n"
		}
		lines[i] = indent + key + " = " + val + nl
		out := strings.Join(lines, "")
		after, err := parseTOML(out)
		if err != nil {
			return text, false
		}
		// Only that key changed.
		want, _ := parseTOML(key + " = " + val)
		path := append(tomlHeaderPath(header), key)
		if !reflect.DeepEqual(after.get(path...), want.get(key)) {
			return text, false
		}
		setTOMLValue(before.root, path, want.get(key))
		if !reflect.DeepEqual(after.root, before.root) {
			return text, false
		}
		return out, true
	}
	return text, false
}

// tomlHeaderPath is the path of a table header "[a.b]" made of bare keys.
func tomlHeaderPath(header string) []string {
	return strings.Split(strings.Trim(header, "[]"), ".")
}

// setTOMLValue sets the value at path in a parsed document's tables.
func setTOMLValue(t map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, _ := t[k].(map[string]any)
		if next == nil {
			return
		}
		t = next
	}
	t[path[len(path)-1]] = v
}
