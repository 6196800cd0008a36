package main

import (
	"context"
	"fmt"

	"github.com/editguard/editguard"
)

var moveCmd = &command{
	name:    "move",
	args:    "SRC DST [--overwrite] [--expect-sha256 H] [--expect-mtime-ms MS] [--expect-size N] [--require-all] [--dry-run] [--yes] [--json]",
	summary: "move or rename a file, atomically and guarded",
	help: `Move renames SRC to DST. The session must have read SRC (any part of it)
or --expect-sha256 must match it, and SRC must not have changed since
(exit 3). An existing DST is refused unless --overwrite is given, and then
the session must have read all of DST. Missing directories of DST are
created. The rename is atomic: after any crash the file is whole under
exactly one of the two names. History keeps the content under SRC's name
and what DST held (or that it did not exist), so either side can be
restored. The --expect flags apply to SRC.

Confirmation at a terminal works as for edit.`,
}

func runMove(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(moveCmd.name)
	var m mutationFlags
	m.add(fs, e)
	overwrite := fs.Bool("overwrite", false, "replace an existing DST (which the session must have read in full)")
	pos, err := parseCommand(e, moveCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(moveCmd.name, "move takes SRC and DST, got %s", arguments(len(pos)))
	}
	opts := editguard.MoveOptions{Overwrite: *overwrite, DryRun: m.dryRun}
	if opts.Precondition, err = m.precondition(moveCmd.name, false); err != nil {
		return err
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	m.askOnTerminal(e, s)
	r, err := s.Move(ctx, pos[0], pos[1], &opts)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	if r.DryRun {
		fmt.Fprintf(e.stderr, "dry run: %s would move to %s; nothing changed\n", quoteName(r.MovedFrom), quoteName(r.Path))
		return nil
	}
	_, err = fmt.Fprintf(e.stdout, "moved %s to %s (%d bytes, sha256 %s; history: %s %s, %s %s)\n",
		quoteName(r.MovedFrom), quoteName(r.Path), r.SizeBytes, r.SHA256, quoteName(r.MovedFrom), r.SourceVersion, quoteName(r.Path), r.BackupVersion)
	return err
}
