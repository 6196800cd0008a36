package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable prints the report as a table of figures, then the latency of
// each kind of call, then the violations, if any.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, value any, note string) {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", name, value, note)
	}
	files := "files"
	if r.Own {
		files = "files, each writer its own"
	}
	row("mode", r.Mode, fmt.Sprintf("%d CLI workers, %d MCP sessions, %d %s", r.CLIWorkers, r.MCPSessions, r.Files, files))
	row("elapsed", r.Elapsed.Round(time.Millisecond), "")
	row("edit attempts", r.Attempts, "")
	row("commits acknowledged", r.CommittedTotal(), formatCounts(r.Committed))
	row("refusals", sum(r.Refused), formatCounts(r.Refused))
	if r.Mode == ModeSoak {
		row("  caught at exchange", r.CaughtAtExchange, "STALE_FILE found by verifying the displaced file after the exchange")
	}
	if r.FlushesKnown {
		per := "no commits"
		if n := r.CommittedTotal(); n > 0 {
			per = fmt.Sprintf("%.2f per commit", float64(r.DeviceFlushes)/float64(n))
		}
		row("device flushes", r.DeviceFlushes, per+"; the whole machine's, from the writers' start to the server's exit")
	}
	row("failed calls", r.Failed, "transport or process failures; must be 0")
	if r.Mode == ModeSoak {
		row("unguarded writes", r.UnguardedWrites, "os.ReadFile + os.WriteFile, no lock")
		row("torn reads", r.TornReads, "guarded reads of an in-place os.WriteFile in progress")
		row("lost to unguarded writer", r.LostToUnguarded, "guarded markers overwritten by a read-modify-write begun before their commit")
		row("phantoms", r.Phantoms, "refused markers copied by an unguarded read during the exchange-and-back")
		row("unguarded lost", r.UnguardedLost, "unguarded markers written into a file editguard was exchanging")
	}
	row("lost updates", r.LostUpdates, "acknowledged guarded markers missing with no unguarded writer to blame; must be 0")
	row("ledger records", r.LedgerRecords, "hash chain verified")
	row("merged commits", r.Merged, "edits applied over another session's change since their read")
	row("history versions", r.HistoryVersions, fmt.Sprintf("loaded and hashed; %d removed by retention", r.HistoryPruned))
	row("torn files", r.TornFiles, "partial content editguard cannot explain; must be 0")
	row("leaked temps", r.LeakedTemps, "")
	row("escapes", r.Escapes, "")
	row("violations", len(r.Violations), "")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "call\tn\tp50\tp99\tmax\t\n")
	for _, l := range r.Latency {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t\n", l.Op, l.N, ms(l.P50), ms(l.P99), ms(l.Max))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	const maxShown = 50
	for i, v := range r.Violations {
		if i == maxShown {
			fmt.Fprintf(w, "... and %d more violations\n", len(r.Violations)-maxShown)
			break
		}
		fmt.Fprintf(w, "VIOLATION: %s\n", v)
	}
	if log := strings.TrimSpace(r.ServerLog); log != "" {
		fmt.Fprintf(w, "\nserver log:\n%s\n", log)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
