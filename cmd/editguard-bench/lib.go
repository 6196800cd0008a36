package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/editguard/editguard"
)

// libBench measures the library's commit path against the bare durable
// replace it is built on (temp file, write, fsync, rename, directory
// fsync), interleaved call by call in one process, so that both see the
// same disk and the same load. Every call writes content the file never
// held before ("distinct contents"), so the history stores a new object
// each time. It prints, per size, the median and p99 of each cell and the
// ratio of the medians to bare.
func libBench(ctx context.Context, cfg *config, stdout, stderr io.Writer) error {
	parent := cfg.dir
	if parent == "" {
		d, err := os.MkdirTemp("", "editguard-lib-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		parent = d
	}
	fmt.Fprintf(stdout, "| size | cell | median | p99 | median / bare |\n|---|---|---|---|---|\n")
	for _, size := range cfg.sizes {
		dir, err := os.MkdirTemp(parent, "lib-")
		if err != nil {
			return err
		}
		w, err := editguard.Open(dir, nil)
		if err != nil {
			return err
		}
		s := w.NewSession("bench")
		d, err := os.Open(dir)
		if err != nil {
			w.Close()
			return err
		}
		base := distinctText(size, 0)
		for _, name := range []string{"bare.txt", "write.txt", "edit.txt"} {
			if _, err := s.Write(ctx, name, base, nil); err != nil {
				return err
			}
		}
		// Each call's content is made before its clock starts: making 1 MiB
		// of text costs about as much as the bare replace itself.
		var next string
		cells := []struct {
			name string
			prep func(i int)
			run  func(i int) error
		}{
			{"bare durable replace", func(i int) { next = distinctText(size, i) }, func(i int) error {
				return bareReplace(d, dir, "bare.txt", []byte(next))
			}},
			{"guarded write_file", func(i int) { next = distinctText(size, i) }, func(i int) error {
				_, err := s.Write(ctx, "write.txt", next, nil)
				return err
			}},
			{"guarded edit_file", func(i int) {}, func(i int) error {
				old := fmt.Sprintf("version %08d\n", i-1)
				if i == 1 {
					old = fmt.Sprintf("version %08d\n", 0)
				}
				_, err := s.Edit(ctx, "edit.txt", []editguard.Edit{{OldString: old, NewString: fmt.Sprintf("version %08d\n", i)}}, nil)
				return err
			}},
		}
		times := make([][]time.Duration, len(cells))
		total := cfg.warmup + cfg.n
		for i := 1; i <= total; i++ {
			for c, cell := range cells {
				if cfg.gap > 0 {
					time.Sleep(cfg.gap)
				}
				cell.prep(i)
				start := time.Now()
				if err := cell.run(i); err != nil {
					d.Close()
					w.Close()
					return fmt.Errorf("%s, %d bytes, call %d: %w", cell.name, size, i, err)
				}
				if i > cfg.warmup {
					times[c] = append(times[c], time.Since(start))
				}
			}
		}
		d.Close()
		if err := w.Close(); err != nil {
			return err
		}
		bare := median(times[0])
		for c, cell := range cells {
			m := median(times[c])
			fmt.Fprintf(stdout, "| %s | %s | %s | %s | %.2f× |\n", sizeName(size), cell.name, ms(m), ms(percentile(times[c], 0.99)), float64(m)/float64(bare))
		}
		fmt.Fprintf(stderr, "lib: %s done\n", sizeName(size))
	}
	return nil
}

// distinctText is size bytes of text whose first line names version i.
func distinctText(size, i int) string {
	var b strings.Builder
	b.Grow(size + 64)
	fmt.Fprintf(&b, "version %08d\n", i)
	for n := 0; b.Len() < size; n++ {
		fmt.Fprintf(&b, "line %08d: the quick brown fox jumps over the lazy dog\n", n)
	}
	return b.String()[:size-1] + "\n"
}

// bareReplace is the minimal crash-safe replace: without the file fsync a
// crash after the rename can leave an empty file, without the directory
// fsync the rename itself may not survive.
func bareReplace(d *os.File, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return d.Sync()
}

func median(ds []time.Duration) time.Duration { return percentile(ds, 0.5) }
