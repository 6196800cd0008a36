package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/editguard/editguard"
)

var logCmd = &command{
	name:    "log",
	args:    "[-n N] [--path P] [--session S] [--tool T] [--json]",
	summary: "print the ledger: every change attempted, accepted or refused",
	help: `Log prints the ledger's records, oldest first: every write, edit and restore
that was attempted through editguard, whether it was committed or refused
(and why), by which session, with the SHA-256 before and after and the
history version that keeps what was displaced.

--path, --session and --tool select records; -n N prints only the last N of
them, read from the ledger's end, so it stays fast on a long ledger. With
--json it prints one JSON record per line, exactly as stored (with its hash
chain fields).`,
}

func runLog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(logCmd.name)
	var f editguard.LogFilter
	fs.StringVar(&f.Path, "path", "", "only records of the file `P`")
	fs.StringVar(&f.Session, "session", "", "only records of session `S`")
	fs.StringVar(&f.Tool, "tool", "", "only records of tool `T` (write_file, edit_file, restore_file)")
	fs.IntVar(&f.Last, "n", 0, "only the last `N` records (0: all)")
	fs.BoolVar(&e.json, "json", false, "print records as JSON lines")
	pos, err := parseCommand(e, logCmd, fs, args)
	if err != nil {
		return err
	}
	if f.Last < 0 {
		return usagef(logCmd.name, "-n must be a number of records, 0 or more, got %d", f.Last)
	}
	if len(pos) != 0 {
		return usagef(logCmd.name, "log takes no arguments, got %q", pos)
	}
	w, err := e.workspace()
	if err != nil {
		return err
	}
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		return w.Log(f, func(r *editguard.LedgerRecord) error { return enc.Encode(r) })
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tSESSION\tTOOL\tPATH\tOUTCOME\tAFTER\tVERSION\tCOMMAND")
	err = w.Log(f, func(r *editguard.LedgerRecord) error {
		outcome := r.Outcome
		if r.ErrorCode != "" {
			outcome = r.ErrorCode
			if r.ErrorReason != "" {
				outcome += " (" + r.ErrorReason + ")"
			}
		}
		after := r.SHA256After[:min(12, len(r.SHA256After))]
		_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Seq, r.Time.Format("2006-01-02 15:04:05"),
			r.Session, r.Tool, r.Path, outcome, after, r.HistoryVersion, commandOf(r))
		return err
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// commandOf returns the shell command a record of a command's change names
// (see editguard exec), on one line and cut to 60 characters, or "".
func commandOf(r *editguard.LedgerRecord) string {
	var a struct {
		Command string `json:"command"`
	}
	if len(r.Args) == 0 || json.Unmarshal(r.Args, &a) != nil || a.Command == "" {
		return ""
	}
	c := strings.Join(strings.Fields(a.Command), " ")
	if len(c) > 60 {
		c = strings.ToValidUTF8(c[:57], "") + "..."
	}
	return c
}
