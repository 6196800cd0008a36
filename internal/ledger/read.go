//go:build unix

package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/statedir"
)

// Reasons a VerifyError gives.
const (
	ReasonTornTail     = "torn tail"                          // the final line has no newline: an append that never completed
	ReasonMalformed    = "malformed"                          // the line is not a record
	ReasonSeq          = "seq not contiguous"                 // seq is not the previous seq + 1 (the first is 1)
	ReasonPrev         = "prev mismatch"                      // prev is not the previous record's hash
	ReasonHash         = "hash mismatch"                      // hash does not recompute from the record
	ReasonNotCanonical = "not canonical"                      // the line is not the canonical encoding of its record
	ReasonTruncated    = "records missing after the last one" // the head anchor names a record the ledger does not end with or hold
	ReasonBadHead      = "head anchor unreadable"             // the head anchor is not in its form or fails its check
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

// Scan calls fn for each record of the ledger name in dir, in order,
// stopping at the first error fn returns, which Scan then returns. It
// decodes but does not verify the chain (see Verify). A malformed line ends
// the scan with a *VerifyError. A ledger that does not exist has no records.
//
// Scan reads the file as it is when Scan begins, without blocking
// appenders: records appended meanwhile are not seen, and a final line
// without newline (an append in progress, or one a crash cut short) is
// skipped. It changes nothing.
func Scan(dir *statedir.Dir, name string, fn func(*Record) error) error {
	_, err := read(dir, name, nil, func(line []byte, n int) error {
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
	Since   time.Time // records at or after; zero: any time
	Before  uint64    // records with a lower seq; 0: any (Tail seeks to it)
	// Mentions, if set, is a string the record must hold somewhere (its
	// JSON text in the line): a prefilter for readers that select on a
	// field of the arguments, as rewind does on the session it undoes.
	Mentions string
}

// Matches reports whether r satisfies m.
func (m Match) Matches(r *Record) bool {
	return (m.Path == "" || m.Path == r.Path) &&
		(m.Session == "" || m.Session == r.Session) &&
		(m.Tool == "" || m.Tool == r.Tool) &&
		(m.Since.IsZero() || !r.Time.Before(m.Since)) &&
		(m.Before == 0 || r.Seq < m.Before)
}

// Filter is like Scan but calls fn only for the records that m matches,
// and not for an intent (Outcome "pending") that an outcome record follows:
// the outcome repeats what the intent said. An intent that no outcome
// follows is passed to fn after every other record, in order of seq.
//
// A line is decoded only if it may match: one that lacks the JSON text of
// m's path, session or tool (or of m.Mentions) is passed over unread, so
// selecting a few records of a long ledger costs a read of its bytes, not
// a decoding of every record. A malformed line is reported only where it
// is decoded.
func Filter(dir *statedir.Dir, name string, m Match, fn func(*Record) error) error {
	var open []*Record // intents without an outcome so far, in order of seq
	needles := m.needles()
	_, err := read(dir, name, nil, func(line []byte, n int) error {
		if in, ok := intentOf(line); ok {
			open = slices.DeleteFunc(open, func(p *Record) bool { return p.Seq == in })
		}
		for _, q := range needles {
			if !bytes.Contains(line, q) {
				return nil
			}
		}
		r := new(Record)
		if err := json.Unmarshal(line, r); err != nil {
			return &VerifyError{Seq: uint64(n), Line: n, Reason: ReasonMalformed, Err: err}
		}
		if !m.Matches(r) {
			return nil
		}
		if r.Outcome == OutcomePending {
			open = append(open, r)
			return nil
		}
		return fn(r)
	})
	if err != nil {
		return err
	}
	for _, r := range open {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// needles are the JSON texts a line must contain to be a record m may
// match.
func (m Match) needles() [][]byte {
	var out [][]byte
	for _, v := range []string{m.Path, m.Session, m.Tool, m.Mentions} {
		if v != "" {
			q, _ := json.Marshal(v)
			out = append(out, q)
		}
	}
	return out
}

// Verify checks the whole chain of the ledger name in dir against itself
// and its head anchor, and returns the number of records that verified.
// The error is a *VerifyError naming the first bad record: a seq that is
// not contiguous from 1, a prev that is not the previous record's hash, a
// hash that does not recompute, or a line that is malformed or not in
// canonical form. Then the anchor: ReasonTruncated if the ledger ends
// before the anchored record, is missing or empty while the anchor exists,
// or holds another record at its seq; ReasonBadHead if the anchor is
// unreadable. Last, a final line without newline is reported with Reason
// ReasonTornTail; Open repairs it.
//
// Verify only reads: it repairs nothing and creates no file, not even the
// lock file. Like Scan, it reads the ledger as it is when Verify begins: it
// waits for an append in progress to finish, so a torn tail it reports
// belongs to a writer that died, but it does not hold appenders off while
// it reads. A symlink or wrong-type entry at the ledger, anchor or lock
// name is a *statedir.UnsafeError.
func Verify(dir *statedir.Dir, name string) (n int, err error) {
	var prev string
	var h *head // the anchor, known before the first line
	var anchored head
	var anchorLine int
	torn, err := read(dir, name, &h, func(line []byte, lineNo int) error {
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
		if h != nil && r.Seq == h.seq {
			anchored, anchorLine = head{seq: r.Seq, hash: r.Hash}, lineNo
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	if h != nil {
		switch {
		case h.seq > uint64(n):
			return n, &VerifyError{Seq: uint64(n) + 1, Line: n + 1, Reason: ReasonTruncated,
				Err: fmt.Errorf("the ledger ends at record %d, its head anchor names record %d", n, h.seq)}
		case anchored.hash != h.hash:
			return n, &VerifyError{Seq: h.seq, Line: anchorLine, Reason: ReasonTruncated,
				Err: fmt.Errorf("record %d is not the one the head anchor names", h.seq)}
		}
	}
	if torn > 0 {
		return n, &VerifyError{Seq: uint64(n) + 1, Line: n + 1, Reason: ReasonTornTail,
			Err: fmt.Errorf("%d bytes without newline", torn)}
	}
	return n, nil
}

// read calls fn with each complete line of the ledger name in dir (without
// its newline) and its 1-based number, up to the size the file has when read
// takes the shared lock, and returns the length of a final line without
// newline. If hp is not nil, read sets *hp to the head anchor as it was then
// (nil if there is none) before the first call of fn. It takes
// the lock only to learn that size and the anchor, so it never sees the
// middle of an append; with no lock file no Ledger ever wrote there, and it
// reads without one rather than create it. A missing ledger reads as empty.
func read(dir *statedir.Dir, name string, hp **head, fn func(line []byte, lineNo int) error) (torn int64, err error) {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	if f != nil {
		defer f.Close()
	}
	var size int64
	err = withSharedLock(dir, name+".lock", func() error {
		if f != nil {
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			size = fi.Size()
		}
		if hp == nil {
			return nil
		}
		h, ok, err := readHead(dir, name)
		if ok {
			*hp = &h
		}
		return err
	})
	if err != nil || f == nil {
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

// withSharedLock runs fn holding a shared lock on the lock file name in
// dir, so that fn sees no append in progress. If the lock file does not
// exist, fn runs without it.
func withSharedLock(dir *statedir.Dir, name string, fn func() error) error {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fn()
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lk, err := filelock.Acquire(context.Background(), f, &filelock.Options{Shared: true})
	if err != nil {
		return err
	}
	defer lk.Unlock()
	return fn()
}
