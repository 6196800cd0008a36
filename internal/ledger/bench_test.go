package ledger

import (
	"testing"
)

// BenchmarkAppend measures durable appends (each record fsynced before
// Append returns). "serial" is the baseline: one goroutine, one fsync per
// record. The parallel cases run 8 goroutines per CPU on one Ledger, with
// one fsync per record ("single") and with group commit ("group").
func BenchmarkAppend(b *testing.B) {
	for _, bc := range []struct {
		name     string
		opts     *Options
		parallel bool
	}{
		{"serial", &Options{DisableGroupCommit: true}, false},
		{"parallel/single", &Options{DisableGroupCommit: true}, true},
		{"parallel/group", nil, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := openTest(b, newTestLedger(b), bc.opts)
			b.ReportAllocs()
			if bc.parallel {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := l.Append(testRecord(1)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			} else {
				for b.Loop() {
					if err := l.Append(testRecord(1)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkVerify measures a full chain check.
func BenchmarkVerify(b *testing.B) {
	const n = 2000
	lg := newTestLedger(b)
	l := openTest(b, lg, nil)
	for range n {
		if err := l.Append(testRecord(1)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if got, err := Verify(lg.dir, testName); err != nil || got != n {
			b.Fatalf("Verify() = %d, %v", got, err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
}
