package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// coldPageBench measures, through editguard's MCP server alone, a cold
// read of the last page of a file of big bytes against a cold read of
// the first page of a 1 MiB file, in alternating calls (-cold-page).
//
// "Cold" means editguard has learned nothing of the file's version: each
// call of the large cell reads a copy of its own, made before the timed
// calls and left older than editguard's racy window (2 s), as a file an
// agent opens usually is; each call of the small cell reads the file
// rewritten since the last call. Both pages ask for max_chars 50,000.
// The last page starts 600 lines before the end of the file (about 50,000
// characters of the bench's lines); the model learns the line count from
// an earlier read, or a search, in another version of the file. With
// -gap, an untimed pause before every call lets what a call left to run
// (the hash of the large file) end before the next.
func coldPageBench(ctx context.Context, cfg *config, big int, stdout, stderr io.Writer) error {
	parent, cleanup, err := benchParent(cfg)
	if err != nil {
		return err
	}
	defer cleanup()
	ws := filepath.Join(parent, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return err
	}
	calls := cfg.warmup + cfg.n
	content := bigContent(big)
	lines := bytes.Count(content, []byte{'\n'})
	fmt.Fprintf(stderr, "writing %d copies of %d bytes\n", calls, big)
	for k := range calls {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("big-%d.txt", k)), content, 0o644); err != nil {
			return err
		}
	}
	small := benchContent(1 << 20)
	if err := os.WriteFile(filepath.Join(ws, "small.txt"), small, 0o644); err != nil {
		return err
	}
	time.Sleep(2100 * time.Millisecond) // past the racy window
	client := mcp.NewClient(&mcp.Implementation{Name: "editguard-bench", Version: "1.0.0"}, nil)
	client.AddRoots(&mcp.Root{URI: (&url.URL{Scheme: "file", Path: ws}).String(), Name: "bench"})
	s, err := startEditguard(ctx, client, cfg, ws, parent)
	if err != nil {
		return err
	}
	defer s.cs.Close()
	read := func(rel string, offset int) (time.Duration, error) {
		_, d, err := s.call(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": rel, "offset": offset, "max_chars": 50000}})
		return d, err
	}
	loadBefore := loadAverage()
	var first, last []time.Duration
	for k := range calls {
		// A new version of the small file: nothing kept of it.
		small[0] ^= 1
		if err := os.WriteFile(filepath.Join(ws, "small.txt"), small, 0o644); err != nil {
			return err
		}
		cells := []func() (time.Duration, error){
			func() (time.Duration, error) { return read("small.txt", 1) },
			func() (time.Duration, error) { return read(fmt.Sprintf("big-%d.txt", k), lines-600) },
		}
		for r := range cells {
			j := (k + r) % len(cells)
			time.Sleep(cfg.gap)
			d, err := cells[j]()
			if err != nil {
				return err
			}
			if k >= cfg.warmup {
				if j == 0 {
					first = append(first, d)
				} else {
					last = append(last, d)
				}
			}
		}
	}
	slices.Sort(first)
	slices.Sort(last)
	mf, ml := first[len(first)/2], last[len(last)/2]
	fmt.Fprintf(stdout, "| cell | median | max |\n|---|---|---|\n")
	fmt.Fprintf(stdout, "| first page, 1 MiB, cold | %.1f ms | %.1f ms |\n", msOf(mf), msOf(first[len(first)-1]))
	fmt.Fprintf(stdout, "| last page, %d MiB, cold | %.1f ms | %.1f ms |\n", big>>20, msOf(ml), msOf(last[len(last)-1]))
	fmt.Fprintf(stdout, "\nlast page over first page: %.2f; 1-minute load average %s before, %s after\n", float64(ml)/float64(mf), loadBefore, loadAverage())
	return nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bigContent returns size bytes of the lines benchContent writes, without
// its marker, made in one pass.
func bigContent(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 128)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%06d the quick brown fox jumps over the lazy dog; pack my box with five dozen jugs\n", i)
	}
	out := b.Bytes()[:size]
	out[size-1] = '\n'
	return out
}
