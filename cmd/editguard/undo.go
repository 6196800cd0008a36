package main

import (
	"context"
	"fmt"

	"github.com/editguard/editguard"
)

var undoCmd = &command{
	name:    "undo",
	args:    "TX [--dry-run] [--json]",
	summary: "undo a whole patch transaction, all or nothing",
	help: `Undo puts every file that the patch transaction TX changed (see
"editguard apply" or "editguard log") back as it was, all or nothing. Each
file must still be exactly what the patch left; if any changed since,
nothing is undone (exit 3). No read is needed. The undo is a transaction
of its own and can itself be undone.`,
}

func runUndo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(undoCmd.name)
	dry := fs.Bool("dry-run", false, "check and show the diffs, write nothing")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, undoCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(undoCmd.name, "undo takes exactly one TX, got %d", len(pos))
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	r, err := s.UndoPatch(ctx, pos[0], &editguard.UndoOptions{DryRun: *dry})
	if err != nil {
		return err
	}
	return printPatch(e, r, func(f editguard.PatchFile) string {
		return fmt.Sprintf("put back %s (history %s)", quoteName(f.Path), f.BackupVersion)
	}, "undone as transaction "+r.TxID)
}
