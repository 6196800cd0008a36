package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// writeReport prints the markdown table. A ratio is server-filesystem's
// time divided by editguard's: 2.0x means editguard took half as long.
func writeReport(w io.Writer, cfg *config, disk, load string, cells []cell, results [][2][]time.Duration) error {
	fmt.Fprintf(w, "Machine: %s; %s\n", machine(cfg), load)
	fmt.Fprintf(w, "Disk: %s\n", disk)
	fmt.Fprintf(w, "server-filesystem %s; %d timed calls per server and cell after %d warm-up calls, alternating servers.\n\n",
		fsServerVersion(cfg.fsServer), cfg.n, cfg.warmup)
	fmt.Fprintln(w, "| operation | file | editguard median | server-filesystem median | ratio (median) | editguard p90 | server-filesystem p90 | ratio (p90) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for i, c := range cells {
		eg, sf := results[i][0], results[i][1]
		egMed, sfMed := percentile(eg, 0.5), percentile(sf, 0.5)
		eg90, sf90 := percentile(eg, 0.9), percentile(sf, 0.9)
		op, file := "read (read_file / read_text_file)", sizeName(c.size)
		switch c.op {
		case "edit":
			op = "edit (edit_file / edit_file)"
		case "ping":
			op, file = "ping (protocol round trip, for reference)", "-"
		}
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %.2fx | %s | %s | %.2fx |\n",
			op, file, ms(egMed), ms(sfMed), float64(sfMed)/float64(egMed),
			ms(eg90), ms(sf90), float64(sf90)/float64(eg90))
		if err != nil {
			return err
		}
	}
	return nil
}
