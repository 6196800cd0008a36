package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/replay"
)

var replayCmd = &command{
	name:    "replay",
	args:    "[--session S] [--since SEQ] [--json]",
	summary: "decide every recorded call again from the ledger and history, and compare",
	help: `Replay re-evaluates every call the ledger records, from what the ledger and
history hold rather than from the files on disk: for each write, edit,
restore, delete, move and patch it takes the observation, the precondition
and the session's baseline the record holds, makes the decision again
(STALE_FILE, NOT_READ, NO_MATCH, ... or accepted), and for an accepted
change rebuilds the content before it from history (by its recorded
SHA-256) and applies the change again. The decision and the resulting
SHA-256 must be those recorded.

It prints each divergence (the record's seq, what it records, what replay
computes), the records it cannot decide again with the reason (a person's
approval, git publish or pull, a shell command's or a hook's changes, a
content history does not hold, ...), and a summary. It exits
0 if every replayed record matched, 1 if any diverged.

--session replays only that session's records, --since SEQ only the records
from seq SEQ on. The ledger's hash chain is verified first. Replay only
reads: it opens nothing for writing, takes no lock and works on a read-only
copy of a workspace.`,
}

func runReplay(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(replayCmd.name)
	var o replay.Options
	fs.StringVar(&o.Session, "session", "", "only records of session `S`")
	fs.Uint64Var(&o.Since, "since", 0, "only records from seq `SEQ` on")
	fs.BoolVar(&e.json, "json", e.json, "print the report as JSON")
	pos, err := parseCommand(e, replayCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(replayCmd.name, "replay takes no arguments, got %q", pos)
	}
	if err := checkRoot(e.root); err != nil {
		return err
	}
	done := e.progress("replaying the ledger")
	rep, err := replayDir(e.root, o)
	done()
	if err != nil {
		return err
	}
	if e.json {
		err = e.printJSON(rep)
	} else {
		err = printReplay(e.stdout, rep)
	}
	if err == nil && rep.Diverged > 0 {
		err = exitStatus(exitError)
	}
	return err
}

// replayDir verifies the ledger of the workspace at root and replays it.
func replayDir(root string, o replay.Options) (*replay.Report, error) {
	sr, err := editguard.OpenStateReader(root)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	_, err = sr.VerifyLedger()
	var ve *editguard.LedgerVerifyError
	if errors.As(err, &ve) {
		return nil, &editguard.Error{Code: editguard.CodeIO,
			Message: fmt.Sprintf("ledger verification failed at seq %d (line %d): %s", ve.Seq, ve.Line, ve.Reason),
			Details: map[string]any{"seq": ve.Seq, "line": ve.Line, "reason": ve.Reason}, Err: err}
	}
	if err != nil {
		return nil, err
	}
	return replay.Run(sr, o)
}

// printReplay prints rep for a person: divergences, skips, the summary.
func printReplay(out io.Writer, rep *replay.Report) error {
	var w bytes.Buffer
	for _, d := range rep.Divergences {
		fmt.Fprintf(&w, "diverged: seq %d %s %s: %s recorded %s, replay computes %s\n",
			d.Seq, quoteName(d.Tool), quoteName(d.Path), escapeText(d.What), escapeText(orNone(d.Recorded)), escapeText(orNone(d.Replayed)))
	}
	for _, s := range rep.Skips {
		detail := ""
		if s.Detail != "" {
			detail = " (" + s.Detail + ")"
		}
		fmt.Fprintf(&w, "skipped: seq %d %s %s: %s%s\n", s.Seq, quoteName(s.Tool), quoteName(s.Path), escapeText(s.Reason), escapeText(detail))
	}
	fmt.Fprintf(&w, "replayed %d, matched %d, diverged %d, skipped %d\n", rep.Replayed, rep.Matched, rep.Diverged, rep.Skipped)
	if rep.DecisionOnly > 0 {
		fmt.Fprintf(&w, "  %d matched on the decision only (their result cannot be computed again: a patch's text is not recorded)\n", rep.DecisionOnly)
	}
	for _, reason := range rep.Reasons() {
		fmt.Fprintf(&w, "  skipped %d: %s\n", rep.SkippedBy[reason], reason)
	}
	_, err := out.Write(w.Bytes())
	return err
}

// orNone returns s, or "none" (a deleted file's SHA-256) if s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
