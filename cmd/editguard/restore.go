package main

import (
	"context"

	"github.com/editguard/editguard"
)

var restoreCmd = &command{
	name:    "restore",
	args:    "PATH VERSION [--expect-sha256 H] [--expect-mtime-ms MS] [--expect-size N] [--require-all] [--dry-run] [--yes] [--json]",
	summary: "put a displaced version back, without destroying later work",
	help: `Restore writes VERSION (from "editguard history PATH") back to PATH. It is
a guarded write like any other: the session must have read the file (or
--expect-sha256 must match it), and if the file changed since, nothing is
written (exit 3). What it replaces goes to history first, so a restore can
itself be undone. Restoring a "did not exist" version deletes the file.

Confirmation at a terminal works as for edit.`,
}

func runRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(restoreCmd.name)
	var m mutationFlags
	m.add(fs, e)
	pos, err := parseCommand(e, restoreCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(restoreCmd.name, "restore takes PATH and VERSION, got %s", arguments(len(pos)))
	}
	var opts editguard.RestoreOptions
	if opts.Precondition, err = m.precondition(restoreCmd.name, false); err != nil {
		return err
	}
	opts.DryRun = m.dryRun
	s, err := e.session()
	if err != nil {
		return err
	}
	m.askOnTerminal(e, s)
	r, err := s.Restore(ctx, pos[0], pos[1], &opts)
	if err != nil {
		return err
	}
	verb := "restored"
	if r.Deleted && !r.DryRun {
		verb = "deleted"
	}
	return printResult(e, verb, r)
}
