//go:build unix

package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestUnresolvedAndFilter writes intents with and without outcomes, among
// records whose arguments and results mimic both an intent's outcome field
// and an outcome's reference, and checks that Unresolved finds exactly the
// intents without an outcome, within its window, and that Filter shows an
// intent only while no outcome follows it.
func TestUnresolvedAndFilter(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	defer l.Close()
	add := func(r *Record) uint64 {
		t.Helper()
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		return r.Seq
	}
	intent := func(path string) uint64 {
		return add(&Record{Tool: "write_file", Path: path, Outcome: OutcomePending, SHA256After: "aa"})
	}
	outcome := func(path string, of uint64) uint64 {
		return add(&Record{Tool: "write_file", Path: path, Outcome: "ok", SHA256After: "aa", Intent: of,
			Result: json.RawMessage(`{"path":"` + path + `"}`)})
	}
	done := intent("done.txt")
	open1 := intent("open1.txt")
	outcome("done.txt", done)
	// Records that mimic the fields Unresolved reads without decoding.
	mimic := add(&Record{Tool: "edit_file", Path: "m.txt", Outcome: "error",
		Args:   json.RawMessage(fmt.Sprintf(`{"outcome":"pending","x":{"intent":%d}}`, open1)),
		Result: json.RawMessage(fmt.Sprintf(`{"a":1,"intent":%d}`, open1))})
	open2 := intent("open2.txt")

	got, err := l.Unresolved(0)
	if err != nil {
		t.Fatal(err)
	}
	seqs := func(rs []*Record) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.Seq)
		}
		return out
	}
	if want := []uint64{open1, open2}; !slices.Equal(seqs(got), want) {
		t.Errorf("Unresolved() = %v, want %v", seqs(got), want)
	}

	var shown []uint64
	if err := Filter(lg.dir, testName, Match{}, func(r *Record) error {
		shown = append(shown, r.Seq)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// done's intent is hidden behind its outcome; the open ones come last.
	if want := []uint64{done + 2, mimic, open1, open2}; !slices.Equal(shown, want) {
		t.Errorf("Filter() shows %v, want %v", shown, want)
	}

	// An outcome for open1 resolves it.
	outcome("open1.txt", open1)
	if got, _ := l.Unresolved(0); !slices.Equal(seqs(got), []uint64{open2}) {
		t.Errorf("Unresolved() after open1's outcome = %v, want [%d]", seqs(got), open2)
	}

	// The window: an intent before it is not looked at.
	for i := 0; i < 50; i++ {
		add(&Record{Tool: "read", Path: strings.Repeat("p", 100), Outcome: "ok"})
	}
	if got, _ := l.Unresolved(2048); len(got) != 0 {
		t.Errorf("Unresolved(2048 bytes) = %v, want none: open2 is further back", seqs(got))
	}
	if got, _ := l.Unresolved(0); !slices.Equal(seqs(got), []uint64{open2}) {
		t.Errorf("Unresolved(default window) = %v, want [%d]", seqs(got), open2)
	}
	mustVerify(t, lg, int(open2)+1+50)
}

// BenchmarkUnresolved is what Open pays to look for intents without an
// outcome, on a ledger longer than the window, all of whose intents have
// one.
func BenchmarkUnresolved(b *testing.B) {
	lg := newTestLedger(b)
	l := openTest(b, lg, nil)
	defer l.Close()
	for i := 0; i < 1000; i++ {
		r := testRecord(i)
		r.Outcome, r.Result = OutcomePending, nil
		if err := l.Append(r); err != nil {
			b.Fatal(err)
		}
		o := testRecord(i)
		o.Outcome, o.Intent = "ok", r.Seq
		if err := l.Append(o); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := l.Unresolved(0)
		if err != nil || len(got) != 0 {
			b.Fatalf("Unresolved() = %d, %v", len(got), err)
		}
	}
}

// TestSince checks that Since returns the intents and outcomes after a
// record, reading back past its first window when the ledger is long, and
// all of them when the record named is not in the ledger.
func TestSince(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	defer l.Close()
	var all []*Record
	big := json.RawMessage(`"` + strings.Repeat("x", 4000) + `"`)
	for i := range 200 { // 200 records of 4 KB: three windows' worth
		r := &Record{Tool: "write_file", Path: fmt.Sprintf("f%d", i), Outcome: "ok", Args: big}
		switch i % 3 {
		case 0:
			r.Outcome, r.Displaced = OutcomePending, []byte("old bytes")
		case 1:
			r.Intent = all[len(all)-1].Seq
		}
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	changes := func(after uint64) []uint64 {
		var out []uint64
		for _, r := range all {
			if r.Seq > after && (r.Outcome == OutcomePending || r.Intent != 0) {
				out = append(out, r.Seq)
			}
		}
		return out
	}
	seqs := func(rs []*Record) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.Seq)
		}
		return out
	}
	tail := Position{Seq: all[199].Seq, Hash: all[199].Hash}
	for _, c := range []struct {
		name     string
		from     Position
		anchored bool
		after    uint64
	}{
		{"from the start", Position{}, false, 0},
		{"from a record in the last window", Position{Seq: all[190].Seq, Hash: all[190].Hash}, true, all[190].Seq},
		{"from a record windows back", Position{Seq: all[3].Seq, Hash: all[3].Hash}, true, all[3].Seq},
		{"from the tail", tail, true, tail.Seq},
		{"from a record with another hash", Position{Seq: all[150].Seq, Hash: all[149].Hash}, false, 0},
		{"from past the end", Position{Seq: 500, Hash: all[0].Hash}, false, 0},
	} {
		recs, last, anchored, err := l.Since(c.from)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if last != tail || anchored != c.anchored || !slices.Equal(seqs(recs), changes(c.after)) {
			t.Errorf("%s: Since = %v, %v, anchored %v; want %v, %v, %v", c.name, seqs(recs), last, anchored, changes(c.after), tail, c.anchored)
		}
	}
	recs, _, _, _ := l.Since(Position{Seq: all[196].Seq, Hash: all[196].Hash})
	if len(recs) != 2 || string(recs[0].Displaced) != "old bytes" || recs[1].Intent != recs[0].Seq {
		t.Errorf("Since after 196 = %+v; want the intent with its bytes, then its outcome", recs)
	}
}
