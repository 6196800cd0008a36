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

// TestTailBefore holds Tail with Match.Before to Filter over the records
// before that seq, on a ledger with intents, lines longer than a chunk and
// a torn tail, for cuts all along it. Filter knows the outcome of every
// intent; Tail only those in the chunk after the cut, so an intent whose
// outcome lies further on may come as pending: such records are compared
// apart.
func TestTailBefore(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, &Options{DisableGroupCommit: true})
	rng := rand.New(rand.NewPCG(3, 4))
	var open []uint64
	for i := range 3000 {
		r := &Record{Session: fmt.Sprintf("s%d", rng.IntN(3)), Tool: "edit_file", Path: fmt.Sprintf("f%d.txt", rng.IntN(5)), Outcome: "ok"}
		switch k := rng.IntN(10); {
		case k < 2:
			r.Outcome = OutcomePending
		case k < 4 && len(open) > 0:
			r.Intent, open = open[0], open[1:]
		case k == 4:
			big, _ := json.Marshal(map[string]string{"text": strings.Repeat("y", tailChunk+rng.IntN(2*tailChunk))})
			r.Result = big
		case k == 5:
			r.Args = json.RawMessage(fmt.Sprintf(`{"outcome":"pending","n":%d}`, i))
		}
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		if r.Outcome == OutcomePending {
			open = append(open, r.Seq)
		}
	}
	l.Close()
	f, err := os.OpenFile(lg.file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":99999,"time":"`)
	f.Close()

	var all []*Record
	if err := Filter(lg.dir, testName, Match{}, func(r *Record) error { all = append(all, r); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b *Record) int { return int(a.Seq) - int(b.Seq) })
	for _, before := range []uint64{1, 2, 3, 50, 777, 1500, 2999, 3000, 3001, 5000} {
		for _, m := range []Match{{Before: before}, {Before: before, Path: "f2.txt"}} {
			var want []uint64
			for _, r := range all {
				if r.Seq < before && (m.Path == "" || r.Path == m.Path) {
					want = append(want, r.Seq)
				}
			}
			want = want[max(0, len(want)-40):]
			var got, pending []uint64
			err := Tail(lg.dir, testName, m, 40, func(r *Record) error {
				if r.Seq >= before {
					t.Errorf("Tail(Before %d) listed seq %d", before, r.Seq)
				}
				if r.Outcome == OutcomePending && !slices.Contains(want, r.Seq) {
					pending = append(pending, r.Seq)
					return nil
				}
				got = append(got, r.Seq)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// The pending ones took places the list of Filter gives to
			// older records: compare the newest of Filter's.
			if want = want[min(len(pending), len(want)):]; !slices.Equal(got, want) {
				t.Errorf("Tail(%+v, 40) = %v, want %v (and %d pending)", m, got, want, len(pending))
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
