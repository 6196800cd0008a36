package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/editguard/editguard"
)

// Shell tools under the hooks.
//
// A client's shell tool (Claude Code's Bash and PowerShell, Gemini CLI's
// run_shell_command, Codex's exec_command), and a shell command Claude
// Code runs for a skill or slash command (skillShellEvents), runs between
// two checkpoints of the workspace (editguard.Session.BeginCommand): the hook before the tool
// makes every covered file's content recoverable, the hook after it records
// each file the command created, changed or deleted, as "editguard exec"
// does. A command cannot be refused before it runs (what it will touch is
// unknown), so the check comes after: when the command replaced or deleted
// a file whose content was not what the session last read or wrote, or
// discarded uncommitted work that nobody in the session wrote (git
// checkout -- f, git stash, rm over a person's change: see editguard's
// command_lostwork.go), the answer after the tool tells the model which
// files, and the history version that keeps what was lost
// (additionalContext, appended to the tool's result).
//
// The two hooks run in separate processes; they find each other's
// checkpoint by an id made from the session and the client's id of the
// tool call (tool_use_id), or, for a client that sends none, the command's
// text.

// shellTools are, per client, the tools whose input's "command" is a shell
// command. Claude Code offers PowerShell beside Bash where
// CLAUDE_CODE_USE_POWERSHELL_TOOL is set (on Windows, by default).
var shellTools = map[string][]string{
	"claude-code": {"Bash", "PowerShell"},
	"gemini":      {"run_shell_command"},
	"codex":       {"Bash"}, // exec_command's events, as Codex 0.169 names them
}

// skillShellEvents are, per client, the events before and after a shell
// command the client runs outside its shell tool. Claude Code runs the
// commands a skill or a slash command embeds (!`command`) while it expands
// the prompt, with the event PreSkillShellCommand before each (2.1.332;
// earlier versions run such commands without a hook, and ignore the event
// with a warning). 2.1.332 has no event after one, and warns of a
// PostSkillShellCommand hook it does not know, so init registers only the
// first: the command stays in progress until a later checkpoint ends it
// (skillShellMaxAge), and an after-event, should a client send one, ends
// it at once. The event carries tool_name (the shell tool's), tool_input
// with the command, tool_use_id, command_name, command_source and
// invoked_by beside the common fields (a top-level "command" is read
// too); a command is recorded as the tool skillShellTool.
var skillShellEvents = map[string][2]string{
	"claude-code": {"PreSkillShellCommand", "PostSkillShellCommand"},
}

// skillShellTool names the ledger records of a skill's shell command.
const skillShellTool = "SkillShellCommand"

// skillShellMaxAge is how long a skill's shell command stays in progress:
// the client runs it while it expands the prompt, before the model
// answers, and sends no event after it, so the first checkpoint this long
// after it began (the next shell tool's, usually) records what it changed,
// as an unended command.
const skillShellMaxAge = time.Minute

// isSkillShell reports whether ev is one of client's skillShellEvents, and
// whether it is the one before the command.
func isSkillShell(client string, ev *hookEvent) (skill, before bool) {
	evs, ok := skillShellEvents[client]
	if !ok || ev.Event == "" {
		return false, false
	}
	return ev.Event == evs[0] || ev.Event == evs[1], ev.Event == evs[0]
}

// shellCommand returns the shell command of a shell tool's event, or of
// a skill's shell command, and whether the event is one.
func shellCommand(client string, ev *hookEvent) (string, bool) {
	skill, _ := isSkillShell(client, ev)
	if !skill && !slices.Contains(shellTools[client], ev.Tool) {
		return "", false
	}
	var in struct {
		Command json.RawMessage `json:"command"`
		Cmd     json.RawMessage `json:"cmd"`
	}
	if len(ev.Input) > 0 && unmarshalInput(ev.Input, &in) != nil {
		return "", false
	}
	raw := in.Command
	if len(raw) == 0 {
		raw = in.Cmd
	}
	if len(raw) == 0 && skill {
		raw = ev.Command
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, true
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil && len(argv) > 0 {
		return shellLine(argv), true
	}
	return "", false
}

// commandID names the checkpoint of one shell tool call.
func commandID(session string, ev *hookEvent, command string) string {
	key := "tool\x00" + ev.ToolUseID
	if ev.ToolUseID == "" {
		key = "command\x00" + command
	}
	sum := sha256.Sum256([]byte(session + "\x00" + key))
	return "h-" + hex.EncodeToString(sum[:12])
}

// hookShell handles the events before and after a shell tool.
func hookShell(ctx context.Context, e *env, client string, c *hookClient, ev *hookEvent, command string, failOpen bool) error {
	skill, skillBefore := isSkillShell(client, ev)
	before := ev.Event == c.before || skillBefore
	// The client runs the command in the tree, beside whoever else
	// writes there: nothing tells its writes from theirs.
	opts := &editguard.CommandOptions{Tool: ev.Tool, WriterUnknown: true}
	if skill {
		// Not a tool's event: a failure before it blocks the command
		// with the answer every Claude Code event reads.
		c = &hookClient{prefix: c.prefix, before: ev.Event,
			deny: func(reason string) any { return map[string]any{"decision": "block", "reason": reason} }}
		opts = &editguard.CommandOptions{Tool: skillShellTool, MaxAge: skillShellMaxAge, WriterUnknown: true}
	}
	w, err := e.workspace()
	if err != nil {
		return hookFailure(e, c, before, err, failOpen)
	}
	name := hookSessionName(c.prefix, ev.SessionID, ev.AgentID)
	s, err := w.OpenSession(name)
	if err != nil {
		return hookFailure(e, c, before, err, failOpen)
	}
	opts.ID = commandID(name, ev, command)
	id := opts.ID
	if before {
		cmd, err := s.BeginCommand(ctx, command, opts)
		if err != nil {
			return hookFailure(e, c, true, fmt.Errorf("checkpointing the workspace before the command: %w", err), failOpen)
		}
		if text := recoveredNotice(cmd.Recovered(), name); text != "" && c.tell != nil {
			return json.NewEncoder(e.stdout).Encode(c.tell(text))
		}
		return nil
	}
	cmd, err := s.ResumeCommand(id)
	var ge *editguard.Error
	if errors.As(err, &ge) && ge.Code == editguard.CodeNotFound {
		return nil // no checkpoint before it: nothing to compare with
	}
	if err != nil {
		return hookFailure(e, c, false, err, true)
	}
	res, err := cmd.End(ctx)
	if err != nil {
		return hookFailure(e, c, false, err, true)
	}
	// A simple read command (cat f, head -n 20 f) is a read of its files,
	// as the client's read tool would be. A file the command changed is
	// not: End set its baseline to the change, which, its writer unknown,
	// counts as no read (whether the command showed the file before or
	// after someone else's write, nothing tells).
	changed := map[string]bool{}
	for _, ch := range res.Changes {
		changed[ch.Path] = true
	}
	shellReadStep(ctx, w, s, client, ev, command, changed)
	if text := shellNotice(res); text != "" {
		return json.NewEncoder(e.stdout).Encode(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName":     ev.Event,
			"additionalContext": text,
		}})
	}
	return nil
}

// hookBatch handles the event after a batch of tool calls (Claude Code's
// PostToolBatch, which names each call with its input and response): a
// shell tool's call whose command is still in progress had no event
// after it (Claude Code sends none for a call its permissions denied, or
// that the person declined), and is ended here. Its command most likely
// did not run; what changed between the checkpoints is recorded as End
// records any shell command's, made by a writer unknown, so nothing is
// claimed as the command's that it may not have done, and the command
// does not stay in progress, overlapping every later one, until its
// maximum age. Nothing is read: a command that did not run showed
// nothing. Nothing is answered either: init has the client run this hook
// in the background (asyncHooks), where no answer reaches the model.
func hookBatch(ctx context.Context, e *env, client string, c *hookClient, ev *hookEvent) error {
	var calls []struct {
		Tool      string          `json:"tool_name"`
		Input     json.RawMessage `json:"tool_input"`
		ToolUseID string          `json:"tool_use_id"`
	}
	if len(ev.Calls) == 0 || json.Unmarshal(ev.Calls, &calls) != nil {
		return nil
	}
	name := hookSessionName(c.prefix, ev.SessionID, ev.AgentID)
	var s *editguard.Session
	for _, call := range calls {
		one := &hookEvent{SessionID: ev.SessionID, AgentID: ev.AgentID, Event: ev.Event, Tool: call.Tool, Cwd: ev.Cwd, Input: call.Input, ToolUseID: call.ToolUseID}
		command, ok := shellCommand(client, one)
		if !ok {
			continue
		}
		if s == nil {
			w, err := e.workspace()
			if err == nil {
				s, err = w.OpenSession(name)
			}
			if err != nil {
				return hookFailure(e, c, false, err, true)
			}
		}
		cmd, err := s.ResumeCommand(commandID(name, one, command))
		var ge *editguard.Error
		if errors.As(err, &ge) && ge.Code == editguard.CodeNotFound {
			continue // ended by the event after it, or never begun
		}
		if err != nil {
			return hookFailure(e, c, false, err, true)
		}
		if _, err := cmd.End(ctx); err != nil {
			return hookFailure(e, c, false, err, true)
		}
	}
	return nil
}

// recoveredNotice tells the model of session what BeginCommand found of
// its earlier commands that never reported their end (a skill's shell
// command, which has no event after it; an exec that was killed): what
// each changed was recorded now, the session's reads of those files do
// not count (the session never saw the command's result), and what it
// overwrote or discarded. Other sessions' commands are theirs to hear of.
func recoveredNotice(recovered []*editguard.CommandResult, session string) string {
	var parts []string
	for _, r := range recovered {
		if r.Session != session || !r.Unended || len(r.Changes) == 0 {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "editguard: an earlier command of yours never reported its end (%s); what it had changed was recorded now, and your reads of these files no longer count: read a file again before you edit it.\n", quoteCommand(r.Command))
		cappedLines(&b, len(r.Changes), r.Unlisted, func(i int) string { return r.Changes[i].Op + " " + r.Changes[i].Path })
		if text := commandNotice(r, "that command"); text != "" {
			b.WriteString(text)
		}
		parts = append(parts, strings.TrimSuffix(b.String(), "\n"))
	}
	return strings.Join(parts, "\n")
}

// quoteCommand shows a shell command in a notice: on one line, cut short.
func quoteCommand(command string) string {
	command = strings.Join(strings.Fields(command), " ")
	if len(command) > 120 {
		command = strings.ToValidUTF8(command[:117], "") + "..."
	}
	return "`" + command + "`"
}

// shellReadStep records in s the reads of the simple read command, but of
// the files in changed (End set their baselines): a command that
// shows the whole of its files reads them in full, unless its output is
// longer than the client shows the model (shellShown), when it reads them
// all in part, as one that shows part of them does.
func shellReadStep(ctx context.Context, w *editguard.Workspace, s *editguard.Session, client string, ev *hookEvent, command string, changed map[string]bool) {
	shown := shellShown[client]
	var full []string // read in full so far
	output := 0       // the output's length, as the client measures it
	for _, r := range shellReads(command) {
		p := r.path
		if !filepath.IsAbs(p) && ev.Cwd != "" {
			p = filepath.Join(ev.Cwd, p)
		}
		rel, err := filepath.Rel(w.Dir(), p)
		if err != nil || !filepath.IsLocal(rel) || changed[filepath.ToSlash(rel)] {
			continue
		}
		rel = filepath.ToSlash(rel)
		if !r.full {
			s.Read(ctx, rel, &editguard.ReadOptions{Limit: 1}) // a part of the file: a partial read
			continue
		}
		// A character takes at most 4 bytes: a read capped at 4 bytes a
		// character past the limit holds every character the client
		// shows, and is cut (a partial read) only if the output is longer.
		opts := &editguard.ReadOptions{}
		if shown.limit > 0 {
			opts.MaxBytes = 4*shown.limit + 4
		}
		res, err := s.Read(ctx, rel, opts)
		if err != nil {
			continue
		}
		full = append(full, rel)
		output += shown.measure(res.Content)
		if r.marked {
			output += 7 * res.TotalLines // a number, "%6d\t", or marks of a line's tabs and end
		}
		if res.Truncated {
			output = max(output, shown.limit+1)
		}
	}
	if shown.limit > 0 && output > shown.limit {
		for _, rel := range full {
			s.Read(ctx, rel, &editguard.ReadOptions{Limit: 1}) // the model saw part of the output
		}
	}
}

// shellNotice is what the model is told after a command: the files it
// replaced or deleted over someone else's change since the session's read,
// those whose uncommitted work nobody in the session wrote it discarded,
// and the files the session had read that changed while it ran by a
// writer editguard cannot tell (the command or someone else), or "" if
// none.
func shellNotice(res *editguard.CommandResult) string {
	return commandNotice(res, "this command")
}

// commandNotice is shellNotice of res, the command named by subject.
func commandNotice(res *editguard.CommandResult, subject string) string {
	ow, lost := res.Overwrites(), res.UncommittedWork()
	// The files read before whose change's writer is not known, but for
	// those listed as an overwrite or discarded work; one the session
	// never read it must read before changing it anyway.
	var unknown []string
	for _, c := range res.Changes {
		if c.WriterUnknown && c.ReadBefore && !c.Overwrote && !c.Uncommitted {
			unknown = append(unknown, c.Path)
		}
	}
	if len(ow) == 0 && len(lost) == 0 && len(unknown) == 0 {
		return ""
	}
	var b strings.Builder
	if len(ow) > 0 {
		b.WriteString("editguard: " + subject + " overwrote changes someone else made since you last read these files (their versions are kept):\n")
		noticeLines(&b, ow, "their version", "their version was made while the command ran and is not in history")
	}
	if len(lost) > 0 {
		b.WriteString("editguard: " + subject + " discarded uncommitted work that this session did not write (git's HEAD does not hold it; it is kept):\n")
		noticeLines(&b, lost, "the discarded work", "the discarded work is not in history")
	}
	if len(ow) > 0 || len(lost) > 0 {
		b.WriteString("Read the files again; if their change should stay, restore it and redo yours on top of it.")
	}
	if len(unknown) > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("editguard: these files you read changed while " + strings.Replace(subject, "this", "the", 1) + " ran, and editguard cannot tell whether the command or someone else (a person's editor, another program) changed them, so your earlier reads of them no longer count: read a file again before you edit it.\n")
		cappedLines(&b, len(unknown), 0, func(i int) string { return unknown[i] })
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// noticeLines writes a line of shellNotice per change, at most 20: what
// the command did to the file and the history version that restores what
// it displaced (what, in the line's words; notKept for one history lacks).
func noticeLines(b *strings.Builder, changes []editguard.CommandChange, what, notKept string) {
	cappedLines(b, len(changes), 0, func(i int) string {
		c := changes[i]
		verb := "replaced"
		if c.Op == "deleted" {
			verb = "deleted"
		}
		if c.NotInHistory {
			return fmt.Sprintf("%s %s; %s", verb, c.Path, notKept)
		}
		return fmt.Sprintf("%s %s; %s is history %s: editguard restore %s %s", verb, c.Path, what, c.BackupVersion, shellQuote(c.Path), c.BackupVersion)
	})
}

// cappedLines writes line(i) for the first n items, as "- LINE", at most
// 20 of them, then how many more there are (beyond, those not even
// listed) and where they are all.
func cappedLines(b *strings.Builder, n, beyond int, line func(i int) string) {
	for i := range min(n, 20) {
		fmt.Fprintf(b, "- %s\n", line(i))
	}
	if more := n - min(n, 20) + beyond; more > 0 {
		fmt.Fprintf(b, "... and %d more: editguard log lists them\n", more)
	}
}
