package ledger

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"
)

// indexTestRecords returns n records of sessions that each made per of
// them, in turn, as intent and outcome pairs (an outcome names its intent),
// with a session name that needs escaping in JSON, and every tenth record
// a rewind of the next session.
func indexTestRecords(n, per int) []*Record {
	recs := make([]*Record, 0, n)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		s := fmt.Sprintf("agent-%d", i/per)
		if i/per%7 == 3 {
			s = fmt.Sprintf("agent \"%d\" \\ é", i/per)
		}
		r := &Record{Seq: uint64(i + 1), Time: t0.Add(time.Duration(i) * time.Second), Session: s,
			Tool: "edit_file", Path: fmt.Sprintf("f%d.txt", i%13), Outcome: "ok"}
		if i%10 == 9 {
			// A rewind names the session it undoes in its arguments.
			r.Tool, r.Args = "rewind", []byte(fmt.Sprintf(`{"session":"agent-%d"}`, i/per+1))
		}
		if i%2 == 0 {
			r.Outcome = OutcomePending
		} else {
			r.Intent = uint64(i)
		}
		recs = append(recs, r)
	}
	return recs
}

// filterSeqs returns the seqs of the records read, and the error.
func filterSeqs(t *testing.T, lg testLedger, m Match, ix *Index) []uint64 {
	t.Helper()
	var got []uint64
	fn := func(r *Record) error {
		got = append(got, r.Seq)
		return nil
	}
	var err error
	if ix == nil {
		err = Filter(lg.dir, testName, m, fn)
	} else {
		err = FilterIndexed(lg.dir, testName, m, *ix, fn)
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkSameAsFilter checks that reads through the index at path give
// what Filter gives, for several sessions and the rewind tool.
func checkSameAsFilter(t *testing.T, lg testLedger, path string, sessions []string) {
	t.Helper()
	for _, s := range sessions {
		for _, c := range []struct {
			m  Match
			ix Index
		}{
			{Match{Session: s}, Index{Path: path, Sessions: []string{s}}},
			{Match{Mentions: s}, Index{Path: path, Sessions: []string{s}, Tools: []string{"rewind"}}},
		} {
			want := filterSeqs(t, lg, c.m, nil)
			got := filterSeqs(t, lg, c.m, &c.ix)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("FilterIndexed(%+v) = %v, want Filter's %v", c.m, got, want)
			}
		}
	}
}

func readIndexHeader(t *testing.T, path string) indexHeader {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := b[len(indexMagic):]
	le := binary.LittleEndian
	return indexHeader{end: le.Uint64(p), seq: le.Uint64(p[8:]), keys: le.Uint64(p[80:]), entries: le.Uint64(p[88:])}
}

// TestFilterIndexed checks that a read through the index gives what
// Filter gives, as the index is built, used, extended by a long tail, and
// rebuilt after the ledger is replaced or the index damaged.
func TestFilterIndexed(t *testing.T) {
	lg := newTestLedger(t)
	path := filepath.Join(t.TempDir(), "cache", "index")
	recs := indexTestRecords(6000, 50)
	if err := Rewrite(lg.file, recs[:4000]); err != nil {
		t.Fatal(err)
	}
	sessions := []string{"agent-0", "agent-3", "agent \"3\" \\ é", "agent-42", "agent-79", "agent-80", "agent-119", "nobody"}

	// A ledger under the rebuild size and no index: none is written.
	small := newTestLedger(t)
	if err := Rewrite(small.file, recs[:100]); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, small, filepath.Join(t.TempDir(), "index"), sessions)

	checkSameAsFilter(t, lg, path, sessions)
	h := readIndexHeader(t, path)
	fi, err := os.Stat(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	if h.seq != 4000 || int64(h.end) != fi.Size() {
		t.Fatalf("index covers %d bytes to seq %d, want the whole ledger (%d bytes, seq 4000)", h.end, h.seq, fi.Size())
	}
	checkSameAsFilter(t, lg, path, sessions) // through the index
	checkIndexUsed(t, lg, path)

	// A short tail is read line by line and leaves the index as it is.
	if err := Rewrite(lg.file, recs[:4100]); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, sessions)
	if got := readIndexHeader(t, path); got.seq != 4000 {
		t.Errorf("a short tail moved the index to seq %d", got.seq)
	}
	// A long one gets a new index, which keeps the old entries.
	if err := Rewrite(lg.file, recs); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, sessions)
	if got := readIndexHeader(t, path); got.seq != 6000 {
		t.Errorf("after a long tail the index covers seq %d, want 6000", got.seq)
	}
	checkSameAsFilter(t, lg, path, sessions)

	// A ledger of other records, longer than the index's end, and one
	// whose lines moved: the index does not match and is rebuilt.
	other := indexTestRecords(6000, 40)
	if err := Rewrite(lg.file, other); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, sessions)
	moved := indexTestRecords(6000, 40)
	moved[10].Path = "a much longer path than before.txt"
	if err := Rewrite(lg.file, moved); err != nil {
		t.Fatal(err)
	}
	// The chain changed from record 11 on, so the record at the end has
	// another hash; damage the index's entries instead, keeping its
	// header valid.
	checkSameAsFilter(t, lg, path, sessions)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h = readIndexHeader(t, path)
	ents := indexHeaderSize + int(h.keys)*indexKeySize
	for i := ents; i+indexEntrySize <= len(b); i += indexEntrySize {
		binary.LittleEndian.PutUint64(b[i+8:], binary.LittleEndian.Uint64(b[i+8:])+1)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, sessions)
	// A truncated index is none.
	if err := os.Truncate(path, int64(indexHeaderSize+3)); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, sessions)
	// An index that cannot be written costs nothing but speed.
	checkSameAsFilter(t, lg, filepath.Join(lg.file, "not-a-dir", "index"), sessions)
}

// checkIndexUsed damages, in a copy of the ledger, a line of another
// session so that it names agent-0 and is not JSON: Filter then fails on
// it, and a read of agent-0 through the index, which does not list it,
// does not.
func checkIndexUsed(t *testing.T, lg testLedger, path string) {
	t.Helper()
	orig, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	defer os.WriteFile(lg.file, orig, 0o600)
	b := bytes.Clone(orig)
	i := bytes.Index(b, []byte(`"session":"agent-5"`))
	end := i + bytes.IndexByte(b[i:], '\n')
	copy(b[i:], `"session":"agent-0"`)
	b[end-1] = ']'
	if err := os.WriteFile(lg.file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	fn := func(*Record) error { return nil }
	if err := Filter(lg.dir, testName, Match{Session: "agent-0"}, fn); err == nil {
		t.Fatal("Filter read the damaged line without an error")
	}
	if err := FilterIndexed(lg.dir, testName, Match{Session: "agent-0"}, Index{Path: path, Sessions: []string{"agent-0"}}, fn); err != nil {
		t.Errorf("FilterIndexed read lines the index does not list: %v", err)
	}
}

// TestFilterIndexedOpenIntents checks that an intent whose outcome is in
// the tail is passed over through the index too, and that an intent no
// outcome follows comes last, as Filter gives them.
func TestFilterIndexedOpenIntents(t *testing.T) {
	lg := newTestLedger(t)
	path := filepath.Join(t.TempDir(), "index")
	recs := indexTestRecords(4001, 4001) // one session; the last record an intent
	if err := Rewrite(lg.file, recs[:4000]); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, []string{"agent-0"})
	if err := Rewrite(lg.file, recs); err != nil {
		t.Fatal(err)
	}
	got := filterSeqs(t, lg, Match{Session: "agent-0"}, &Index{Path: path, Sessions: []string{"agent-0"}})
	if len(got) == 0 || got[len(got)-1] != 4001 {
		t.Errorf("the open intent is not last: %v", got[max(0, len(got)-3):])
	}
	checkSameAsFilter(t, lg, path, []string{"agent-0"})
}

// TestFilterIndexedOneBadEntry damages one entry of a session whose
// other entries are good: the read falls back to the whole ledger and
// passes each record once.
func TestFilterIndexedOneBadEntry(t *testing.T) {
	lg := newTestLedger(t)
	path := filepath.Join(t.TempDir(), "index")
	if err := Rewrite(lg.file, indexTestRecords(4000, 50)); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, []string{"agent-0"}) // builds the index
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := readIndexHeader(t, path)
	ents, ok := h.lookup(bytes.NewReader(b), [][16]byte{indexKey("s", "agent-0")})
	if !ok || len(ents) < 2 {
		t.Fatalf("agent-0's entries: %v, %v", ents, ok)
	}
	// The last entry of agent-0 names the line after its own.
	last := ents[len(ents)-1]
	base := indexHeaderSize + int(h.keys)*indexKeySize
	for i := base; i+indexEntrySize <= len(b); i += indexEntrySize {
		if binary.LittleEndian.Uint64(b[i:]) == last.seq && binary.LittleEndian.Uint64(b[i+8:]) == last.off {
			binary.LittleEndian.PutUint64(b[i+8:], last.off+last.n+1)
		}
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, []string{"agent-0"})
}

func TestLineKeys(t *testing.T) {
	for _, r := range []*Record{
		{Session: "a", Tool: "edit_file", Path: "x"},
		{Session: `a","tool":"b`, Tool: "t", Path: `","path":`},
		{Tool: "write_file", Path: "p"},
		{Session: "é\n\\", Tool: "x\"y", Path: "p"},
	} {
		r.Seq, r.Outcome = 1, "ok"
		line, err := seal(r)
		if err != nil {
			t.Fatal(err)
		}
		s, tool, ok := lineKeys(line[:len(line)-1])
		if !ok || s != r.Session || tool != r.Tool {
			t.Errorf("lineKeys(%s) = %q, %q, %v; want %q, %q", line, s, tool, ok, r.Session, r.Tool)
		}
	}
	// Lines not in the canonical form get the keys encoding/json reads.
	for _, c := range []struct{ line, session, tool string }{
		{`{"seq":1,"time":"2026-01-01T00:00:00Z","tool":"edit_file","session":"b","path":"p","outcome":"ok"}`, "b", "edit_file"},
		{`{"seq":1,"time":"2026-01-01T00:00:00Z","session":"a","tool":"edit_file","path":"p","session":"b"}`, "b", "edit_file"},
		{`{"session":"a","seq":1,"tool":"t","path":"p"}`, "a", "t"},
		{`{"seq":1,"time":"2026-01-01T00:00:00Z","session":"a","tool":"rewind","path":"p","args":{"session":"c","tool":"x"}}`, "a", "rewind"},
	} {
		s, tool, ok := lineKeys([]byte(c.line))
		if !ok || s != c.session || tool != c.tool {
			t.Errorf("lineKeys(%s) = %q, %q, %v; want %q, %q", c.line, s, tool, ok, c.session, c.tool)
		}
	}
}

// TestFilterIndexedOddLine checks that a line whose fields are not in
// the canonical order, which Filter still decodes and matches, keeps the
// index from being written: an index would leave that line out.
func TestFilterIndexedOddLine(t *testing.T) {
	lg := newTestLedger(t)
	path := filepath.Join(t.TempDir(), "index")
	if err := Rewrite(lg.file, indexTestRecords(4000, 50)); err != nil {
		t.Fatal(err)
	}
	// In the middle, where an index would cover it.
	b, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	mid := bytes.IndexByte(b[len(b)/2:], '\n') + len(b)/2 + 1
	odd := []byte(`{"session":"agent-0","seq":4001,"tool":"edit_file","path":"odd.txt","outcome":"ok","prev":"","hash":""}` + "\n")
	if err := os.WriteFile(lg.file, append(append(b[:mid:mid], odd...), b[mid:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	checkSameAsFilter(t, lg, path, []string{"agent-0", "agent-1"})
	if got := filterSeqs(t, lg, Match{Session: "agent-0"}, &Index{Path: path, Sessions: []string{"agent-0"}}); !slices.Contains(got, 4001) {
		t.Errorf("the odd line is not among agent-0's records: %v", got)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an index was written over a ledger with an odd line: %v", err)
	}
}
