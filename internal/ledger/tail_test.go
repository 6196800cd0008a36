//go:build unix

package ledger

import (
	"bytes"
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

// TestFilterPrefilter holds Filter, which decodes only the lines that
// hold its match's JSON text, to Scan and Matches on every record, with
// names JSON escapes (<, &, quotes, non-ASCII) and a Mentions in the
// arguments.
func TestFilterPrefilter(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, &Options{DisableGroupCommit: true})
	names := []string{"a&b.txt", "<x>.go", `q"uote.md`, "é.txt", "s1", "s10"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 600 {
		r := &Record{Session: names[rng.IntN(len(names))], Tool: "edit_file", Path: names[rng.IntN(len(names))], Outcome: "ok"}
		if rng.IntN(4) == 0 {
			r.Tool = "rewind"
			r.Args = json.RawMessage(fmt.Sprintf(`{"session":%q}`, names[rng.IntN(len(names))]))
		}
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	var all []*Record
	if err := Scan(lg.dir, testName, func(r *Record) error { all = append(all, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		for _, m := range []Match{{Path: n}, {Session: n}, {Session: n, Tool: "rewind"}, {Mentions: n}} {
			var want, got []uint64
			for _, r := range all {
				line, _ := json.Marshal(r)
				q, _ := json.Marshal(n)
				if m.Matches(r) && (m.Mentions == "" || bytes.Contains(line, q)) {
					want = append(want, r.Seq)
				}
			}
			if err := Filter(lg.dir, testName, m, func(r *Record) error { got = append(got, r.Seq); return nil }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("Filter(%+v) = %d records, want %d (and some)", m, len(got), len(want))
			}
		}
	}
}

// BenchmarkFilterSession selects one session's records (a tenth) of a
// ledger of 100,000: Filter, which decodes only lines that name the
// session, against decoding every record (Scan) and matching after, as
// Filter did before.
func BenchmarkFilterSession(b *testing.B) {
	lg := newTestLedger(b)
	l := openTest(b, lg, nil)
	for i := range 100000 {
		if _, err := l.Write(&Record{Session: fmt.Sprintf("s-%d", i%10), Tool: "edit_file", Path: fmt.Sprintf("f%d.txt", i%100), Outcome: "ok",
			Args: json.RawMessage(`{"path":"x","old_string":"a","new_string":"b"}`)}); err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	m := Match{Session: "s-3"}
	for _, c := range []struct {
		name string
		run  func() int
	}{
		{"decode-all", func() int {
			n := 0
			Scan(lg.dir, testName, func(r *Record) error {
				if m.Matches(r) {
					n++
				}
				return nil
			})
			return n
		}},
		{"filter", func() int {
			n := 0
			Filter(lg.dir, testName, m, func(*Record) error { n++; return nil })
			return n
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if n := c.run(); n != 10000 {
					b.Fatalf("%d records, want 10000", n)
				}
			}
		})
	}
}
