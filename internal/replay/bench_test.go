//go:build unix

package replay_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/replay"
)

// ledgerOf makes a workspace whose ledger records n calls: edits of n/20
// files, twenty each, one round in five refused (NO_MATCH), and returns
// its root.
func ledgerOf(b *testing.B, n int) string {
	b.Helper()
	w, dir := open(b, nil)
	s, c := w.NewSession("agent"), checker{b}
	files := max(1, n/20)
	for f := range files {
		c.ok(s.Write(ctx, fmt.Sprintf("f%04d.txt", f), "head\nn=0\ntail\n", nil))
	}
	for i := files; i < n; i++ {
		p := fmt.Sprintf("f%04d.txt", i%files)
		if (i/files)%5 == 2 {
			_, err := s.Edit(ctx, p, []editguard.Edit{{OldString: "absent", NewString: "x"}}, nil)
			refuse(b, err, editguard.CodeNoMatch)
			continue
		}
		c.ok(s.Edit(ctx, p, []editguard.Edit{{OldString: "tail", NewString: fmt.Sprintf("tail\n%d", i)}}, nil))
	}
	w.Close()
	return dir
}

func BenchmarkReplay(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			dir := ledgerOf(b, n)
			var spent, cpu time.Duration
			for b.Loop() {
				start, cpu0 := time.Now(), cpuTime(b)
				rep := run(b, dir, replay.Options{})
				spent += time.Since(start)
				cpu += cpuTime(b) - cpu0
				if rep.Diverged != 0 || rep.Replayed != n || rep.Skipped != 0 {
					b.Fatalf("%d replayed, %d skipped, %d diverged; want %d records replayed, none diverged: %+v", rep.Replayed, rep.Skipped, rep.Diverged, n, rep.Skips[:min(3, len(rep.Skips))])
				}
			}
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "replay-ns/op")
			b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N)/float64(n), "ns/record")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(n), "cpu-ns/record")
		})
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
