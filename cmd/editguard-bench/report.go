package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 1) of ds by the
// nearest-rank method; the median of an even count is the mean of the two
// middle values.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if p == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	rank := int(float64(len(s))*p+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// fsServerVersion reads the version from the package.json next to
// server-filesystem's dist directory.
func fsServerVersion(entry string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(entry), "..", "package.json"))
	if err != nil {
		return "?"
	}
	var pkg struct{ Version string }
	if json.Unmarshal(b, &pkg) != nil || pkg.Version == "" {
		return "?"
	}
	return pkg.Version
}

// writeReport prints the header lines and the markdown table.
func writeReport(w io.Writer, cfg *config, disk, load string, servers []*server, cells []cell, results [][][]time.Duration) error {
	fmt.Fprintf(w, "Machine: %s; %s\n", machine(cfg), load)
	fmt.Fprintf(w, "Disk: %s\n", disk)
	var peers []string
	for _, s := range servers[1:] {
		p := s.name + " " + s.version
		if s.name == "mcp-filesystem-server" {
			p += " (modify_file writes in place, without fsync)"
		}
		peers = append(peers, p)
	}
	order := "alternating servers"
	if len(servers) > 2 {
		order = "rotating the servers' order"
	}
	fmt.Fprintf(w, "%s; %d timed calls per server and cell after %d warm-up calls, %s.\n\n",
		strings.Join(peers, ", "), cfg.n, cfg.warmup, order)
	return writeTable(w, cfg, servers, cells, results)
}

// writeTable prints one row per cell: the median of each server, the
// ratio of each peer's median to editguard's (servers[0]), then the same
// for the 90th percentile. A ratio is the peer's time divided by
// editguard's: 2.0x means editguard took half as long. results[i][j] are
// the times of servers[j] in cells[i].
func writeTable(w io.Writer, cfg *config, servers []*server, cells []cell, results [][][]time.Duration) error {
	peers := servers[1:]
	ratioName := func(s *server, stat string) string {
		if len(peers) == 1 {
			return "ratio (" + stat + ")"
		}
		return "ratio " + s.name + " (" + stat + ")"
	}
	var head []string
	for _, stat := range []string{"median", "p90"} {
		for _, s := range servers {
			head = append(head, s.name+" "+stat)
		}
		for _, s := range peers {
			head = append(head, ratioName(s, stat))
		}
	}
	fmt.Fprintf(w, "| operation | file | %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---:|", len(head)))
	var reads, edits []string
	for _, s := range servers {
		reads = append(reads, s.readTool)
		edits = append(edits, s.editTool)
	}
	for i, c := range cells {
		op, file := "read ("+strings.Join(reads, " / ")+")", sizeName(c.size)
		switch c.op {
		case "edit":
			op = "edit (" + strings.Join(edits, " / ") + ")"
		case "create":
			op = "create (write_file of a new file)"
		case "ping":
			op, file = "ping (protocol round trip, for reference)", "-"
		case "list":
			op, file = "list_directory, every page", fmt.Sprintf("%d entries", c.size)
		case "list1":
			op, file = "list_directory, first page", fmt.Sprintf("%d entries", c.size)
		}
		if (c.op == "list" || c.op == "list1") && cfg.sfsSizes {
			op += " (server-filesystem: list_directory_with_sizes)"
		}
		row := []string{op, file}
		for _, p := range []float64{0.5, 0.9} {
			var ts []time.Duration
			for j := range servers {
				ts = append(ts, percentile(results[i][j], p))
				row = append(row, ms(ts[j]))
			}
			for j := 1; j < len(servers); j++ {
				row = append(row, fmt.Sprintf("%.2fx", float64(ts[j])/float64(ts[0])))
			}
		}
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | ")); err != nil {
			return err
		}
	}
	return nil
}
