package main

import (
	"context"

	"github.com/editguard/editguard"
)

var deleteCmd = &command{
	name:    "delete",
	args:    "PATH [--expect-sha256 H] [--expect-mtime-ms MS] [--expect-size N] [--require-all] [--dry-run] [--yes] [--json]",
	summary: "delete a file, keeping its content in history",
	help: `Delete removes PATH. It is guarded like a whole-file write: the session
must have read the whole file (or --expect-sha256 must match it), and if
the file changed since, nothing is deleted (exit 3). The content goes to
history first: "editguard restore PATH VERSION" brings it back, and needs
no read while the file does not exist.

Confirmation at a terminal works as for edit.`,
}

func runDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(deleteCmd.name)
	var m mutationFlags
	m.add(fs, e)
	pos, err := parseCommand(e, deleteCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(deleteCmd.name, "delete takes exactly one PATH, got %d", len(pos))
	}
	var opts editguard.DeleteOptions
	if opts.Precondition, err = m.precondition(deleteCmd.name, false); err != nil {
		return err
	}
	opts.DryRun = m.dryRun
	s, err := e.session()
	if err != nil {
		return err
	}
	m.askOnTerminal(e, s)
	r, err := s.Delete(ctx, pos[0], &opts)
	if err != nil {
		return err
	}
	return printResult(e, "deleted", r)
}
