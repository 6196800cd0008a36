package ledger

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestVerifyFrom checks verification from a mark: it reads only the
// records after it and ends with a mark of the last one; a ledger rewritten
// before the mark, chain and anchor sealed again so that a full Verify
// passes, fails at the marked record; from a seq without a hash the
// records before it are not checked, those after it are; a mark past the
// end is reported as records missing.
func TestVerifyFrom(t *testing.T) {
	const total = 1200
	lg := newTestLedger(t)
	lines := writeLedger(t, lg, total)
	n, end, err := VerifyFrom(lg.dir, testName, Mark{})
	if err != nil || n != total || end.Seq != total || end.Hash != hashOfLine(t, lines[total-1]) {
		t.Fatalf("VerifyFrom(none) = %d, %+v, %v; want every record and a mark of the last", n, end, err)
	}
	mid := Mark{Seq: 800, Hash: hashOfLine(t, lines[799])}
	n, got, err := VerifyFrom(lg.dir, testName, mid)
	if err != nil || n != total-800 || got != end {
		t.Fatalf("VerifyFrom(record 800) = %d, %+v, %v; want the %d records after it", n, got, err, total-800)
	}
	// From the end: nothing after it, the same mark back.
	if n, got, err := VerifyFrom(lg.dir, testName, end); err != nil || n != 0 || got != end {
		t.Errorf("VerifyFrom(last) = %d, %+v, %v", n, got, err)
	}

	// Record 100 changed and the chain sealed again: a full Verify passes,
	// verification from the mark taken before does not.
	recs := readAll(t, lg)
	recs[99].Path = "changed.go"
	if err := Rewrite(lg.file, recs); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(lg.dir, testName); err != nil {
		t.Fatalf("Verify() of the resealed ledger: %v; the test needs one that passes", err)
	}
	var ve *VerifyError
	if _, _, err := VerifyFrom(lg.dir, testName, mid); !errors.As(err, &ve) || ve.Seq != 800 || ve.Reason != ReasonHash {
		t.Errorf("VerifyFrom(mark) of a ledger rewritten before the mark = %v; want record 800's hash", err)
	}

	// Without a hash, the records before the seq are not checked: a line
	// broken there goes unseen, one broken after it is found.
	data, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	fresh := bytes.SplitAfter(data, []byte("\n"))
	fresh[9] = bytes.Replace(fresh[9], []byte(`"seq":10,`), []byte(`"seq":10, `), 1)
	fresh[999] = bytes.Replace(fresh[999], []byte(`"seq":1000,`), []byte(`"seq":1000, `), 1)
	if err := os.WriteFile(lg.file, bytes.Join(fresh, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := VerifyFrom(lg.dir, testName, Mark{Seq: 799}); !errors.As(err, &ve) || ve.Seq != 1000 {
		t.Errorf("VerifyFrom(seq 800 on) = %v; want record 1000, and nothing said of record 10", err)
	}
	if _, err := Verify(lg.dir, testName); !errors.As(err, &ve) || ve.Seq != 10 {
		t.Errorf("Verify() = %v; want record 10", err)
	}
	if _, _, err := VerifyFrom(lg.dir, testName, Mark{Seq: total + 5, Hash: end.Hash}); !errors.As(err, &ve) || ve.Reason != ReasonTruncated {
		t.Errorf("VerifyFrom(a mark past the end) = %v; want records missing", err)
	}
}
