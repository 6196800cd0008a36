package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

var hookCmd = &command{
	name:    "hook",
	args:    "[--fail-open] < EVENT",
	summary: "guard an agent's own file tools from its PreToolUse/PostToolUse hooks",
	help: `Hook reads one Claude Code hook event (JSON) on standard input and
answers in Claude Code's hook protocol, so that the agent's built-in Read,
Write, Edit, MultiEdit and NotebookEdit get editguard's guarantees:

  after a Read        the file's SHA-256 is recorded as the session's read
                      (a Read with offset or limit, or of a file longer than
                      2,000 lines, is a partial read);
  before a change     the file must have been read (NOT_READ) and be
                      unchanged since (STALE_FILE, with what changed when it
                      is small), else the tool is denied with the reason;
                      what the file holds is saved to history first;
  after a change      the ledger records it, and the read moves on.

The hook's session is the event's session_id. Configure it in
.claude/settings.json for PreToolUse and PostToolUse with the matcher
"Read|Write|Edit|MultiEdit|NotebookEdit" and the command
  editguard --root "$CLAUDE_PROJECT_DIR" hook

The tool's own write is not under editguard's lock: a program that writes
the file between the check and the tool's write is not seen by the check.
If the hook itself fails, the tool is denied unless --fail-open is given.
Files outside the root are not editguard's to guard and are let through.`,
}

func init() {
	hookCmd.run = runHook
	register(hookCmd)
}

// hookEvent is the part of a Claude Code hook event editguard uses.
type hookEvent struct {
	SessionID string `json:"session_id"`
	Event     string `json:"hook_event_name"`
	Tool      string `json:"tool_name"`
	Input     struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Offset       int    `json:"offset"`
		Limit        int    `json:"limit"`
	} `json:"tool_input"`
}

// claudeReadLimit is how many lines Claude Code's Read returns by default.
const claudeReadLimit = 2000

var sessionChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func runHook(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(hookCmd.name)
	failOpen := fs.Bool("fail-open", false, "let the tool run when the hook itself fails (default: deny it)")
	if _, err := parseCommand(e, hookCmd, fs, args); err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(e.stdin, 16<<20))
	var ev hookEvent
	if err == nil {
		err = json.Unmarshal(data, &ev)
	}
	if err == nil && ev.SessionID == "" {
		err = errors.New("the event has no session_id")
	}
	if err != nil {
		return hookFailure(e, ev.Event, fmt.Errorf("reading the hook event: %w", err), *failOpen)
	}
	p := ev.Input.FilePath
	if p == "" {
		p = ev.Input.NotebookPath
	}
	if p == "" || !guardedTool(ev.Tool) {
		return nil // not a file tool: nothing to say
	}
	w, err := e.workspace()
	if err != nil {
		return hookFailure(e, ev.Event, err, *failOpen)
	}
	name := "claude-" + sessionChars.ReplaceAllString(ev.SessionID, "-")
	if len(name) > 64 {
		name = name[:64]
	}
	s, err := w.OpenSession(name)
	if err != nil {
		return hookFailure(e, ev.Event, err, *failOpen)
	}
	switch {
	case ev.Event == "PostToolUse" && ev.Tool == "Read":
		limit := ev.Input.Limit
		if limit == 0 {
			limit = claudeReadLimit
		}
		_, err = s.Read(ctx, p, &editguard.ReadOptions{Offset: ev.Input.Offset, Limit: limit})
		if err != nil && !outside(err) {
			return hookFailure(e, ev.Event, err, true) // the Read happened; nothing to deny
		}
	case ev.Event == "PreToolUse" && ev.Tool != "Read":
		_, err = s.Guard(ctx, p, ev.Tool, &editguard.GuardOptions{WholeFile: ev.Tool == "Write"})
		if outside(err) {
			return nil
		}
		var ge *editguard.Error
		if errors.As(err, &ge) && ge.Code != editguard.CodeIO {
			return hookDeny(e, inToolWords(toolset.ErrorText(ge)))
		}
		if err != nil {
			return hookFailure(e, ev.Event, err, *failOpen)
		}
	case ev.Event == "PostToolUse":
		if _, err = s.Record(ctx, p, ev.Tool); err != nil && !outside(err) {
			return hookFailure(e, ev.Event, err, true)
		}
	}
	return nil
}

// outside reports an error about a path outside the root: not editguard's
// to guard. (Its own state directory and .git are inside, and protected.)
func outside(err error) bool { return errors.Is(err, editguard.ErrOutsideRoot) }

func guardedTool(t string) bool {
	switch t {
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		return true
	}
	return false
}

// hookDeny answers a PreToolUse event with a denial the model reads.
func hookDeny(e *env, reason string) error {
	out := map[string]any{"hookSpecificOutput": map[string]any{
		"hookEventName":            "PreToolUse",
		"permissionDecision":       "deny",
		"permissionDecisionReason": reason,
	}}
	return json.NewEncoder(e.stdout).Encode(out)
}

// hookFailure reports the hook's own failure: before a tool it denies the
// tool (fail closed) unless open is set; otherwise it only tells the user.
func hookFailure(e *env, event string, err error, open bool) error {
	if (event == "PreToolUse" || event == "") && !open { // an event that did not parse may be one
		return hookDeny(e, "editguard could not check this change, so it was not made: "+err.Error())
	}
	fmt.Fprintf(e.stderr, "editguard hook: %v\n", err)
	return nil
}

// inToolWords turns editguard's hints into the words of Claude Code's tools.
var claudeToolWords = strings.NewReplacer("call read_file on", "Read", "read_file", "Read", "edit_file", "Edit", "write_file", "Write",
	"no need to call Read again", "no new Read is needed")

func inToolWords(s string) string { return claudeToolWords.Replace(s) }
