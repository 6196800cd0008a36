package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// What "init CLIENT --hooks" writes: the client keeps its own file tools,
// and editguard hook guards them (see hook.go).

// initHook is one hook init adds: the client's event, and the tools it
// runs for (a regular expression in each of these clients); for an event
// of no tool, no matcher, and what says when it runs.
type initHook struct {
	event, matcher string
	what           string
}

var (
	// Claude Code's Read needs only the hook after it.
	// Bash and PowerShell run between two checkpoints (hookshell.go), and
	// so do the shell commands of skills and slash commands, which run
	// outside any tool (skillShellEvents).
	claudeHooks = []initHook{
		{"PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", ""},
		{"PostToolUse", "Read|Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", ""},
		// Claude Code sends this instead of PostToolUse after a tool that
		// failed: a Bash call whose command exited non-zero (a failing
		// build or test) ends there, and a failed write may have
		// written part of its file.
		{"PostToolUseFailure", "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", ""},
		// After each batch of tool calls, every call named: a Bash call
		// its permissions denied (or the person declined) gets no event
		// after it, and its command, begun by PreToolUse, ends here
		// (asyncHooks).
		{"PostToolBatch", "", "after each batch of tool calls, to end a shell command no event after it ended"},
		// Only the event before: Claude Code 2.1.332 has no event after a
		// skill's shell command (it warns of one it does not know), so
		// the command ends at a later checkpoint (skillShellMaxAge).
		{skillShellEvents["claude-code"][0], "", "before each shell command of a skill or slash command"},
	}
	// Gemini CLI matches the expression anywhere in the tool's name, and
	// an MCP tool's name is mcp_SERVER_TOOL: anchored, it matches only
	// the built-in tools.
	geminiHooks = []initHook{
		{"BeforeTool", "^(write_file|replace|run_shell_command)$", ""},
		{"AfterTool", "^(read_file|write_file|replace|run_shell_command)$", ""},
	}
	// With --turns, the events at the start of each turn, for every
	// tool: the hook makes the session forget its reads (hookTurn).
	turnHooks = map[string]initHook{
		"claude-code": {"UserPromptSubmit", "", "at each turn's start"},
		"gemini":      {"BeforeAgent", "", "at each turn's start"},
	}
	// Codex names exec_command's events Bash (and so every shell command
	// the model runs: its shell tools share the one handler).
	codexHooks = []initHook{
		{"PreToolUse", "^(apply_patch|Bash)$", ""},
		{"PostToolUse", "^(apply_patch|Bash)$", ""},
	}
)

// asyncHooks are the events whose hook Claude Code is to run in the
// background ("async": true), not waiting for it: PostToolBatch comes after
// every batch of tool calls, of every tool, and has nothing to tell the
// model that must come before its next turn; waited for, its process
// would cost each batch some 20 ms.
var asyncHooks = map[string]bool{"PostToolBatch": true}

var initHookClients = map[string]initClient{
	"claude-code": {
		files: []initSpec{
			{path: claudeLocalSettings, shared: claudeSharedSettings, edit: func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					for _, h := range f.withTurns(claudeHooks, "claude-code") {
						handler := orderedObject{{"type", "command"}, {"command", hookCommand("claude-code", f.progs.hook)}}
						if asyncHooks[h.event] {
							handler = append(handler, orderedObject{{"async", true}}...)
						}
						if err := addHookJSON(d, f, h, "claude-code", handler); err != nil {
							return err
						}
					}
					if n := d.get("permissions", "deny"); n != nil && n.kind == '[' {
						var off []string
						for _, tool := range claudeDenied {
							if containsString(n, tool) {
								off = append(off, tool)
							}
						}
						if len(off) > 0 {
							f.Kept = append(f.Kept, fmt.Sprintf("permissions.deny turns off %s, which the hooks guard; remove the entries there to use the hooks", strings.Join(off, ", ")))
						}
					}
					return nil
				})
			}},
		},
		notes: []string{
			"Claude Code reads hooks when it starts: start it again in this project to use them.",
			"Bash runs between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change or discarded uncommitted work. Nothing tells the command's writes from a person's made while it runs: its changes are recorded as by a writer unknown, count as no read, and rewind leaves them unless --force (editguard exec isolates a command where Linux allows). A command that fails ends at PostToolUseFailure, and one the permissions deny at PostToolBatch (run in the background).",
			"So do PowerShell (CLAUDE_CODE_USE_POWERSHELL_TOOL) and the shell commands of skills and slash commands (PreSkillShellCommand, Claude Code 2.1.332 and later, which has no event after such a command: what the command changed is recorded by a later checkpoint; an earlier version warns that it ignores the event).",
		},
		hooks: true,
	},
	"gemini": {
		files: []initSpec{
			{path: filepath.Join(".gemini", "settings.json"), edit: func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					for _, h := range f.withTurns(geminiHooks, "gemini") {
						if err := addHookJSON(d, f, h, "gemini", orderedObject{{"name", "editguard"}, {"type", "command"}, {"command", hookCommand("gemini", f.progs.hook)}}); err != nil {
							return err
						}
					}
					for _, path := range [][]string{{"tools", "exclude"}, {"excludeTools"}} {
						n := d.get(path...)
						if n == nil || n.kind != '[' {
							continue
						}
						var off []string
						for _, tool := range append([]string{"read_file", "write_file", "replace"}, geminiExcluded...) {
							if containsString(n, tool) {
								off = append(off, tool)
							}
						}
						if len(off) > 0 {
							f.Kept = append(f.Kept, fmt.Sprintf("%s turns off %s, which the hooks guard; remove the entries there to use the hooks", strings.Join(path, "."), strings.Join(off, ", ")))
						}
					}
					return nil
				})
			}},
		},
		notes: []string{
			"Gemini CLI runs a project's hooks only in a trusted folder: run gemini here once and trust the folder.",
			"run_shell_command runs between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change or discarded uncommitted work. Nothing tells the command's writes from a person's made while it runs: its changes are recorded as by a writer unknown, count as no read, and rewind leaves them unless --force (editguard exec isolates a command where Linux allows).",
		},
		hooks: true,
	},
	"codex": {
		files: []initSpec{
			{path: filepath.Join(".codex", "config.toml"), edit: editCodexHooks},
		},
		notes: []string{
			"Codex reads .codex/config.toml only in a trusted project, and runs hooks only once they are trusted too: start codex here and review them (/hooks). codex exec runs hooks not yet trusted only with --dangerously-bypass-hook-trust.",
			"Shell commands (exec_command, whose events Codex names Bash) run between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change or discarded uncommitted work. Simple reads (cat, head, sed -n, grep...) count as reads; a file the session has neither read so nor patched is checked by apply_patch only against the patch's context lines.",
		},
		hooks: true,
	},
}

// earlierMatchers are the matchers an earlier init wrote for each event,
// which init widens to the ones it writes now.
var earlierMatchers = map[string][]string{
	"PreToolUse":  {"Write|Edit|MultiEdit|NotebookEdit", "Write|Edit|MultiEdit|NotebookEdit|Bash", "^apply_patch$"},
	"PostToolUse": {"Read|Write|Edit|MultiEdit|NotebookEdit", "Read|Write|Edit|MultiEdit|NotebookEdit|Bash", "^apply_patch$"},
	"BeforeTool":  {"^(write_file|replace)$"},
	"AfterTool":   {"^(read_file|write_file|replace)$"},
}

// withTurns returns hooks, and with --turns the client's hook at the start
// of each turn too.
func (f *initFile) withTurns(hooks []initHook, client string) []initHook {
	if h, ok := turnHooks[client]; ok && f.turns {
		return append(slices.Clone(hooks), h)
	}
	return hooks
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// isHookCommand reports whether a hook's command runs editguard hook or
// editguard-hook.
func isHookCommand(c string) bool {
	words, _ := commandWords(c)
	if len(words) == 0 {
		return false
	}
	prog := filepath.Base(words[0])
	return prog == hookName || prog == editguardName && slices.Contains(words, "hook")
}

// addHookJSON adds the hook handler to hooks.EVENT, in the format Claude
// Code and Gemini CLI share: [{"matcher": M, "hooks": [handler]}]. A
// group that already runs editguard hook is reported, or brought up to
// date where an earlier init wrote it; one with other settings is left as
// it is.
func addHookJSON(d *jsonDoc, f *initFile, h initHook, client string, handler orderedObject) error {
	label := "hooks." + h.event
	command := handlerCommand(handler)
	el, group, i := findHookJSON(d, h.event, command)
	if el == nil {
		return appendHookJSON(d, f, h, handler)
	}
	hm, _ := group["hooks"].([]any)[i].(map[string]any)
	c, _ := hm["command"].(string)
	old, _ := group["matcher"].(string)
	if isMCPHook(hm) && command == "" {
		// An mcp_tool hook of editguard's, and one is added.
		if old != h.matcher {
			f.Kept = append(f.Kept, fmt.Sprintf("%s has an editguard hook with other settings: %s", label, inlineJSON(group)))
		} else {
			f.Present = append(f.Present, label+": editguard hook (mcp_tool)")
		}
		return nil
	}
	// An earlier init wrote the matcher for the tools guarded then, or a
	// command naming a program by its name alone: both are brought up to
	// date.
	widen := old != h.matcher && slices.Contains(earlierMatchers[h.event], old)
	cmd := compareHookCommand(client, c, command)
	if old != h.matcher && !widen || cmd == commandOther {
		f.Kept = append(f.Kept, fmt.Sprintf("%s has an editguard hook with other settings: %s", label, inlineJSON(group)))
		return nil
	}
	if !widen && cmd == commandSame {
		f.Present = append(f.Present, label+": editguard hook")
		return nil
	}
	var edits []jsonEdit
	msg := fmt.Sprintf("%s: editguard hook for %s", label, h.matcher)
	if widen {
		if mn := el.member("matcher"); mn != nil {
			edits = append(edits, jsonEdit{mn, h.matcher})
			msg += ", was for " + old
		}
	}
	if cmd == commandReplace {
		if hn := el.member("hooks"); hn != nil && i < len(hn.vals) {
			if cn := hn.vals[i].member("command"); cn != nil {
				edits = append(edits, jsonEdit{cn, command})
				msg += fmt.Sprintf("; runs %s, was %s", command, c)
			}
		}
	}
	if err := spliceEdits(d, edits); err != nil {
		return err
	}
	if len(edits) > 0 {
		f.Added = append(f.Added, msg)
	}
	return nil
}

// handlerCommand returns the command a hook handler runs, or "" for one
// with no command, such as an mcp_tool hook.
func handlerCommand(handler orderedObject) string {
	var command string
	for _, m := range handler {
		if m.k == "command" {
			command, _ = m.v.(string)
		}
	}
	return command
}

// findHookJSON finds editguard's first hook in hooks.EVENT: a handler that
// runs editguard hook or, when command is "" (the hook added is an mcp_tool
// hook), editguard's mcp_tool hook. It returns the group that holds it, as
// a node and decoded, and the handler's index in the group's hooks, or a
// nil node when there is none.
func findHookJSON(d *jsonDoc, event, command string) (*jnode, map[string]any, int) {
	if n := d.get("hooks", event); n != nil && n.kind == '[' {
		for _, el := range n.vals {
			group, _ := d.decode(el).(map[string]any)
			handlers, _ := group["hooks"].([]any)
			for i, x := range handlers {
				hm, _ := x.(map[string]any)
				c, _ := hm["command"].(string)
				if isMCPHook(hm) && command == "" || isHookCommand(c) {
					return el, group, i
				}
			}
		}
	}
	return nil, nil, -1
}

// appendHookJSON appends a new group with the hook handler to
// hooks.EVENT: for the tools h matches, or with no matcher for an event of
// no tool.
func appendHookJSON(d *jsonDoc, f *initFile, h initHook, handler orderedObject) error {
	group := orderedObject{{"matcher", h.matcher}, {"hooks", []any{handler}}}
	what := "for " + h.matcher
	if h.matcher == "" { // an event of no tool: a turn's start, a skill's command
		group, what = group[1:], h.what
	}
	if err := d.appendValue([]string{"hooks", h.event}, group); err != nil {
		return err
	}
	f.Added = append(f.Added, fmt.Sprintf("hooks.%s: editguard hook %s", h.event, what))
	return nil
}

// jsonEdit is a string to write, as JSON, over one node of a jsonDoc.
type jsonEdit struct {
	n *jnode
	v string
}

// spliceEdits writes each edit's value over its node, from the end of the
// text, so that the places of the edits before stay where they are.
func spliceEdits(d *jsonDoc, edits []jsonEdit) error {
	slices.SortFunc(edits, func(a, b jsonEdit) int { return b.n.start - a.n.start })
	for _, ed := range edits {
		if err := d.splice(ed.n.start, ed.n.end, string(mustJSON(ed.v))); err != nil {
			return err
		}
	}
	return nil
}

// editCodexHooks adds editguard's hooks to Codex's config.toml, as arrays
// of tables at the end of the file.
func editCodexHooks(f *initFile, text string) (string, error) {
	doc, err := parseTOML(text)
	if err != nil {
		return "", fmt.Errorf("not valid TOML: %v", err)
	}
	switch doc.get("hooks").(type) {
	case nil:
	case map[string]any:
		if doc.inline["hooks"] {
			return "", errors.New("hooks is an inline table, which [[hooks.PreToolUse]] tables cannot extend; add editguard's hooks to it by hand")
		}
	default:
		return "", errors.New("hooks is not a table")
	}
	want := hookCommand("codex", f.progs.hook)
	out, upgraded := upgradeCodexHooks(f, text, want)
	if out != text {
		if doc, err = parseTOML(out); err != nil {
			return "", fmt.Errorf("internal error: bringing the hooks up to date made invalid TOML (%v)", err)
		}
	}
	for _, h := range codexHooks {
		label := "hooks." + h.event
		switch groups := doc.get("hooks", h.event).(type) {
		case nil:
		case []any:
			if !doc.arrays[label] {
				return "", fmt.Errorf("%s is an inline array, which a [[%s]] table cannot extend; add editguard's hook to it by hand", label, label)
			}
			report := f
			if upgraded[h.event] {
				report = &initFile{} // reported as brought up to date
			}
			if found := codexHookGroup(report, label, h, groups, want); found {
				continue
			}
		default:
			return "", fmt.Errorf("%s is not an array of tables", label)
		}
		if out != "" {
			if !strings.HasSuffix(out, "\n") {
				out += "\n"
			}
			out += "\n"
		}
		out += fmt.Sprintf("[[%s]]\nmatcher = %s\n\n[[%s.hooks]]\ntype = \"command\"\ncommand = %s\n",
			label, tomlString(h.matcher), label, tomlString(want))
		f.Added = append(f.Added, fmt.Sprintf("%s: editguard hook for %s", label, h.matcher))
	}
	if out == text {
		return text, nil
	}
	// Check what was made.
	nd, err := parseTOML(out)
	if err != nil {
		return "", fmt.Errorf("internal error: the new configuration does not parse (%v)", err)
	}
	for _, h := range codexHooks {
		groups, _ := nd.get("hooks", h.event).([]any)
		if !codexHookGroup(&initFile{}, "", h, groups, want) {
			return "", fmt.Errorf("internal error: the new configuration lacks the hook for %s", h.event)
		}
	}
	return out, nil
}

// upgradeCodexHooks brings the [[hooks.EVENT]] tables whose hooks run
// editguard up to date where an earlier init wrote them, as addHookJSON
// does, line by line: the table's "matcher = " line, when it names the
// tools an earlier init guarded, and the "command = " line of editguard's
// among the lines up to the next table that is not one of its own, when it
// names the program by its name alone or one that is gone.
// It returns the new text and the events whose hooks it changed.
func upgradeCodexHooks(f *initFile, text, want string) (string, map[string]bool) {
	upgraded := map[string]bool{}
	lines := strings.SplitAfter(text, "\n")
	set := func(i int, key, val string) {
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		lines[i] = indent + key + " = " + tomlString(val) + "\n"
	}
	for _, h := range codexHooks {
		header := "[[hooks." + h.event + "]]"
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != header {
				continue
			}
			matcher, command := -1, -1
			var old, oldCommand string
			for j := i + 1; j < len(lines); j++ {
				l := strings.TrimSpace(lines[j])
				if strings.HasPrefix(l, "[") && !strings.HasPrefix(l, "[[hooks."+h.event+".") && !strings.HasPrefix(l, "[hooks."+h.event+".") {
					break
				}
				if k, v, ok := strings.Cut(l, "="); ok {
					val, err := parseTOML("v = " + strings.TrimSpace(v))
					if err != nil {
						continue
					}
					str, _ := val.get("v").(string)
					switch strings.TrimSpace(k) {
					case "matcher":
						if matcher < 0 {
							matcher, old = j, str
						}
					case "command":
						if command < 0 && isHookCommand(str) {
							command, oldCommand = j, str
						}
					}
				}
			}
			if command < 0 {
				continue
			}
			widen := matcher >= 0 && old != h.matcher && slices.Contains(earlierMatchers[h.event], old)
			cmd := compareHookCommand("codex", oldCommand, want)
			if old != h.matcher && !widen || cmd == commandOther || !widen && cmd == commandSame {
				continue
			}
			msg := fmt.Sprintf("hooks.%s: editguard hook for %s", h.event, h.matcher)
			if widen {
				set(matcher, "matcher", h.matcher)
				msg += ", was for " + old
			}
			if cmd == commandReplace {
				set(command, "command", want)
				msg += fmt.Sprintf("; runs %s, was %s", want, oldCommand)
			}
			f.Added = append(f.Added, msg)
			upgraded[h.event] = true
		}
	}
	return strings.Join(lines, ""), upgraded
}

// codexHookGroup reports whether one of the [[hooks.EVENT]] groups runs
// editguard hook, and reports it in f: present when it runs want for the
// tools init guards.
func codexHookGroup(f *initFile, label string, h initHook, groups []any, want string) bool {
	for _, g := range groups {
		group, _ := g.(map[string]any)
		handlers, _ := group["hooks"].([]any)
		for _, x := range handlers {
			hm, _ := x.(map[string]any)
			c, _ := hm["command"].(string)
			if !isHookCommand(c) {
				continue
			}
			if group["matcher"] == h.matcher && compareHookCommand("codex", c, want) == commandSame {
				f.Present = append(f.Present, label+": editguard hook")
			} else {
				f.Kept = append(f.Kept, label+" has an editguard hook with other settings")
			}
			return true
		}
	}
	return false
}
