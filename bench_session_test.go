//go:build unix

package editguard_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// BenchmarkPersistentSessionRead measures a Read through a persistent
// session (as the CLI and the hook server use) that already holds n
// baselines of other files: its cost should not depend on n.
func BenchmarkPersistentSessionRead(b *testing.B) {
	for _, n := range []int{10, 1000, 50000} {
		b.Run(fmt.Sprintf("baselines=%d", n), func(b *testing.B) {
			w, dir := newWorkspace(b)
			writeFile(b, dir, "a.txt", "one\ntwo\n")
			s, err := w.OpenSession("bench")
			if err != nil {
				b.Fatal(err)
			}
			sum := strings.Repeat("ab", 32)
			now := time.Now()
			bs := make(map[string]editguard.Baseline, n)
			for i := range n {
				p := fmt.Sprintf("src/pkg%03d/file%06d.go", i%500, i)
				bs[p] = editguard.Baseline{Path: p, SHA256: sum, Size: 1234, MtimeMS: now.UnixMilli(), FullRead: true, CapturedAt: now}
			}
			if err := editguard.SetSessionBaselines(s, bs); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Read(ctx, "a.txt", nil); err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuNanos()
			b.ResetTimer()
			for b.Loop() {
				// A session opened per call, as the hook server
				// opens one per event.
				s, err := w.OpenSession("bench")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Read(ctx, "a.txt", nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuNanos is the CPU time (user and system) the process has used.
func cpuNanos() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
