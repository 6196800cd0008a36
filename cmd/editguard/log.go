package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/editguard/editguard"
)

var logCmd = &command{
	name:    "log",
	args:    "[-n N] [--since T] [--path P] [--session S] [--tool T] [--reverse] [--timing] [--json]",
	summary: "print the ledger: every change attempted, accepted or refused",
	help: `Log prints the ledger's records, newest first as git log does (oldest
first with --reverse): every write, edit and restore that was attempted
through editguard, whether it was committed or refused (and why), by which
session, with the SHA-256 before and after and the history version that
keeps what was displaced; and, as begin_turn with no path, where a session
began a turn.

--path, --session, --tool and --since select records; --since takes a
time (2026-11-26T10:00:00Z, 2026-11-26 10:00, 2026-11-26, in local time
without a zone) or an age (90m, 12h, 3d: that long ago). -n N prints only
the last N of them, read from the ledger's end, so it stays fast on a long
ledger; the ledger is read from its end page by page whatever the order,
so the newest records show at once. Times are printed as ISO 8601 with the
zone, as history prints them. --timing adds how long each change took, in
milliseconds: in all, waiting for the file's lock, checking it, waiting
for approval and making it durable (records written before editguard
timed changes show "-"). On a terminal each record is one row: less gets
LESS=FRSX (unless LESS is set), and without a pager rows are cut to the
terminal's width.

With --json it prints {"status": "ok", "records": [...]}, in the same
order, each record exactly as stored (with its hash chain fields) on a
line of its own.`,
}

// logPage is how many records log reads from the ledger at a time when it
// lists them newest first.
var logPage = 256

func runLog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(logCmd.name)
	var f editguard.LogFilter
	fs.StringVar(&f.Path, "path", "", "only records of the file `P`")
	fs.StringVar(&f.Session, "session", "", "only records of session `S`")
	fs.StringVar(&f.Tool, "tool", "", "only records of tool `T` (write_file, edit_file, restore_file)")
	fs.IntVar(&f.Last, "n", 0, "only the last `N` records (0: all)")
	since := fs.String("since", "", "only records made at or after `T`: a time or an age (12h, 3d)")
	reverse := fs.Bool("reverse", false, "oldest first")
	fs.BoolVar(&e.json, "json", e.json, "print the records as JSON")
	timing := fs.Bool("timing", false, "show how long each change took, and where the time went (ms)")
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
	if *since != "" {
		if f.Since, err = parseSince(*since, time.Now()); err != nil {
			return usagef(logCmd.name, "--since: %v", err)
		}
	}
	w, err := e.workspace()
	if err != nil {
		return err
	}
	if e.json {
		return logJSON(e, w, f, *reverse)
	}
	e.pageRows()
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	timed := ""
	if *timing {
		timed = "TOTAL_MS\tLOCK_MS\tCHECK_MS\tAPPROVAL_MS\tDURABLE_MS\t"
	}
	fmt.Fprintln(tw, "SEQ\tTIME\tSESSION\tTOOL\tPATH\tOUTCOME\tAFTER\tVERSION\t"+timed+"COMMAND")
	err = logRecords(w, f, *reverse, func(r *editguard.LedgerRecord) error {
		outcome := r.Outcome
		if r.ErrorCode != "" {
			outcome = r.ErrorCode
			if r.ErrorReason != "" {
				outcome += " (" + r.ErrorReason + ")"
			}
		}
		if editguard.WriterUnknown(r) {
			outcome += " (writer unknown)"
		}
		after := r.SHA256After[:min(12, len(r.SHA256After))]
		// Every field a record holds as text is quoted: a name, a session
		// or a command may hold anything (quote.go).
		timed := ""
		if *timing {
			timed = timingColumns(r.Timing)
		}
		_, err := fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s%s\n", r.Seq, cliTime(r.Time),
			quoteName(r.Session), quoteName(r.Tool), quoteName(r.Path), quoteName(outcome), quoteName(after),
			quoteName(r.HistoryVersion), timed, commandOf(r))
		return err
	})
	if ferr := tw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// logJSON prints the records f selects as log --json does: one object
// whose "records" list has each record, as stored, on a line of its own.
func logJSON(e *env, w *editguard.Workspace, f editguard.LogFilter, reverse bool) error {
	bw := bufio.NewWriter(e.stdout)
	bw.WriteString("{\n  \"status\": \"ok\",\n  \"records\": [")
	sep := "\n    "
	err := logRecords(w, f, reverse, func(r *editguard.LedgerRecord) error {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			return err
		}
		bw.WriteString(sep)
		_, err := bw.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
		sep = ",\n    "
		return err
	})
	if err != nil {
		// Nothing of the object reaches stdout: the error is the answer.
		return err
	}
	if sep == "\n    " {
		bw.WriteString("]\n}\n")
	} else {
		bw.WriteString("\n  ]\n}\n")
	}
	return bw.Flush()
}

// logRecords calls fn for the records f selects, newest first, or oldest
// first if reverse. Newest first, it reads them from the ledger's end a
// page at a time (each page the records before the last one listed), so
// the first come at once and the cost follows what is printed.
func logRecords(w *editguard.Workspace, f editguard.LogFilter, reverse bool, fn func(*editguard.LedgerRecord) error) error {
	if reverse {
		return w.Log(f, fn)
	}
	left := f.Last // 0: all
	for {
		page := f
		page.Last = logPage
		if left > 0 {
			page.Last = min(logPage, left)
		}
		var recs []*editguard.LedgerRecord
		if err := w.Log(page, func(r *editguard.LedgerRecord) error {
			recs = append(recs, r)
			return nil
		}); err != nil {
			return err
		}
		for i := len(recs) - 1; i >= 0; i-- {
			if err := fn(recs[i]); err != nil {
				return err
			}
		}
		if len(recs) < page.Last || recs[0].Seq <= 1 {
			return nil
		}
		if left > 0 {
			if left -= len(recs); left == 0 {
				return nil
			}
		}
		f.Before = recs[0].Seq
	}
}

// timingColumns are log --timing's columns of a record's timing, each
// ending in a tab; "-" for a record without one.
func timingColumns(t *editguard.Timing) string {
	if t == nil {
		return "-\t-\t-\t-\t-\t"
	}
	var b strings.Builder
	for _, v := range []float64{t.TotalMS, t.LockWaitMS, t.CheckMS, t.ApprovalMS, t.DurableMS} {
		b.WriteString(strconv.FormatFloat(v, 'f', 3, 64) + "\t")
	}
	return b.String()
}

// cliTime is how the command line prints a time: ISO 8601 to the second,
// in local time, with the zone.
func cliTime(t time.Time) string { return t.Local().Format(time.RFC3339) }

// parseSince reads --since: a time (RFC 3339, or a date with or without
// hours and minutes in local time) or an age before now (90m, 12h, 3d).
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a time such as 2026-11-26T10:00:00Z or 2026-11-26, or an age such as 12h or 3d, got %q", s)
}

// commandOf returns the shell command a record of a command's change names
// (see editguard exec), on one line, with what could act on a terminal
// escaped (escapeText, quote.go) and cut to 60 bytes after that, between
// two escapes, or "". It is a glimpse: log --json has the command whole.
func commandOf(r *editguard.LedgerRecord) string {
	var a struct {
		Command string `json:"command"`
	}
	if len(r.Args) == 0 || json.Unmarshal(r.Args, &a) != nil || a.Command == "" {
		return ""
	}
	return escapeTextCut(strings.Join(strings.Fields(a.Command), " "), 60)
}
