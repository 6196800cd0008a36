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
	"github.com/editguard/editguard/internal/soak"
)

// libBench measures the library's commit path against the bare durable
// replace it is built on (temp file, write, fsync, rename, directory
// fsync), interleaved call by call in one process, so that both see the
// same disk and the same load. Every call writes content the file never
// held before ("distinct contents"), so the history stores a new object
// each time. It prints, per size, the median and p99 of each cell and the
// ratio of the medians to bare. Then, where the workspace's block device
// reports its flushes (Linux sysfs), it runs each cell alone, n calls in a
// fresh workspace that is closed at the end, and prints the device
// flushes per call: a count the disk's speed does not blur, and that
// includes what a call leaves to run after its answer.
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
		l, err := openLib(ctx, parent, size)
		if err != nil {
			return err
		}
		cells := l.cells()
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
					l.close()
					return fmt.Errorf("%s, %d bytes, call %d: %w", cell.name, size, i, err)
				}
				if i > cfg.warmup {
					times[c] = append(times[c], time.Since(start))
				}
			}
		}
		if err := l.close(); err != nil {
			return err
		}
		bare := median(times[0])
		for c, cell := range cells {
			m := median(times[c])
			fmt.Fprintf(stdout, "| %s | %s | %s | %s | %.2f× |\n", sizeName(size), cell.name, ms(m), ms(percentile(times[c], 0.99)), float64(m)/float64(bare))
		}
		fmt.Fprintf(stderr, "lib: %s done\n", sizeName(size))
	}
	if _, ok := soak.DeviceFlushes("/sys", parent); !ok {
		fmt.Fprintf(stderr, "lib: the device's flushes are not readable here; no flush counts\n")
		return nil
	}
	fmt.Fprintf(stdout, "\n| size | cell | device flushes per call |\n|---|---|---|\n")
	for _, size := range cfg.sizes {
		for c := range len((&libFiles{}).cells()) {
			name, perCall, err := libFlushes(ctx, parent, size, c, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "| %s | %s | %.2f |\n", sizeName(size), name, perCall)
		}
	}
	return nil
}

// libFlushes runs cell c alone, cfg.n calls after cfg.warmup, in a fresh
// workspace, and returns the device flushes per call from the first timed
// call to the workspace's Close.
func libFlushes(ctx context.Context, parent string, size, c int, cfg *config) (string, float64, error) {
	l, err := openLib(ctx, parent, size)
	if err != nil {
		return "", 0, err
	}
	cell := l.cells()[c]
	var before int64
	for i := 1; i <= cfg.warmup+cfg.n; i++ {
		if i == cfg.warmup+1 {
			before, _ = soak.DeviceFlushes("/sys", parent)
		}
		cell.prep(i)
		if err := cell.run(i); err != nil {
			l.close()
			return "", 0, fmt.Errorf("%s, %d bytes, call %d: %w", cell.name, size, i, err)
		}
	}
	if err := l.close(); err != nil {
		return "", 0, err
	}
	after, _ := soak.DeviceFlushes("/sys", parent)
	return cell.name, float64(after-before) / float64(cfg.n), nil
}

// libFiles is a workspace with the three files the cells change, and a
// directory for the files the creating cell makes.
type libFiles struct {
	ctx  context.Context
	size int
	dir  string
	w    *editguard.Workspace
	s    *editguard.Session
	d    *os.File
	next string // the content of the call about to run
}

// libCell is one cell: prep makes call i's content, untimed (making 1 MiB
// of text costs about as much as the bare replace itself), and run makes
// the call.
type libCell struct {
	name string
	prep func(i int)
	run  func(i int) error
}

func openLib(ctx context.Context, parent string, size int) (*libFiles, error) {
	dir, err := os.MkdirTemp(parent, "lib-")
	if err != nil {
		return nil, err
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	l := &libFiles{ctx: ctx, size: size, dir: dir, w: w, s: w.NewSession("bench")}
	if l.d, err = os.Open(dir); err != nil {
		w.Close()
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(dir, "new"), 0o755); err != nil {
		l.close()
		return nil, err
	}
	base := distinctText(size, 0)
	for _, name := range []string{"bare.txt", "write.txt", "edit.txt"} {
		if _, err := l.s.Write(ctx, name, base, nil); err != nil {
			l.close()
			return nil, err
		}
	}
	return l, nil
}

func (l *libFiles) close() error {
	l.d.Close()
	return l.w.Close()
}

func (l *libFiles) cells() []libCell {
	ctx, size := l.ctx, l.size
	return []libCell{
		{"bare durable replace", func(i int) { l.next = distinctText(size, i) }, func(i int) error {
			return bareReplace(l.d, l.dir, "bare.txt", []byte(l.next))
		}},
		{"guarded write_file", func(i int) { l.next = distinctText(size, i) }, func(i int) error {
			_, err := l.s.Write(ctx, "write.txt", l.next, nil)
			return err
		}},
		// The file the last call created is removed untimed, so that the
		// disk holds one of them, not a growing heap of dirty pages that
		// the kernel writes back under the other cells.
		{"guarded write_file, new file", func(i int) {
			os.Remove(filepath.Join(l.dir, "new", fmt.Sprintf("%06d.txt", i-1)))
			l.next = distinctText(size, i)
		}, func(i int) error {
			_, err := l.s.Write(ctx, fmt.Sprintf("new/%06d.txt", i), l.next, nil)
			return err
		}},
		{"guarded edit_file", func(i int) {}, func(i int) error {
			old := fmt.Sprintf("version %08d\n", i-1)
			if i == 1 {
				old = fmt.Sprintf("version %08d\n", 0)
			}
			_, err := l.s.Edit(ctx, "edit.txt", []editguard.Edit{{OldString: old, NewString: fmt.Sprintf("version %08d\n", i)}}, nil)
			return err
		}},
	}
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
