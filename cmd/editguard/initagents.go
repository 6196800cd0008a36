package main

import (
	"strings"
)

// Codex offers its own apply_patch and exec_command before any MCP tool,
// and with the models it knows puts MCP tools behind tool_search. init
// codex adds a short section to the project's AGENTS.md, which Codex puts
// in the model's instructions, telling the model to use editguard's tools.
// The section is marked, so that init can find and update it; everything
// else in the file stays as it is. It names the tools only where they are
// offered, so a teammate without editguard loses nothing.
const (
	agentsFile  = "AGENTS.md"
	agentsBegin = "<!-- editguard: begin (written by editguard init; edit outside these lines) -->"
	agentsEnd   = "<!-- editguard: end -->"
)

// agentsSection is what the model reads.
const agentsSection = `## Files: use editguard's tools

When the editguard tools are offered (mcp__editguard__read_file, edit_file,
write_file, apply_patch, search them with tool_search if they are not listed),
read and change files through them rather than through apply_patch or shell
commands that write files. They refuse a change to a file that someone else
changed since you read it (STALE_FILE, with the diff), keep every version
they replace (file_history, restore_file), and record every change.`

// editAgents adds editguard's section to the text of AGENTS.md, or brings
// the one an earlier init wrote up to date.
func editAgents(f *initFile, text string) (string, error) {
	block := agentsBegin + "\n" + agentsSection + "\n" + agentsEnd + "\n"
	i := strings.Index(text, agentsBegin)
	j := strings.Index(text, agentsEnd)
	switch {
	case i >= 0 && j > i:
		end := j + len(agentsEnd)
		if end < len(text) && text[end] == '\n' {
			end++
		}
		if text[i:end] == block {
			f.Present = append(f.Present, "the editguard section")
			return text, nil
		}
		f.Added = append(f.Added, "the editguard section, brought up to date")
		return text[:i] + block + text[end:], nil
	case text == "":
		f.Added = append(f.Added, "the editguard section")
		return block, nil
	}
	sep := "\n"
	if !strings.HasSuffix(text, "\n") {
		sep = "\n\n"
	}
	f.Added = append(f.Added, "the editguard section, at the end")
	return text + sep + block, nil
}
