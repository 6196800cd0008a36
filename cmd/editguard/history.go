package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/editguard/editguard"
)

var historyCmd = &command{
	name:    "history",
	args:    "PATH [--json]",
	summary: "list the versions of a file that editguard displaced, newest first",
	help: `History lists every content of PATH that a write, edit or restore displaced,
newest first: its version ID (give it to restore or diff), time, SHA-256,
size and the operation that displaced it. "(did not exist)" marks the state
before the file was created; restoring it deletes the file.

With --json it prints {"status": "ok", "path": PATH, "versions": [{version,
time, sha256, size_bytes, op, ...}]}.`,
}

func runHistory(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(historyCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the versions as JSON")
	pos, err := parseCommand(e, historyCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(historyCmd.name, "history takes exactly one PATH, got %d", len(pos))
	}
	w, err := e.workspace()
	if err != nil {
		return err
	}
	vs, err := w.History(pos[0])
	if err != nil {
		return err
	}
	if e.json {
		if vs == nil {
			vs = []editguard.Version{}
		}
		return e.printJSON(map[string]any{"path": pos[0], "versions": vs})
	}
	if len(vs) == 0 {
		fmt.Fprintf(e.stderr, "%s: no history\n", quoteName(pos[0]))
		return nil
	}
	e.pageRows()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIME\tSHA256\tSIZE\tOP\tSESSION")
	for _, v := range vs {
		sum, size := v.SHA256[:min(12, len(v.SHA256))], fmt.Sprint(v.SizeBytes)
		if v.Absent {
			sum, size = "(did not exist)", "-"
		}
		when := v.Time
		if t, err := time.Parse(time.RFC3339Nano, v.Time); err == nil {
			when = cliTime(t)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", quoteName(v.ID), quoteName(when), sum, size, quoteName(v.Op), quoteName(v.Session))
	}
	return tw.Flush()
}
