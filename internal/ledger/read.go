package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reasons a VerifyError gives.
const (
	ReasonTornTail     = "torn tail"          // the final line has no newline: an append that never completed
	ReasonMalformed    = "malformed"          // the line is not a record
	ReasonSeq          = "seq not contiguous" // seq is not the previous seq + 1 (the first is 1)
	ReasonPrev         = "prev mismatch"      // prev is not the previous record's hash
	ReasonHash         = "hash mismatch"      // hash does not recompute from the record
	ReasonNotCanonical = "not canonical"      // the line is not the canonical encoding of its record
)

// A VerifyError names the first record of a ledger that fails verification.
type VerifyError struct {
	// Seq is the sequence number the bad record carries, or, when the line
	// cannot be decoded, the one expected at its position.
	Seq uint64
	// Line is the 1-based line number in the file, or 0 when unknown.
	Line   int
	Reason string // one of the Reason constants
	Err    error  // the underlying cause or detail, if any
}

func (e *VerifyError) Error() string {
	s := fmt.Sprintf("ledger: record %d", e.Seq)
	if e.Line > 0 {
		s += fmt.Sprintf(" (line %d)", e.Line)
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *VerifyError) Unwrap() error { return e.Err }

// Scan calls fn for each record of the ledger at path, in order, stopping
// at the first error fn returns, which Scan then returns. It decodes but
// does not verify the chain (see Verify). A malformed line ends the scan
// with a *VerifyError.
//
// Scan reads the file as it is when Scan begins, without blocking
// appenders: records appended meanwhile are not seen, and a final line
// without newline (an append in progress, or one a crash cut short) is
// skipped.
func Scan(path string, fn func(*Record) error) error {
	_, err := read(path, func(line []byte, n int) error {
		r := new(Record)
		if err := json.Unmarshal(line, r); err != nil {
			return &VerifyError{Seq: uint64(n), Line: n, Reason: ReasonMalformed, Err: err}
		}
		return fn(r)
	})
	return err
}

// Match selects records by exact field values; an empty field matches
// every record.
type Match struct {
	Path    string
	Session string
	Tool    string
}

// Matches reports whether r satisfies m.
func (m Match) Matches(r *Record) bool {
	return (m.Path == "" || m.Path == r.Path) &&
		(m.Session == "" || m.Session == r.Session) &&
		(m.Tool == "" || m.Tool == r.Tool)
}

// Filter is like Scan but calls fn only for the records that m matches.
func Filter(path string, m Match, fn func(*Record) error) error {
	return Scan(path, func(r *Record) error {
		if !m.Matches(r) {
			return nil
		}
		return fn(r)
	})
}

// Verify checks the whole chain of the ledger at path and returns the
// number of records that verified. The error is a *VerifyError naming the
// first bad record: a seq that is not contiguous from 1, a prev that is not
// the previous record's hash, a hash that does not recompute, or a line
// that is malformed or not in canonical form. A final line without newline
// is reported with Reason ReasonTornTail after every complete record has
// verified; Open repairs it.
//
// Like Scan, Verify reads the file as it is when Verify begins: it waits
// for an append in progress to finish, so a torn tail it reports belongs to
// a writer that died, but it does not hold appenders off while it reads.
func Verify(path string) (n int, err error) {
	var prev string
	torn, err := read(path, func(line []byte, lineNo int) error {
		want := uint64(n) + 1
		r, reason, err := decodeLine(line)
		switch {
		case r == nil:
			return &VerifyError{Seq: want, Line: lineNo, Reason: reason, Err: err}
		case r.Seq != want:
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: ReasonSeq,
				Err: fmt.Errorf("seq %d, want %d", r.Seq, want)}
		case r.Prev != prev:
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: ReasonPrev}
		case reason != "":
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: reason, Err: err}
		}
		prev = r.Hash
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	if torn > 0 {
		return n, &VerifyError{Seq: uint64(n) + 1, Line: n + 1, Reason: ReasonTornTail,
			Err: fmt.Errorf("%d bytes without newline", torn)}
	}
	return n, nil
}

// read calls fn with each complete line of the file at path (without its
// newline) and its 1-based number, up to the size the file has when read
// takes the shared lock, and returns the length of a final line without
// newline. It takes the lock only to learn that size, so it never sees the
// middle of an append.
func read(path string, fn func(line []byte, lineNo int) error) (torn int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var size int64
	err = withSharedLock(path+".lock", func() error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		size = fi.Size()
		return nil
	})
	if err != nil {
		return 0, err
	}
	br := bufio.NewReaderSize(io.LimitReader(f, size), 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: collect the rest of it.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err == io.EOF {
			return int64(len(line)), nil
		}
		if err != nil {
			return 0, err
		}
		if err := fn(line[:len(line)-1], lineNo); err != nil {
			return 0, err
		}
	}
}
