package editguard

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/history"
)

// BenchmarkEditWithHistory measures the latency of a guarded 4 KiB edit in
// a fresh workspace and in one where many other files have history, the
// two edited in turn so that a machine whose speed drifts slows both
// alike. Retention looks only at the file it saves, so the p99 must not
// grow with the number of files that have history. Reported: p50 and p99 of
// each workspace, in milliseconds, and p99-ratio (many / fresh).
//
// The files' history is made through the history store directly (one
// version each), which takes about 3 ms per file on a disk like this one:
//
//	EDITGUARD_HISTORY_FILES=15000 go test -run '^$' -bench BenchmarkEditWithHistory -benchtime 2000x -timeout 30m .
//
// Without the variable it uses 1,000 files.
func BenchmarkEditWithHistory(b *testing.B) {
	files := 1000
	if n, err := strconv.Atoi(os.Getenv("EDITGUARD_HISTORY_FILES")); err == nil && n > 0 {
		files = n
	}
	ctx := context.Background()
	type ws struct {
		s    *Session
		old  string
		took []time.Duration
	}
	open := func(others int) *ws {
		dir := b.TempDir()
		w, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		content := []byte(strings.Repeat("x", 1024))
		for i := range others {
			if _, err := w.hist.Save(fmt.Sprintf("pkg%03d/f%05d.go", i%100, i), content, false, "", history.Meta{Op: "edit_file", Session: "seed"}); err != nil {
				b.Fatal(err)
			}
		}
		s := w.NewSession("bench")
		text := strings.Repeat("// a line of source text, about sixty characters long.....\n", 69) + "version 00000000\n"
		if _, err := s.Write(ctx, "edit.go", text, nil); err != nil {
			b.Fatal(err)
		}
		return &ws{s: s, old: "version 00000000\n"}
	}
	fresh, many := open(0), open(files)
	i := 0
	edit := func(w *ws) {
		i++
		nw := fmt.Sprintf("version %08d\n", i)
		t0 := time.Now()
		if _, err := w.s.Edit(ctx, "edit.go", []Edit{{OldString: w.old, NewString: nw}}, nil); err != nil {
			b.Fatal(err)
		}
		w.took = append(w.took, time.Since(t0))
		w.old = nw
	}
	for b.Loop() {
		edit(fresh)
		edit(many)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	p := func(w *ws, q float64) time.Duration {
		slices.Sort(w.took)
		return w.took[int(float64(len(w.took)-1)*q)]
	}
	b.ReportMetric(ms(p(fresh, 0.5)), "fresh-p50-ms")
	b.ReportMetric(ms(p(fresh, 0.99)), "fresh-p99-ms")
	b.ReportMetric(ms(p(many, 0.5)), "many-p50-ms")
	b.ReportMetric(ms(p(many, 0.99)), "many-p99-ms")
	b.ReportMetric(float64(p(many, 0.99))/float64(p(fresh, 0.99)), "p99-ratio")
}
