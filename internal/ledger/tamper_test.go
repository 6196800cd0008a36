package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"
)

// writeLedger appends n records through a Ledger and returns the file's
// lines, each with its newline.
func writeLedger(t *testing.T, lg testLedger, n int) [][]byte {
	t.Helper()
	l := openTest(t, lg, nil)
	for i := range n {
		if err := l.Append(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	return lines[:len(lines)-1] // the empty string after the last newline
}

// forge returns a correctly sealed line for a record with the given seq and
// prev, as someone who knows the format would write it.
func forge(t *testing.T, seq uint64, prev string) []byte {
	t.Helper()
	r := testRecord(99)
	r.Path = "forged.go"
	r.Seq, r.Prev = seq, prev
	line, err := seal(r)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func hashOfLine(t *testing.T, line []byte) string {
	t.Helper()
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatal(err)
	}
	return r.Hash
}

func TestVerifyDetectsTampering(t *testing.T) {
	const total = 8
	orig := newTestLedger(t)
	base := writeLedger(t, orig, total)
	anchor, err := os.ReadFile(orig.in(testName + headSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, lines [][]byte) [][]byte
		anchor bool // keep the head anchor the Ledger wrote (and the file even if empty)
		n      int  // records that verify before the bad one
		seq    uint64
		line   int
		reason string
	}{
		{
			name:   "intact",
			tamper: func(t *testing.T, lines [][]byte) [][]byte { return lines },
			n:      total,
		},
		{
			name: "edit a field",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[4] = bytes.Replace(lines[4], []byte(`"outcome":"error"`), []byte(`"outcome":"ok"`), 1)
				return lines
			},
			n: 4, seq: 5, line: 5, reason: ReasonHash,
		},
		{
			name: "edit the seq",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[4] = bytes.Replace(lines[4], []byte(`{"seq":5,`), []byte(`{"seq":50,`), 1)
				return lines
			},
			n: 4, seq: 50, line: 5, reason: ReasonSeq,
		},
		{
			name: "replace the hash",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				h := hashOfLine(t, lines[4])
				lines[4] = bytes.Replace(lines[4], []byte(h), bytes.Repeat([]byte("0"), 64), 1)
				return lines
			},
			n: 4, seq: 5, line: 5, reason: ReasonHash,
		},
		{
			name: "reformat a line",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[4] = bytes.Replace(lines[4], []byte(`"tool":`), []byte(`"tool": `), 1)
				return lines
			},
			n: 4, seq: 5, line: 5, reason: ReasonNotCanonical,
		},
		{
			name: "delete a record",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return append(lines[:4], lines[5:]...)
			},
			n: 4, seq: 6, line: 5, reason: ReasonSeq,
		},
		{
			name: "delete the first record",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return lines[1:]
			},
			n: 0, seq: 2, line: 1, reason: ReasonSeq,
		},
		{
			name: "reorder two records",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[4], lines[5] = lines[5], lines[4]
				return lines
			},
			n: 4, seq: 6, line: 5, reason: ReasonSeq,
		},
		{
			name: "insert a copied record",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return append(lines[:5], append([][]byte{lines[4]}, lines[5:]...)...)
			},
			n: 5, seq: 5, line: 6, reason: ReasonSeq,
		},
		{
			name: "insert a forged record with a valid hash",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				f := forge(t, 5, hashOfLine(t, lines[3]))
				return append(lines[:4], append([][]byte{f}, lines[4:]...)...)
			},
			// The forgery is consistent with what precedes it; the record it
			// displaces is the first that cannot be.
			n: 5, seq: 5, line: 6, reason: ReasonSeq,
		},
		{
			name: "insert a forged record and renumber the next",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				f := forge(t, 5, hashOfLine(t, lines[3]))
				lines[4] = bytes.Replace(lines[4], []byte(`{"seq":5,`), []byte(`{"seq":6,`), 1)
				return append(lines[:4], append([][]byte{f}, lines[4:]...)...)
			},
			n: 5, seq: 6, line: 6, reason: ReasonPrev,
		},
		{
			name: "replace a record with a forged one",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[4] = forge(t, 5, hashOfLine(t, lines[3]))
				return lines
			},
			n: 5, seq: 6, line: 6, reason: ReasonPrev,
		},
		{
			name: "cut the end of a middle line",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				l := lines[4]
				lines[4] = append(l[:len(l)-21:len(l)-21], '\n')
				return lines
			},
			n: 4, seq: 5, line: 5, reason: ReasonMalformed,
		},
		{
			name: "cut across two middle lines",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				// The end of record 5 (inside its hash) and the start of record
				// 6 (up to its tool field) are gone.
				cut := bytes.Index(lines[5], []byte(`"tool":`))
				joined := append(lines[4][:len(lines[4])-30:len(lines[4])-30], lines[5][cut:]...)
				return append(append(lines[:4], joined), lines[6:]...)
			},
			n: 4, seq: 5, line: 5, reason: ReasonMalformed,
		},
		{
			name: "torn tail",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				last := lines[total-1]
				lines[total-1] = last[:len(last)/2]
				return lines
			},
			n: total - 1, seq: total, line: total, reason: ReasonTornTail,
		},
		{
			name: "missing final newline",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				last := lines[total-1]
				lines[total-1] = last[:len(last)-1]
				return lines
			},
			n: total - 1, seq: total, line: total, reason: ReasonTornTail,
		},
		{
			name:   "intact with its anchor",
			tamper: func(t *testing.T, lines [][]byte) [][]byte { return lines },
			anchor: true, n: total,
		},
		{
			name: "torn tail after the anchored record",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return append(lines, forge(t, total+1, hashOfLine(t, lines[total-1]))[:40])
			},
			anchor: true, n: total, seq: total + 1, line: total + 1, reason: ReasonTornTail,
		},
		{
			name: "cut the last two records",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return lines[:total-2]
			},
			anchor: true, n: total - 2, seq: total - 1, line: total - 1, reason: ReasonTruncated,
		},
		{
			name: "tear the anchored record",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				last := lines[total-1]
				lines[total-1] = last[:len(last)/2]
				return lines
			},
			// An anchored record was acknowledged; a writer never tears it.
			anchor: true, n: total - 1, seq: total, line: total, reason: ReasonTruncated,
		},
		{
			name: "empty the ledger",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return nil
			},
			anchor: true, n: 0, seq: 1, line: 1, reason: ReasonTruncated,
		},
		{
			name: "replace the anchored record with a forged one",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				lines[total-1] = forge(t, total, hashOfLine(t, lines[total-2]))
				return lines
			},
			anchor: true, n: total, seq: total, line: total, reason: ReasonTruncated,
		},
		{
			name: "cut two records and forge one after",
			tamper: func(t *testing.T, lines [][]byte) [][]byte {
				return append(lines[:total-2], forge(t, total-1, hashOfLine(t, lines[total-3])))
			},
			anchor: true, n: total - 1, seq: total, line: total, reason: ReasonTruncated,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := newTestLedger(t)
			lines := make([][]byte, len(base))
			for i, l := range base {
				lines[i] = bytes.Clone(l)
			}
			lines = tc.tamper(t, lines)
			if err := os.WriteFile(lg.file, bytes.Join(lines, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.anchor {
				if err := os.WriteFile(lg.in(testName+headSuffix), anchor, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			n, err := Verify(lg.dir, testName)
			if tc.reason == "" {
				if err != nil || n != tc.n {
					t.Fatalf("Verify() = %d, %v; want %d, nil", n, err, tc.n)
				}
				return
			}
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify() = %d, %v; want a *VerifyError", n, err)
			}
			got := VerifyError{Seq: ve.Seq, Line: ve.Line, Reason: ve.Reason}
			want := VerifyError{Seq: tc.seq, Line: tc.line, Reason: tc.reason}
			if got != want || n != tc.n {
				t.Errorf("Verify() = %d, {Seq:%d Line:%d Reason:%q} (%v); want %d, {Seq:%d Line:%d Reason:%q}",
					n, got.Seq, got.Line, got.Reason, err, tc.n, want.Seq, want.Line, want.Reason)
			}
		})
	}
}

// TestTornTailRepairedByOpen tears the last record, as a writer killed
// before its fsync leaves it (the anchor still names the record before),
// and checks that Open saves and cuts exactly the torn bytes and the chain
// continues from the record before.
func TestTornTailRepairedByOpen(t *testing.T) {
	lg := newTestLedger(t)
	lines := writeLedger(t, lg, 5)
	keep := bytes.Join(lines[:4], nil)
	torn := lines[4][:len(lines[4])-10]
	if err := os.WriteFile(lg.file, append(append([]byte(nil), keep...), torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	h := head{seq: 4, hash: hashOfLine(t, lines[3])}
	if err := os.WriteFile(lg.in(testName+headSuffix), bytes.Repeat(h.encode(), 2), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openTest(t, lg, nil)
	checkRecovery(t, lg, l.Recovered(), int64(len(keep)), torn)
	data, _ := os.ReadFile(lg.file)
	if !bytes.Equal(data, keep) {
		t.Errorf("after repair the file has %d bytes, want the %d of the complete records", len(data), len(keep))
	}
	r := testRecord(5)
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if r.Seq != 5 || r.Prev != hashOfLine(t, lines[3]) {
		t.Errorf("Append after repair: Seq %d Prev %q; want 5 and the hash of record 4", r.Seq, r.Prev)
	}
	mustVerify(t, lg, 5)
}

// TestAppendRefusesCutLedger cuts whole records behind a Ledger's back and
// checks that neither a new nor an open Ledger appends after the cut, so
// the anchor keeps naming what was lost.
func TestAppendRefusesCutLedger(t *testing.T) {
	lg := newTestLedger(t)
	early := openTest(t, lg, nil)
	lines := writeLedger(t, lg, 5)
	if err := os.WriteFile(lg.file, bytes.Join(lines[:3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	anchor, _ := os.ReadFile(lg.in(testName + headSuffix))
	for name, l := range map[string]*Ledger{"open before": early, "open after": openTest(t, lg, nil)} {
		var ve *VerifyError
		if err := l.Append(testRecord(9)); !errors.As(err, &ve) || ve.Reason != ReasonTruncated {
			t.Errorf("%s: Append after a cut = %v, want %q", name, err, ReasonTruncated)
		}
	}
	if data, _ := os.ReadFile(lg.file); !bytes.Equal(data, bytes.Join(lines[:3], nil)) {
		t.Errorf("the cut ledger changed")
	}
	if got, _ := os.ReadFile(lg.in(testName + headSuffix)); !bytes.Equal(got, anchor) {
		t.Errorf("the anchor changed from %q to %q", anchor, got)
	}
	var ve *VerifyError
	if n, err := Verify(lg.dir, testName); !errors.As(err, &ve) || ve.Reason != ReasonTruncated || ve.Seq != 4 || n != 3 {
		t.Errorf("Verify() = %d, %v; want 3, %q at record 4", n, err, ReasonTruncated)
	}
}

// TestAnchorFollowsLedger checks that the anchor names the last record after
// every commit (with AnchorEvery < 0), and that an anchor one batch behind (a crash between the
// ledger's fsync and the anchor's write) is accepted by Verify and Append.
func TestAnchorFollowsLedger(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, &Options{AnchorEvery: -1})
	var prev []byte
	for i := range 3 {
		r := testRecord(i)
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
		h, ok, err := readHead(lg.dir, testName)
		if err != nil || !ok || h != (head{seq: r.Seq, hash: r.Hash}) {
			t.Fatalf("after record %d the anchor is %+v, %v, %v; want that record", r.Seq, h, ok, err)
		}
		if i == 1 {
			prev = head{seq: r.Seq, hash: r.Hash}.encode()
		}
	}
	if err := os.WriteFile(lg.in(testName+headSuffix), bytes.Repeat(prev, 2), 0o600); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, lg, 3)
	if err := l.Append(testRecord(3)); err != nil {
		t.Fatalf("Append with the anchor a record behind: %v", err)
	}
	mustVerify(t, lg, 4)

	// A write torn by a crash spoils one slot; the other is the anchor. Here
	// the other slot still holds record 2, as written above.
	anchor, _ := os.ReadFile(lg.in(testName + headSuffix))
	torn := bytes.Clone(anchor)
	h, slot, _ := readSlots(openHead(t, lg))
	copy(torn[slot*headLen+30:], "garbage")
	if err := os.WriteFile(lg.in(testName+headSuffix), torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readSlots(openHead(t, lg)); err != nil || h.seq != 4 || got.seq != 2 {
		t.Errorf("anchor with its newest slot (record %d) torn = %+v, %v; want the head of record 2", h.seq, got, err)
	}
	mustVerify(t, lg, 4)

	// An anchor with no valid slot is reported, and not overwritten.
	bad := bytes.Replace(anchor, []byte("0000000000000000000"), []byte("0000000000000000001"), 2)
	if err := os.WriteFile(lg.in(testName+headSuffix), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	var ve *VerifyError
	if _, err := Verify(lg.dir, testName); !errors.As(err, &ve) || ve.Reason != ReasonBadHead {
		t.Errorf("Verify() with a bad anchor = %v, want %q", err, ReasonBadHead)
	}
	if err := l.Append(testRecord(4)); !errors.As(err, &ve) || ve.Reason != ReasonBadHead {
		t.Errorf("Append() with a bad anchor = %v, want %q", err, ReasonBadHead)
	}
}

// openHead returns the anchor open, its name and size, as readSlots takes
// them.
func openHead(t *testing.T, lg testLedger) (*os.File, string, int64) {
	t.Helper()
	f, err := os.Open(lg.in(testName + headSuffix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return f, f.Name(), fi.Size()
}

// TestAnchorFollowsBurst checks that during a burst of appends the anchor
// moves far less often than once per record, is never ahead of the ledger,
// catches up once the burst is over, and is current after Close.
func TestAnchorFollowsBurst(t *testing.T) {
	lg := newTestLedger(t)
	l, err := Open(lg.dir, testName, &Options{AnchorEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var last *Record
	moves := 0
	prev := head{}
	start := time.Now()
	for i := range 40 {
		last = testRecord(i)
		if err := l.Append(last); err != nil {
			t.Fatal(err)
		}
		h, ok, err := readHead(lg.dir, testName)
		if err != nil {
			t.Fatal(err)
		}
		if ok && h.seq > last.Seq {
			t.Fatalf("after record %d the anchor names record %d", last.Seq, h.seq)
		}
		if ok && h != prev {
			moves, prev = moves+1, h
		}
	}
	// The first append anchors at once, and then one move per 200 ms.
	if max := 2 + int(time.Since(start)/(200*time.Millisecond)); moves > max {
		t.Errorf("the anchor moved %d times in a burst of 40 appends in %v, want at most %d", moves, time.Since(start), max)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h, ok, err := readHead(lg.dir, testName)
		if err != nil {
			t.Fatal(err)
		}
		if ok && h == (head{seq: last.Seq, hash: last.Hash}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the anchor names %+v 10 s after the burst, want record %d", h, last.Seq)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Close brings the anchor up to date at once.
	r := testRecord(40)
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := readHead(lg.dir, testName); err != nil || !ok || h != (head{seq: r.Seq, hash: r.Hash}) {
		t.Errorf("after Close the anchor is %+v, %v, %v; want record %d", h, ok, err, r.Seq)
	}
	mustVerify(t, lg, 41)
}

// TestAnchorFoundOnceStillChecked: during a burst the anchor lags the
// tail, and a commit that found the anchored record does not look for it
// again while the file only grows. A file whose content was replaced in
// place by another, longer ledger (same inode, more records) is still
// refused: the anchored record is not in it.
func TestAnchorFoundOnceStillChecked(t *testing.T) {
	lg := newTestLedger(t)
	l, err := Open(lg.dir, testName, &Options{AnchorEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 4 {
		// The first anchors at once; the others find the anchor behind
		// the tail.
		if err := l.Append(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	other := newTestLedger(t)
	ol, err := Open(other.dir, testName, &Options{AnchorEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := ol.Append(testRecord(100 + i)); err != nil {
			t.Fatal(err)
		}
	}
	ol.Close()
	foreign, err := os.ReadFile(other.file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lg.file, foreign, 0o600); err != nil { // in place: the inode stays
		t.Fatal(err)
	}
	var ve *VerifyError
	if err := l.Append(testRecord(4)); !errors.As(err, &ve) || ve.Reason != ReasonTruncated {
		t.Fatalf("Append() to a ledger replaced in place = %v, want a %s error", err, ReasonTruncated)
	}
}
