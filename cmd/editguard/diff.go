package main

import (
	"context"
	"fmt"
)

var diffCmd = &command{
	name:    "diff",
	args:    "PATH VERSION",
	summary: "show what changed between a history version and the current file",
	help: `Diff prints a unified diff from VERSION (see "editguard history PATH") to
the current content of PATH, coloured on a terminal (NO_COLOR turns colour
off). It changes nothing and records nothing.`,
}

func init() {
	diffCmd.run = runDiff
	register(diffCmd)
}

func runDiff(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(diffCmd.name)
	pos, err := parseCommand(e, diffCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef(diffCmd.name, "diff takes PATH and VERSION, got %d arguments", len(pos))
	}
	w, err := e.workspace()
	if err != nil {
		return err
	}
	d, err := w.VersionDiff(pos[0], pos[1])
	if err != nil {
		return err
	}
	if d == "" {
		fmt.Fprintf(e.stderr, "%s: identical to %s\n", pos[0], pos[1])
		return nil
	}
	writeDiff(e.stdout, d, useColor(e))
	return nil
}
