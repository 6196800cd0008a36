package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/patch"
	"github.com/editguard/editguard/toolset"
)

var hookCmd = &command{
	name:    "hook",
	args:    "[--client claude-code|gemini|codex] [--fail-open] < EVENT | hook --serve [--idle D] | hook --mcp [--fail-open]",
	summary: "guard an agent's own file tools from its hooks",
	help: `Hook reads one hook event (JSON) of an agent on standard input and
answers in that agent's hook protocol, so that the agent's own file tools
get editguard's guarantees:

  after a read        what the tool showed the model (the event's
                      tool_response) is recorded as the session's read: of
                      the file when it is what the file holds, else of the
                      version the model saw (someone saved the file after
                      the tool read it), so that a change is then refused as
                      STALE_FILE; a read of some lines only is partial;
  before a change     the file must have been read (NOT_READ) and be
                      unchanged since (STALE_FILE, with what changed when it
                      is small), else the tool is denied with the reason,
                      which the model reads; what the file holds is saved
                      to history first ("it did not exist" for a new file);
  after a change      the ledger records it, and the read moves on.

Configure it for the events before and after the tools below, with the
command
  editguard --root DIR hook --client CLIENT
("editguard init CLIENT --hooks" writes that configuration). The session
is named from the client, the event's session_id and, for a subagent, its
agent_id: a subagent keeps its own reads.

claude-code (the default)
  Events PreToolUse, PostToolUse, PostToolUseFailure (after a tool that
  failed, as a Bash command that exited non-zero) and PostToolBatch
  (after each batch of calls: it ends a Bash command that no event after
  it ended, one the permissions denied); tools Read (partial when offset or
  limit leave lines out, or past 2,000 lines or a line of 2,000 bytes),
  Write (needs a full read), Edit, MultiEdit, NotebookEdit. Session
  claude-SESSION_ID. A subagent (the Agent tool) sends its parent's
  session_id and its own agent_id, so it has the session
  claude-SESSION_ID-AGENT_ID: as in Claude Code's own checks, a file the
  parent read is not read for the subagent, and a change the subagent
  makes is one the parent has not read. A conversation resumed with
  --resume or --continue keeps its session_id, and its reads.
gemini
  Events BeforeTool and AfterTool; tools read_file (partial when
  start_line and end_line leave lines out, or past 2,000 lines or a line
  of 2,000 bytes), write_file (needs a full read), replace. A denial is
  {"decision": "deny", "reason": ...}; the model gets "Tool execution
  blocked: REASON". Session gemini-SESSION_ID. read_many_files is not
  seen, so its reads do not count.
codex
  Events PreToolUse and PostToolUse; tool apply_patch, each file the patch
  adds, deletes, updates or moves. Codex has no read tool a hook sees (the
  model reads with shell commands), so a file the session has not seen
  may be patched: the patch's own context lines are what Codex checks.
  A file the session has seen (it patched it before) must be as it left
  it, else STALE_FILE; Codex blocks the whole patch and shows the model
  the reason. When the file changed but every hunk replaces lines that
  change left alone (as apply_patch merges), the patch goes through and
  the model is told, with the change. Session codex-SESSION_ID. Codex runs a project's hooks only
  once they are trusted (review them with /hooks in codex), or with
  --dangerously-bypass-hook-trust.

A faster start: editguard-hook
  editguard-hook [--root DIR] [--client C] [--fail-open] takes the same
  events and gives the same answers, and starts in a fraction of
  editguard's time: it hands the event over a unix socket to a hook
  server, "editguard hook --serve", which keeps the workspace open. With
  no server running it runs "editguard hook" itself (found next to
  editguard-hook, else on PATH) and starts one, which stops after
  --idle (10 minutes) without events, or as soon as its program, the
  root or the state directory is replaced. The socket is in
  $XDG_RUNTIME_DIR/editguard or $TMPDIR/editguard-UID, a directory that
  must be the user's own and closed to others (0700), else no server is
  used; the server also checks that each connection is the user's and
  names its root. "go install ./cmd/editguard ./cmd/editguard-hook"
  installs both programs, and init
  --hooks writes editguard-hook, by its absolute path.
  "kill $(cat SOCKET.lock)" stops a server.

As an MCP tool: hook --mcp
  editguard hook --mcp serves the tool "hook" on stdin/stdout, for
  Claude Code's hooks of type mcp_tool ("editguard init claude-code
  --hooks --via mcp" writes them): Claude Code starts it once, with the
  session, and calls the tool with the event's fields (objects as JSON
  text); the tool answers what hook would print. No process starts per
  event, but Claude Code lets the tool run when the server is down.

The tool's own write is not under editguard's lock: a program that writes
the file between the check and the tool's write is not seen by the check.
Shell tools (Claude Code's Bash and PowerShell, Gemini CLI's
run_shell_command, Codex's exec_command, whose events Codex names Bash),
and the shell commands of Claude Code's skills and slash commands
(event PreSkillShellCommand; Claude Code sends no event after such a
command, so a later checkpoint ends it; recorded as the tool
SkillShellCommand) run
between two checkpoints, as "editguard exec" runs a command: every file a
command created, changed or deleted is recorded with the command and kept
in history, and when it overwrote a change someone else made since the
session's read, or discarded uncommitted work the session did not write
(content git's HEAD does not hold: a git checkout -- f or rm over a
person's change; see exec's help), the answer after the tool tells the
model which files and how to restore what was lost. The client runs the
command in the tree, where nothing tells its writes from those of anyone
else (a person saving in an editor while it runs): every change is
recorded as made while the command ran by a writer unknown ("editguard
log" shows "ok (writer unknown)"), it counts as no read of the session's
(the answer after the tool names the files the session had read, and a
change of them needs a read first), and rewind leaves it unless
--force. A simple read command (cat,
less, more or nl of named files: a full read; head, tail, sed -n 'X,Yp',
grep or wc: a partial one; no pipes, redirections or expansions) counts
as a read of its files, a partial one when its output is longer than the
client shows the model (30,000 characters in Claude Code, 40,000 in Gemini
CLI, 10,000 tokens in Codex). If the hook itself
fails before a change, the tool is denied unless --fail-open is given.
Files outside the root are not editguard's to guard and are let through.`,
}

// hookEvent is the part of a hook event editguard uses; the clients share
// these names.
type hookEvent struct {
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"` // a subagent's, in Claude Code and Codex
	Event     string          `json:"hook_event_name"`
	Tool      string          `json:"tool_name"`
	Cwd       string          `json:"cwd"`
	Input     json.RawMessage `json:"tool_input"`
	Response  json.RawMessage `json:"tool_response"`
	ToolUseID string          `json:"tool_use_id"`
	// Command is the shell command of an event of no tool that runs one
	// (Claude Code's PreSkillShellCommand: see skillShellEvents).
	Command json.RawMessage `json:"command"`
	// Calls are the tool calls of an event after a batch of them
	// (Claude Code's PostToolBatch: see hookBatch).
	Calls json.RawMessage `json:"tool_calls"`
}

// hookStep is what the hook does with a file.
type hookStep int

const (
	hookRead   hookStep = iota // record the read the tool made
	hookGuard                  // check the file and keep what it holds, before the tool changes it
	hookRecord                 // record the change the tool made
)

// hookFile is one file an event is about, and what to do with it.
type hookFile struct {
	step hookStep
	path string // as the tool named it: absolute, or relative to the event's cwd

	// A read: the lines the tool returned (see editguard.ReadOptions),
	// and what it showed the model, when the event says.
	offset, limit, maxLine int
	shown                  *editguard.ShownRead
	// A change.
	opts editguard.GuardOptions
}

// A hookClient is one agent's hook protocol.
type hookClient struct {
	prefix string // of the session name
	before string // the event before a tool, which can deny it
	turn   string // the event that starts a turn: the session forgets its reads (init --turns)
	// batch is the event after a batch of tool calls, each named with
	// its input: a shell tool's call that no event after it ended is
	// ended there (hookBatch).
	batch string
	// files returns what the event asks of editguard; nothing for a tool
	// that is not a file tool.
	files func(ev *hookEvent) ([]hookFile, error)
	// deny is the answer that denies the tool, with a reason for the model.
	deny func(reason string) any
	// tell, if set, is the answer that lets the tool run and tells the
	// model something (an edit merged over another change).
	tell func(context string) any
	// words puts editguard's tool names in the client's words.
	words *strings.Replacer
}

// readLines is how many lines, and bytes in a line, Claude Code's Read and
// Gemini CLI's read_file return by default: a longer file, or line, was
// only partly read.
const readLines = 2000

var hookClients = map[string]*hookClient{
	"claude-code": {
		prefix: "claude",
		before: "PreToolUse",
		turn:   "UserPromptSubmit",
		batch:  "PostToolBatch",
		files:  claudeFiles,
		deny:   permissionDeny,
		tell:   preToolContext,
		words: strings.NewReplacer("call read_file on", "Read", "read_file", "Read", "edit_file", "Edit", "write_file", "Write",
			"no need to call Read again", "no new Read is needed"),
	},
	"gemini": {
		prefix: "gemini",
		before: "BeforeTool",
		turn:   "BeforeAgent",
		files:  geminiFiles,
		deny:   func(reason string) any { return map[string]any{"decision": "deny", "reason": reason} },
		words:  strings.NewReplacer("edit_file", "replace"),
	},
	"codex": {
		prefix: "codex",
		before: "PreToolUse",
		files:  codexFiles,
		deny:   permissionDeny,
		tell:   preToolContext,
		words: strings.NewReplacer("call read_file on", "read", "read_file", "a read", "edit_file", "apply_patch",
			"write_file", "apply_patch"),
	},
}

func hookClientNames() []string {
	var names []string
	for n := range hookClients {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sessionPart returns s with each run of characters other than ASCII
// letters, digits, '.', '_' and '-' replaced by one '-', for a session
// name. (Written out, not a regular expression: compiling one would cost
// every hook process more than the rest of its naming.)
func sessionPart(s string) string {
	var b strings.Builder
	other := false
	for _, r := range s {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
			other = false
		} else if !other {
			b.WriteByte('-')
			other = true
		}
	}
	return b.String()
}

func runHook(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(hookCmd.name)
	clientName := fs.String("client", "claude-code", "the agent whose hook event this is: "+strings.Join(hookClientNames(), ", "))
	failOpen := fs.Bool("fail-open", false, "let the tool run when the hook itself fails (default: deny it)")
	serve := fs.Bool("serve", false, "serve the events editguard-hook hands over, for the workspace at --root")
	idle := fs.Duration("idle", defaultHookIdle, "with --serve: stop after this long without an event")
	asMCP := fs.Bool("mcp", false, "answer the events as the MCP tool \"hook\" on stdin/stdout, for Claude Code's hooks of type mcp_tool")
	if _, err := parseCommand(e, hookCmd, fs, args); err != nil {
		return err
	}
	if *serve {
		return serveHooks(ctx, e, *idle)
	}
	if *asMCP {
		return serveHookMCP(ctx, e, *failOpen)
	}
	c, ok := hookClients[*clientName]
	if !ok {
		return usagef(hookCmd.name, "unknown client %q: use one of %s", *clientName, strings.Join(hookClientNames(), ", "))
	}
	ev, err := readHookEvent(e.stdin)
	if err == nil && ev.Event == hookProbeEvent {
		return answerHookProbe(e) // from init or doctor (doctor.go)
	}
	if err == nil && c.turn != "" && ev.Event == c.turn {
		return hookTurn(e, c, ev)
	}
	if err == nil && c.batch != "" && ev.Event == c.batch {
		return hookBatch(ctx, e, *clientName, c, ev)
	}
	if err == nil {
		if command, ok := shellCommand(*clientName, ev); ok {
			return hookShell(ctx, e, *clientName, c, ev, command, *failOpen)
		}
	}
	var files []hookFile
	if err == nil {
		files, err = c.files(ev)
	}
	before := ev.Event == c.before || ev.Event == "" // an event that did not parse may be one
	if err != nil {
		return hookFailure(e, c, before, fmt.Errorf("reading the hook event: %w", err), *failOpen)
	}
	if len(files) == 0 {
		return nil // not a file tool: nothing to say
	}
	return hookFileEvent(ctx, e, c, ev, files, before, *failOpen)
}

// hookTurn starts a turn in the event's session, as begin_turn does: it
// forgets the session's reads, so that each file is read again before this
// turn changes it. It prints nothing, since the clients add what a hook
// prints at a turn's start to the model's context, and a failure does not
// block the person's prompt: the changes stay guarded by content either way.
func hookTurn(e *env, c *hookClient, ev *hookEvent) error {
	w, err := e.workspace()
	if err == nil {
		var s *editguard.Session
		if s, err = w.OpenSession(hookSessionName(c.prefix, ev.SessionID, ev.AgentID)); err == nil {
			err = s.BeginTurn()
		}
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "editguard hook: could not start the turn, so reads from earlier turns still count: %v\n", err)
	}
	return nil
}

// readHookEvent reads the event on stdin (at most 16 MiB). With an error it
// still returns the event, as far as it decoded: what it says decides how
// the hook answers its failure.
func readHookEvent(stdin io.Reader) (*hookEvent, error) {
	var ev hookEvent
	data, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
	if err == nil {
		err = json.Unmarshal(data, &ev)
	}
	if err == nil && ev.SessionID == "" {
		err = errors.New("the event has no session_id")
	}
	return &ev, err
}

// hookFileEvent answers an event of a file tool (before says it comes before
// the tool) by taking each file's step in the event's session: reads and
// changes are recorded, and the guards' refusals deny the tool together,
// in one answer. A failure of the hook stops it: before the tool it denies
// the tool unless failOpen is set; a failure to record a read or a change
// only tells the user, as the tool has run.
func hookFileEvent(ctx context.Context, e *env, c *hookClient, ev *hookEvent, files []hookFile, before, failOpen bool) error {
	w, err := e.workspace()
	if err != nil {
		return hookFailure(e, c, before, err, failOpen)
	}
	s, err := w.OpenSession(hookSessionName(c.prefix, ev.SessionID, ev.AgentID))
	if err != nil {
		return hookFailure(e, c, before, err, failOpen)
	}
	var denials, notes []string
	for _, f := range files {
		p := hookPath(w, ev, f.path)
		switch f.step {
		case hookRead:
			if err := readStep(ctx, s, p, &f); err != nil {
				return hookFailure(e, c, false, err, true) // the read happened; nothing to deny
			}
		case hookGuard:
			denial, denied, note, err := guardStep(ctx, c, s, p, ev.Tool, &f.opts)
			if err != nil {
				return hookFailure(e, c, true, err, failOpen)
			}
			if denied {
				denials = append(denials, denial)
			}
			if note != "" {
				notes = append(notes, note)
			}
		case hookRecord:
			wait, err := s.RecordNoWait(ctx, p, ev.Tool)
			if err != nil && !outside(err) {
				return hookFailure(e, c, false, err, true)
			}
			if wait != nil {
				e.afterAnswer(func() { wait() })
			}
		}
	}
	if len(denials) > 0 {
		return hookDeny(e, c, strings.Join(denials, "\n"))
	}
	if len(notes) > 0 && c.tell != nil {
		return json.NewEncoder(e.stdout).Encode(c.tell(strings.Join(notes, "\n")))
	}
	return nil
}

// hookPath returns the path editguard is to use for p, a file an event
// names: p itself if it is absolute or the event has no cwd.
func hookPath(w *editguard.Workspace, ev *hookEvent, p string) string {
	if !filepath.IsAbs(p) && ev.Cwd != "" {
		// Relative to the event's cwd; named relative to the root
		// in what the model reads, as the model named it.
		p = filepath.Join(ev.Cwd, p)
		if rel, err := filepath.Rel(w.Dir(), p); err == nil && filepath.IsLocal(rel) {
			p = rel
		}
	}
	return p
}

// readStep records in s the read of p that the client's tool made, so
// that the session may edit the file: of the text the tool showed the
// model when the event has it (a file changed since the tool read it is
// then read as the version the model saw, not as it is now), else of the
// lines f says the tool returned, as the file is now.
func readStep(ctx context.Context, s *editguard.Session, p string, f *hookFile) error {
	var err error
	if f.shown != nil {
		_, err = s.ReadShown(ctx, p, f.shown)
	}
	if f.shown == nil || errors.Is(err, editguard.ErrTooLarge) {
		_, err = s.Read(ctx, p, &editguard.ReadOptions{Offset: f.offset, Limit: f.limit, MaxLineBytes: f.maxLine})
	}
	var ge *editguard.Error
	if errors.As(err, &ge) && ge.Code != editguard.CodeIO {
		return nil // not a text file editguard can read: no read to record
	}
	return err
}

// guardStep checks, before the client's tool changes p, that s may change
// it, and keeps what p holds (Session.Guard). denied says editguard
// refuses the change, and denial is why, in the client's words; err is the
// hook's own failure. A path outside the root is not editguard's to guard.
func guardStep(ctx context.Context, c *hookClient, s *editguard.Session, p, tool string, opts *editguard.GuardOptions) (denial string, denied bool, note string, err error) {
	res, err := s.Guard(ctx, p, tool, opts)
	if outside(err) {
		return "", false, "", nil
	}
	var ge *editguard.Error
	if errors.As(err, &ge) && ge.Code != editguard.CodeIO {
		return c.words.Replace(toolset.ErrorText(ge)), true, "", nil
	}
	if err == nil && res.Merged {
		note = fmt.Sprintf("editguard: %s changed since you read it (the change is below); your edit does not touch that change, so it is made over it and both are kept. Read the file again before an edit near that change.\n%s", p, shortDiff(res.ExternalDiff))
	}
	return "", false, note, err
}

// shortDiff cuts a diff shown to the model, as the tools cut theirs.
func shortDiff(d string) string {
	if len(d) <= toolset.DiffBudget {
		return d
	}
	return d[:toolset.DiffBudget] + "\n... (the change is longer; read the file to see all of it)\n"
}

// hookSessionName names the session of an event: the client's prefix, the
// event's session_id and, for a subagent, its agent_id. A subagent's events
// carry its parent's session_id; with a session of its own, a subagent
// keeps its own reads, as Claude Code's own checks keep each agent's. A
// name longer than a session name may be ends in a hash of the whole.
func hookSessionName(prefix, id, agent string) string {
	name := prefix + "-" + sessionPart(id)
	if agent != "" {
		name += "-" + sessionPart(agent)
	}
	if len(name) > 64 {
		sum := sha256.Sum256([]byte(name))
		name = name[:51] + "-" + hex.EncodeToString(sum[:6])
	}
	return name
}

// outside reports an error about a path outside the root: not editguard's
// to guard. (Its own state directory and .git are inside, and protected.)
func outside(err error) bool { return errors.Is(err, editguard.ErrOutsideRoot) }

// hookDeny answers an event before a tool with a denial the model reads.
func hookDeny(e *env, c *hookClient, reason string) error {
	return json.NewEncoder(e.stdout).Encode(c.deny(reason))
}

// preToolContext lets Claude Code's tool run and gives the model context
// with it; no permission decision is made, so the person's own rules and
// prompts apply as without the hook.
func preToolContext(context string) any {
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":     "PreToolUse",
		"additionalContext": context,
	}}
}

// permissionDeny is the denial of Claude Code and Codex.
func permissionDeny(reason string) any {
	return map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	}}
}

// hookFailure reports the hook's own failure: before a tool it denies the
// tool (fail closed) unless open is set; otherwise it only tells the user.
func hookFailure(e *env, c *hookClient, before bool, err error, open bool) error {
	if before && !open {
		return hookDeny(e, c, "editguard could not check this change, so it was not made: "+err.Error())
	}
	fmt.Fprintf(e.stderr, "editguard hook: %v\n", err)
	return nil
}

// claudeFiles reads an event of Claude Code's Read, Write, Edit, MultiEdit
// and NotebookEdit.
func claudeFiles(ev *hookEvent) ([]hookFile, error) {
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Offset       int    `json:"offset"`
		Limit        int    `json:"limit"`
		toolEdit
		Edits []toolEdit `json:"edits"` // MultiEdit's
	}
	switch ev.Tool {
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
	default:
		return nil, nil
	}
	if err := unmarshalInput(ev.Input, &in); err != nil {
		return nil, err
	}
	p := in.FilePath
	if p == "" {
		p = in.NotebookPath
	}
	switch {
	case p == "":
		return nil, nil
	case ev.Event == "PostToolUse" && ev.Tool == "Read":
		limit := in.Limit
		if limit == 0 {
			limit = readLines
		}
		return []hookFile{{step: hookRead, path: p, offset: in.Offset, limit: limit, maxLine: readLines, shown: claudeShown(ev.Response)}}, nil
	case ev.Tool == "Read":
		return nil, nil
	case ev.Event == "PreToolUse":
		opts := editguard.GuardOptions{WholeFile: ev.Tool == "Write"}
		switch ev.Tool {
		case "Edit":
			opts.Edits = exactEdits([]toolEdit{in.toolEdit})
		case "MultiEdit":
			opts.Edits = exactEdits(in.Edits)
		}
		return []hookFile{{step: hookGuard, path: p, opts: opts}}, nil
	case ev.Event == "PostToolUse" || ev.Event == "PostToolUseFailure":
		// What a failed tool left is recorded too: nothing, if it
		// changed nothing.
		return []hookFile{{step: hookRecord, path: p}}, nil
	}
	return nil, nil
}

// toolEdit is one exact edit in Claude Code's Edit and MultiEdit input.
type toolEdit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// exactEdits returns the edits as the library states them, for Guard to
// decide whether they merge over a change made since the read.
func exactEdits(in []toolEdit) []editguard.Edit {
	var out []editguard.Edit
	for _, e := range in {
		out = append(out, editguard.Edit{OldString: e.OldString, NewString: e.NewString, ReplaceAll: e.ReplaceAll})
	}
	return out
}

// geminiFiles reads an event of Gemini CLI's read_file, write_file and
// replace. Their file_path is absolute or relative to the event's cwd.
func geminiFiles(ev *hookEvent) ([]hookFile, error) {
	var in struct {
		FilePath  string `json:"file_path"`
		StartLine int    `json:"start_line"`
		EndLine   int    `json:"end_line"`
	}
	switch ev.Tool {
	case "read_file", "write_file", "replace":
	default:
		return nil, nil
	}
	if err := unmarshalInput(ev.Input, &in); err != nil {
		return nil, err
	}
	switch {
	case in.FilePath == "":
		return nil, nil
	case ev.Event == "AfterTool" && ev.Tool == "read_file":
		var resp struct {
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal(ev.Response, &resp)
		if len(resp.Error) > 0 && string(resp.Error) != "null" {
			return nil, nil // the read failed
		}
		// Lines start_line to end_line (1-based, both included), or
		// 2,000 from start_line.
		limit := readLines
		if in.EndLine > 0 {
			limit = max(in.EndLine-max(in.StartLine, 1)+1, 1)
		}
		return []hookFile{{step: hookRead, path: in.FilePath, offset: in.StartLine, limit: limit, maxLine: readLines, shown: geminiShown(ev.Response)}}, nil
	case ev.Tool == "read_file":
		return nil, nil
	case ev.Event == "BeforeTool":
		// No Edits: Gemini CLI's hooks have no way to tell the model, as
		// the tool runs, that its edit was made over another change, so
		// a stale replace is refused, with the change.
		return []hookFile{{step: hookGuard, path: in.FilePath, opts: editguard.GuardOptions{WholeFile: ev.Tool == "write_file"}}}, nil
	case ev.Event == "AfterTool":
		return []hookFile{{step: hookRecord, path: in.FilePath}}, nil
	}
	return nil, nil
}

// codexFiles reads an event of Codex's apply_patch: the patch is the
// input's command, and the files are those it names, relative to the
// event's cwd or absolute.
func codexFiles(ev *hookEvent) ([]hookFile, error) {
	if ev.Tool != "apply_patch" {
		return nil, nil
	}
	var in struct {
		Command string `json:"command"`
	}
	if err := unmarshalInput(ev.Input, &in); err != nil {
		return nil, err
	}
	step := hookGuard
	switch ev.Event {
	case "PreToolUse":
	case "PostToolUse":
		step = hookRecord
	default:
		return nil, nil
	}
	edits := patchEdits(in.Command)
	var files []hookFile
	for _, p := range patchPaths(in.Command) {
		files = append(files, hookFile{step: step, path: p, opts: editguard.GuardOptions{Unread: true, Edits: edits[p]}})
	}
	return files, nil
}

// patchEdits returns, by path as the patch names it, the hunks of each
// file the patch updates in place as exact edits (their context and
// removed lines, and what replaces them), so that Guard may let a patch
// of a file changed since the session's read go through when they merge
// over that change, as apply_patch does. A file with a hunk that only adds
// lines or is anchored at the end of the file, or one that moves, has
// none, and a patch that does not parse gives none.
func patchEdits(text string) map[string][]editguard.Edit {
	ops, err := patch.Parse(text)
	if err != nil {
		return nil
	}
	out := map[string][]editguard.Edit{}
	for _, op := range ops {
		if op.Kind != patch.Update || op.MoveTo != "" || len(op.Hunks) == 0 {
			continue
		}
		var edits []editguard.Edit
		for _, h := range op.Hunks {
			if h.EndOfFile || h.Old() == "" {
				edits = nil
				break
			}
			edits = append(edits, editguard.Edit{OldString: h.Old(), NewString: h.New()})
		}
		if edits != nil {
			out[op.Path] = edits
		}
	}
	return out
}

// patchHeaders start the lines of the apply_patch grammar that name a file.
// Every line of a file's content or of a hunk starts with "+", "-" or " ",
// so a line that starts with one of these is a header.
var patchHeaders = []string{"*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "}

// patchPaths returns the paths a patch in Codex's apply_patch grammar
// names: each file it adds, deletes or updates, and where it moves one to.
// (internal/patch parses the grammar whole, but refuses the absolute
// paths Codex accepts; the names are all the hook needs.)
func patchPaths(patch string) []string {
	var paths []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range patchHeaders {
			if p, ok := strings.CutPrefix(line, h); ok && strings.TrimSpace(p) != "" {
				paths = append(paths, strings.TrimSpace(p))
			}
		}
	}
	return paths
}

// unmarshalInput decodes a tool_input; a missing one is empty.
func unmarshalInput(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("tool_input: %w", err)
	}
	return nil
}
