package main

import (
	"context"
	"fmt"
)

var diffCmd = &command{
	name:    "diff",
	args:    "PATH VERSION | PATH --against FILE [--json]",
	summary: "show what changed between a history version and the current file",
	help: `Diff prints a unified diff from VERSION (see "editguard history PATH"),
or from the file given with --against, to the current content of PATH,
coloured on a terminal (--color, NO_COLOR) and through a pager there. It
changes nothing and records nothing. With --json it prints {path, from,
identical, diff}.`,
}

func runDiff(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(diffCmd.name)
	against := fs.String("against", "", "compare with `FILE` instead of a history version")
	fs.BoolVar(&e.json, "json", e.json, "print the diff in a JSON object")
	pos, err := parseCommand(e, diffCmd, fs, args)
	if err != nil {
		return err
	}
	switch {
	case *against != "" && len(pos) != 1:
		return usagef(diffCmd.name, "diff --against takes one PATH, got %s", arguments(len(pos)))
	case *against == "" && len(pos) != 2:
		return usagef(diffCmd.name, "diff takes PATH and VERSION, got %s", arguments(len(pos)))
	}
	w, err := e.workspace()
	if err != nil {
		return err
	}
	var d, from string
	if *against != "" {
		d, err = w.PathDiff(pos[0], *against)
		from = *against
	} else {
		d, err = w.VersionDiff(pos[0], pos[1])
		from = pos[1]
	}
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]any{"path": pos[0], "from": from, "identical": d == "", "diff": d})
	}
	if d == "" {
		fmt.Fprintf(e.stderr, "%s: identical to %s\n", quoteName(pos[0]), quoteName(from))
		return nil
	}
	color := useColor(e)
	e.page()
	writeDiff(e.stdout, d, color)
	return nil
}
