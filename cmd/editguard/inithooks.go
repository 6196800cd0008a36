package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// What "init CLIENT --hooks" writes: the client keeps its own file tools,
// and editguard hook guards them (see hook.go).

// initHook is one hook init adds: the client's event, and the tools it
// runs for (a regular expression in each of these clients).
type initHook struct {
	event, matcher string
}

// The hook commands. Claude Code sets CLAUDE_PROJECT_DIR for its hooks;
// Gemini CLI and Codex start them in the directory they work in, which
// "--root ." names, as the server's configuration does. (Gemini CLI
// puts its own quoting around $GEMINI_PROJECT_DIR, so the variable would
// need to be written unquoted; "." needs no quoting at all.)
//
// When editguard-hook is installed next to this program (go install
// ./cmd/... puts both in one directory), init writes it instead: it answers
// the same events the same way, and starts in a fraction of the time (see
// "editguard help hook").
func hookCommand(client string) string {
	root := "."
	if client == "claude-code" {
		root = `"$CLAUDE_PROJECT_DIR"`
	}
	if fastHookInstalled() {
		if client == "claude-code" {
			return "editguard-hook --root " + root
		}
		return "editguard-hook --root " + root + " --client " + client
	}
	if client == "claude-code" {
		return "editguard --root " + root + " hook"
	}
	return "editguard --root " + root + " hook --client " + client
}

// fastHookInstalled reports whether editguard-hook is next to this program.
var fastHookInstalled = func() bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	fi, err := os.Stat(filepath.Join(filepath.Dir(self), "editguard-hook"))
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

var (
	// Claude Code's Read needs only the hook after it.
	// Bash runs between two checkpoints (hookshell.go).
	claudeHooks = []initHook{
		{"PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash"},
		{"PostToolUse", "Read|Write|Edit|MultiEdit|NotebookEdit|Bash"},
	}
	// Gemini CLI matches the expression anywhere in the tool's name, and
	// an MCP tool's name is mcp_SERVER_TOOL: anchored, it matches only
	// the built-in tools.
	geminiHooks = []initHook{
		{"BeforeTool", "^(write_file|replace|run_shell_command)$"},
		{"AfterTool", "^(read_file|write_file|replace|run_shell_command)$"},
	}
	// Codex names exec_command's events Bash.
	codexHooks = []initHook{
		{"PreToolUse", "^(apply_patch|Bash)$"},
		{"PostToolUse", "^(apply_patch|Bash)$"},
	}
)

var initHookClients = map[string]initClient{
	"claude-code": {
		files: []initSpec{
			{filepath.Join(".claude", "settings.json"), func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					for _, h := range claudeHooks {
						if err := addHookJSON(d, f, h, orderedObject{{"type", "command"}, {"command", hookCommand("claude-code")}}); err != nil {
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
			"Bash runs between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change.",
		},
	},
	"gemini": {
		files: []initSpec{
			{filepath.Join(".gemini", "settings.json"), func(f *initFile, text string) (string, error) {
				return editJSON(f, text, func(d *jsonDoc) error {
					for _, h := range geminiHooks {
						if err := addHookJSON(d, f, h, orderedObject{{"name", "editguard"}, {"type", "command"}, {"command", hookCommand("gemini")}}); err != nil {
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
			"run_shell_command runs between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change.",
		},
	},
	"codex": {
		files: []initSpec{
			{filepath.Join(".codex", "config.toml"), editCodexHooks},
		},
		notes: []string{
			"Codex reads .codex/config.toml only in a trusted project, and runs hooks only once they are trusted too: start codex here and review them (/hooks). codex exec runs hooks not yet trusted only with --dangerously-bypass-hook-trust.",
			"Shell commands (exec_command, whose events Codex names Bash) run between two checkpoints: every file a command changes is recorded and kept, and the model is told when a command overwrote someone else's change. Simple reads (cat, head, sed -n, grep...) count as reads; a file the session has neither read so nor patched is checked by apply_patch only against the patch's context lines.",
		},
	},
}

// earlierMatchers are the matchers an earlier init wrote for each event,
// which init widens to the ones it writes now.
var earlierMatchers = map[string][]string{
	"PreToolUse":  {"Write|Edit|MultiEdit|NotebookEdit", "^apply_patch$"},
	"PostToolUse": {"Read|Write|Edit|MultiEdit|NotebookEdit", "^apply_patch$"},
	"BeforeTool":  {"^(write_file|replace)$"},
	"AfterTool":   {"^(read_file|write_file|replace)$"},
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// isHookCommand reports whether a hook's command runs editguard hook or
// editguard-hook.
func isHookCommand(c string) bool {
	fields := strings.Fields(c)
	if len(fields) == 0 {
		return false
	}
	prog := filepath.Base(strings.Trim(fields[0], `"'`))
	return prog == "editguard-hook" || prog == "editguard" && slices.Contains(fields, "hook")
}

// addHookJSON adds the hook handler to hooks.EVENT, in the format Claude
// Code and Gemini CLI share: [{"matcher": M, "hooks": [handler]}]. A
// group that already runs editguard hook is reported, not changed.
func addHookJSON(d *jsonDoc, f *initFile, h initHook, handler orderedObject) error {
	label := "hooks." + h.event
	var command string
	for _, m := range handler {
		if m.k == "command" {
			command, _ = m.v.(string)
		}
	}
	if n := d.get("hooks", h.event); n != nil && n.kind == '[' {
		for _, el := range n.vals {
			group, _ := d.decode(el).(map[string]any)
			handlers, _ := group["hooks"].([]any)
			for _, x := range handlers {
				hm, _ := x.(map[string]any)
				c, _ := hm["command"].(string)
				if !isHookCommand(c) {
					continue
				}
				old, _ := group["matcher"].(string)
				switch {
				case old == h.matcher && c == command:
					f.Present = append(f.Present, label+": editguard hook")
				case slices.Contains(earlierMatchers[h.event], old):
					// Written by an earlier init: widened to the tools
					// guarded now.
					if mn := el.member("matcher"); mn != nil {
						if err := d.splice(mn.start, mn.end, string(mustJSON(h.matcher))); err != nil {
							return err
						}
						f.Added = append(f.Added, fmt.Sprintf("%s: editguard hook for %s, was for %s", label, h.matcher, old))
					}
				default:
					f.Kept = append(f.Kept, fmt.Sprintf("%s has an editguard hook with other settings: %s", label, inlineJSON(group)))
				}
				return nil
			}
		}
	}
	if err := d.appendValue([]string{"hooks", h.event}, orderedObject{{"matcher", h.matcher}, {"hooks", []any{handler}}}); err != nil {
		return err
	}
	f.Added = append(f.Added, fmt.Sprintf("%s: editguard hook for %s", label, h.matcher))
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
	out := widenCodexMatchers(f, text)
	if out != text {
		if doc, err = parseTOML(out); err != nil {
			return "", fmt.Errorf("internal error: widening the matchers made invalid TOML (%v)", err)
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
			if found := codexHookGroup(f, label, h, groups); found {
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
			label, tomlString(h.matcher), label, tomlString(hookCommand("codex")))
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
		if !codexHookGroup(&initFile{}, "", h, groups) {
			return "", fmt.Errorf("internal error: the new configuration lacks the hook for %s", h.event)
		}
	}
	return out, nil
}

// widenCodexMatchers rewrites the matcher of each [[hooks.EVENT]] table
// whose hooks run editguard and whose matcher an earlier init wrote to the
// one init writes now, line by line: the table's "matcher = " line, and a
// "command = " line of editguard's among the lines up to the next table
// that is not one of its own.
func widenCodexMatchers(f *initFile, text string) string {
	lines := strings.SplitAfter(text, "\n")
	for _, h := range codexHooks {
		header := "[[hooks." + h.event + "]]"
		for i := 0; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) != header {
				continue
			}
			matcher, ours := -1, false
			old := ""
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
						if matcher < 0 && slices.Contains(earlierMatchers[h.event], str) {
							matcher, old = j, str
						}
					case "command":
						ours = ours || isHookCommand(str)
					}
				}
			}
			if matcher >= 0 && ours {
				indent := lines[matcher][:len(lines[matcher])-len(strings.TrimLeft(lines[matcher], " \t"))]
				lines[matcher] = indent + "matcher = " + tomlString(h.matcher) + "\n"
				f.Added = append(f.Added, fmt.Sprintf("hooks.%s: editguard hook for %s, was for %s", h.event, h.matcher, old))
			}
		}
	}
	return strings.Join(lines, "")
}

// codexHookGroup reports whether one of the [[hooks.EVENT]] groups runs
// editguard hook, and reports it in f.
func codexHookGroup(f *initFile, label string, h initHook, groups []any) bool {
	for _, g := range groups {
		group, _ := g.(map[string]any)
		handlers, _ := group["hooks"].([]any)
		for _, x := range handlers {
			hm, _ := x.(map[string]any)
			c, _ := hm["command"].(string)
			if !isHookCommand(c) {
				continue
			}
			if group["matcher"] == h.matcher && c == hookCommand("codex") {
				f.Present = append(f.Present, label+": editguard hook")
			} else {
				f.Kept = append(f.Kept, label+" has an editguard hook with other settings")
			}
			return true
		}
	}
	return false
}
