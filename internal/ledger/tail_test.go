//go:build unix

package ledger

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestTailMatchesFilter writes a ledger of plain records, intents with and
// without outcomes, records whose arguments mimic an intent or an outcome,
// and lines longer than Tail's chunk, then checks that Tail lists exactly
// the last n records Filter lists (in order of seq), for several matches
// and n, and that a torn final line is skipped.
func TestTailMatchesFilter(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, &Options{DisableGroupCommit: true})
	rng := rand.New(rand.NewPCG(1, 2))
	add := func(r *Record) uint64 {
		t.Helper()
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		return r.Seq
	}
	var open []uint64
	for i := range 1500 {
		path := fmt.Sprintf("f%d.txt", rng.IntN(7))
		session := fmt.Sprintf("s%d", rng.IntN(3))
		tool := []string{"write_file", "edit_file", "pull"}[rng.IntN(3)]
		switch k := rng.IntN(10); {
		case k < 3:
			open = append(open, add(&Record{Session: session, Tool: tool, Path: path, Outcome: OutcomePending, SHA256After: "aa"}))
		case k < 6 && len(open) > 0:
			j := rng.IntN(len(open))
			in := open[j]
			open = slices.Delete(open, j, j+1)
			add(&Record{Session: session, Tool: tool, Path: path, Outcome: "ok", Intent: in})
		case k == 6:
			// Mimics an intent and an outcome inside its arguments.
			add(&Record{Session: session, Tool: tool, Path: path, Outcome: "error",
				Args: json.RawMessage(fmt.Sprintf(`{"outcome":"pending","x":{"intent":%d}}`, i))})
		case k == 7:
			// Longer than a chunk.
			big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", tailChunk+rng.IntN(tailChunk))})
			add(&Record{Session: session, Tool: tool, Path: path, Outcome: "ok", Result: big})
		default:
			add(&Record{Session: session, Tool: tool, Path: path, Outcome: "ok"})
		}
	}
	l.Close()
	// A torn final line, as a writer killed mid-append leaves.
	f, err := os.OpenFile(lg.file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99999,"time":"`)
	f.Close()

	for _, m := range []Match{{}, {Path: "f3.txt"}, {Session: "s1", Tool: "pull"}, {Path: "none.txt"}} {
		var all []*Record
		if err := Filter(lg.dir, testName, m, func(r *Record) error { all = append(all, r); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(all, func(a, b *Record) int { return int(a.Seq) - int(b.Seq) })
		for _, n := range []int{1, 5, 50, 400, 100000} {
			var got []uint64
			if err := Tail(lg.dir, testName, m, n, func(r *Record) error { got = append(got, r.Seq); return nil }); err != nil {
				t.Fatalf("Tail(%+v, %d) = %v", m, n, err)
			}
			var want []uint64
			for _, r := range all[max(0, len(all)-n):] {
				want = append(want, r.Seq)
			}
			if !slices.Equal(got, want) {
				t.Errorf("Tail(%+v, %d) = %d records %v..., want %d %v...", m, n, len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
			}
		}
	}
}

// BenchmarkTail lists the last 20 records of ledgers of growing length:
// the cost must not grow with the ledger.
func BenchmarkTail(b *testing.B) {
	for _, size := range []int{1000, 100000} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			lg := newTestLedger(b)
			l := openTest(b, lg, nil)
			for i := range size {
				if _, err := l.Write(&Record{Session: "s", Tool: "edit_file", Path: fmt.Sprintf("f%d.txt", i%100), Outcome: "ok"}); err != nil {
					b.Fatal(err)
				}
			}
			l.Close()
			for b.Loop() {
				n := 0
				if err := Tail(lg.dir, testName, Match{}, 20, func(*Record) error { n++; return nil }); err != nil || n != 20 {
					b.Fatalf("Tail = %d records, %v", n, err)
				}
			}
		})
	}
}
