package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/editguard/editguard"
)

var rewindCmd = &command{
	name:    "rewind",
	args:    "--session ID [--to SEQ|TIME] [--force] [--dry-run] [--yes] [--json]",
	summary: "undo a session's changes, keeping what others changed since",
	help: `Rewind undoes the changes of session ID (as "editguard log" names it:
cli-uid..., claude-..., mcp-...): every file it changed goes back to
what it held before the session's first change to it, or, with --to,
before ledger record SEQ, or before TIME (RFC 3339, e.g.
2025-01-31T14:05:00Z). No read is needed: the ledger says what the
session left.

Each file is its own guarded change. A file that someone else (another
session, a person, a formatter) changed after the session's last change to
it, or between two of its changes, is refused and left as it is; the
others are still rewound. So is a file a shell command changed while
editguard could not tell who wrote it (the command or someone else, such
as a person saving in an editor: "editguard log" shows these as "ok
(writer unknown)"), unless --force. A file the session created is deleted; a move is
rewound as its two names. What a rewind replaces goes to history, so
"editguard restore" (or a rewind of the rewinding session) undoes it.
Files already back as they were are listed as unchanged.

The changes are recorded under the session given before the command
(editguard --session NAME rewind --session ID). At a terminal, without
--yes or --dry-run, rewind shows every diff and asks once.

Exit codes: 0 every file rewound (or already back), 3 some file refused
because it changed (the others are rewound), 1 some file failed otherwise;
--dry-run exits as the rewind would. --json prints
{"session", "rewound": [{path, to_sha256, version, backup_version, ...}],
"unchanged": [...], "refused": [{path, error: {code, message, ...}}]}.`,
}

func runRewind(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(rewindCmd.name)
	session := fs.String("session", "", "rewind the changes of session `ID` (required; the session making the rewind is the one given before the command)")
	to := fs.String("to", "", "rewind only the changes from ledger record `SEQ` on, or from TIME (RFC 3339) on")
	dry := fs.Bool("dry-run", false, "check every file and show the diffs, write nothing")
	force := fs.Bool("force", false, "also rewind changes made while a command ran by a writer editguard could not tell (the command or someone else)")
	yes := fs.Bool("yes", false, "do not ask for confirmation at a terminal")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, rewindCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(rewindCmd.name, "rewind takes no arguments, got %q", pos)
	}
	if *session == "" {
		return usagef(rewindCmd.name, "rewind needs --session ID, the session whose changes to undo")
	}
	opts := &editguard.RewindOptions{DryRun: *dry, Force: *force}
	if *to != "" {
		if opts.ToSeq, opts.ToTime, err = parseTo(*to); err != nil {
			return err
		}
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	if in, ok := e.stdin.(*os.File); ok && !*yes && !*dry && isTerminal(in) {
		s.SetApprover(newPrompter(e, in))
	}
	r, err := s.Rewind(ctx, *session, opts)
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(r); err != nil {
			return err
		}
	} else {
		printRewind(e, r)
	}
	switch {
	case len(r.Refused) == 0:
		return nil
	case allConflicts(r):
		return exitStatus(exitConflict)
	}
	return exitStatus(exitError)
}

// parseTo reads --to: a ledger sequence number or an RFC 3339 time.
func parseTo(s string) (uint64, time.Time, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n == 0 {
			return 0, time.Time{}, usagef(rewindCmd.name, "--to SEQ counts from 1")
		}
		return n, time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, time.Time{}, usagef(rewindCmd.name, "--to needs a ledger record number or an RFC 3339 time (2025-01-31T14:05:00Z), got %q", s)
	}
	return 0, t, nil
}

// allConflicts reports whether every refusal is a conflict.
func allConflicts(r *editguard.RewindResult) bool {
	for _, f := range r.Refused {
		if !editguard.IsConflict(f.Error) {
			return false
		}
	}
	return true
}

func printRewind(e *env, r *editguard.RewindResult) {
	for _, f := range r.Rewound {
		switch {
		case r.DryRun:
			writeDiff(e.stdout, f.Diff, false)
		case f.Deleted:
			fmt.Fprintf(e.stdout, "deleted %s, which the session created (history %s keeps it)\n", quoteName(f.Path), f.BackupVersion)
		default:
			fmt.Fprintf(e.stdout, "rewound %s to %s (sha256 %s; history %s keeps what it held)\n", quoteName(f.Path), f.Version, f.ToSHA256, f.BackupVersion)
		}
		for _, w := range f.Warnings {
			fmt.Fprintf(e.stderr, "warning: %s: %s\n", quoteName(f.Path), escapeText(w))
		}
	}
	for _, f := range r.Unchanged {
		fmt.Fprintf(e.stderr, "unchanged %s: already as before the session's changes\n", quoteName(f.Path))
	}
	for _, f := range r.Refused {
		fmt.Fprintf(e.stderr, "refused %s: %s: %s\n", quoteName(f.Path), f.Error.Code, escapeText(f.Error.Message))
	}
	verb := "rewound"
	if r.DryRun {
		verb = "dry run: would rewind"
	}
	fmt.Fprintf(e.stderr, "%s %d files of session %s; %d unchanged, %d refused\n", verb, len(r.Rewound), quoteName(r.Session), len(r.Unchanged), len(r.Refused))
}
