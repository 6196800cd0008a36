package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// writeLedger appends n records through a Ledger and returns the file's
// lines, each with its newline.
func writeLedger(t *testing.T, path string, n int) [][]byte {
	t.Helper()
	l := openTest(t, path, nil)
	for i := range n {
		if err := l.Append(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(path)
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
	base := writeLedger(t, filepath.Join(t.TempDir(), "ledger.jsonl"), total)
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, lines [][]byte) [][]byte
		n      int // records that verify before the bad one
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.jsonl")
			lines := make([][]byte, len(base))
			for i, l := range base {
				lines[i] = bytes.Clone(l)
			}
			lines = tc.tamper(t, lines)
			if err := os.WriteFile(path, bytes.Join(lines, nil), 0o600); err != nil {
				t.Fatal(err)
			}
			n, err := Verify(path)
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

// TestTornTailRepairedByOpen tears the last record and checks that Open
// cuts exactly the torn bytes and the chain continues from the record
// before.
func TestTornTailRepairedByOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	lines := writeLedger(t, path, 5)
	keep := bytes.Join(lines[:4], nil)
	torn := lines[4][:len(lines[4])-10]
	if err := os.WriteFile(path, append(append([]byte(nil), keep...), torn...), 0o600); err != nil {
		t.Fatal(err)
	}
	l := openTest(t, path, nil)
	want := &Recovery{Offset: int64(len(keep)), Bytes: int64(len(torn))}
	if got := l.Recovered(); !reflect.DeepEqual(got, want) {
		t.Errorf("Recovered() = %+v, want %+v", got, want)
	}
	data, _ := os.ReadFile(path)
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
	mustVerify(t, path, 5)
}
