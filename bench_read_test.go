//go:build unix

package editguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// readPagesSizes are the file sizes paged reads are measured at: the cost
// of reading a file whole in pages should grow with its size, not with its
// square.
var readPagesSizes = []struct {
	name string
	size int
}{
	{"1MiB", 1 << 20},
	{"4MiB", 4 << 20},
	{"16MiB", 16 << 20},
	{"64MiB", 64 << 20},
}

// pageCaps are the caps read_file passes without a limit (toolset's
// ReadBudget less its overhead, MaxLineBytes, the line-number width).
var pageCaps = editguard.ReadOptions{MaxBytes: 25000 - 1000, MaxLineBytes: 2000, LineCost: 7}

// BenchmarkReadPages measures reading a file from its first line to its
// last through Session.Read, one page after the other, as an agent pages
// through a file: "default" follows NextOffset with read_file's caps and
// no limit; "lines2000" asks for 2,000 lines at a time (with read_file's
// 256 KiB cap for a read with a limit). "whole" is one read of the whole
// file. Every iteration opens the workspace afresh, so that what a
// workspace learned of the file in an earlier iteration does not count;
// x-whole is the op's time over one whole read's (the fastest of three);
// cpu-ns/op the CPU time the process spent reading. The file is older than
// the racy window of the read cache before the clock starts.
func BenchmarkReadPages(b *testing.B) {
	for _, bs := range readPagesSizes {
		dir := b.TempDir()
		data := textOfSize(bs.size, "a")
		if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
		ready := time.Now().Add(2100 * time.Millisecond)
		for _, mode := range []string{"whole", "default", "lines2000"} {
			b.Run(mode+"/"+bs.name, func(b *testing.B) {
				time.Sleep(time.Until(ready))
				whole := readPagesOnce(b, dir, "whole", bs.size)
				for range 2 {
					whole = min(whole, readPagesOnce(b, dir, "whole", bs.size))
				}
				var total time.Duration
				var cpu int64
				pages := 0
				for b.Loop() {
					b.StopTimer()
					w, err := editguard.Open(dir, nil)
					if err != nil {
						b.Fatal(err)
					}
					s := w.NewSession("bench")
					b.StartTimer()
					t0, cpu0 := time.Now(), processCPU()
					pages = readPages(b, s, mode, bs.size)
					total += time.Since(t0)
					cpu += processCPU() - cpu0
					b.StopTimer()
					w.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(pages), "pages")
				b.ReportMetric(float64(total)/float64(b.N)/float64(whole), "x-whole")
				b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used, in
// ns: less disturbed than the time elapsed by what else the machine runs.
func processCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// readPagesOnce times one readPages on a workspace opened for it.
func readPagesOnce(b *testing.B, dir, mode string, size int) time.Duration {
	w, err := editguard.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("bench")
	t0 := time.Now()
	readPages(b, s, mode, size)
	return time.Since(t0)
}

// readPages reads f.txt from its first line to its last in mode and
// returns the number of reads it took; the text returned must add up to
// size bytes.
func readPages(b *testing.B, s *editguard.Session, mode string, size int) int {
	o := pageCaps
	switch mode {
	case "whole":
		o = editguard.ReadOptions{}
	case "lines2000":
		o.Limit, o.MaxBytes = 2000, 256<<10
	}
	n, got := 0, 0
	for offset := 1; ; n++ {
		o.Offset = offset
		if mode == "whole" {
			o.Offset = 0
		}
		res, err := s.Read(ctx, "f.txt", &o)
		if err != nil {
			b.Fatal(err)
		}
		got += len(res.Content)
		switch {
		case res.NextOffset > 0:
			offset = res.NextOffset
		case mode == "lines2000" && offset+o.Limit <= res.TotalLines:
			offset += o.Limit
		default:
			if got != size {
				b.Fatal(fmt.Sprintf("read %d bytes of %d in %d pages", got, size, n+1))
			}
			return n + 1
		}
	}
}
