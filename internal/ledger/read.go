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
	"github.com/editguard/editguard/internal/rawpath"
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
	return ScanFrom(dir, name, 0, fn)
}

// ScanFrom is Scan from the record with seq from on (from 0 or 1: every
// record), found by bisection; a malformed line's Seq then counts lines
// from there.
func ScanFrom(dir *statedir.Dir, name string, from uint64, fn func(*Record) error) error {
	var start func(f *os.File, size int64) (int64, error)
	if from > 1 {
		start = func(f *os.File, size int64) (int64, error) { return seekSeq(f, size, from) }
	}
	_, err := read(dir, name, nil, start, func(line []byte, n int) error {
		r := new(Record)
		if err := unmarshalRecord(line, r); err != nil {
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
	fs := newFilterState(m, fn)
	if _, err := read(dir, name, nil, nil, fs.line); err != nil {
		return err
	}
	return fs.finish()
}

// filterState is a Filter in progress: it is given the ledger's lines in
// order (line), then passes on the intents no outcome followed (finish).
type filterState struct {
	m       Match
	needles [][]byte
	open    []*Record // intents without an outcome so far, in order of seq
	fn      func(*Record) error
	err     error // fn's, when a caller other than read passed the lines
}

func newFilterState(m Match, fn func(*Record) error) *filterState {
	return &filterState{m: m, needles: m.needles(), fn: fn}
}

// line takes the ledger's line number n (0: unknown, for a line read
// through the session index or after its end).
func (s *filterState) line(line []byte, n int) error {
	if in, ok := intentOf(line); ok {
		s.open = slices.DeleteFunc(s.open, func(p *Record) bool { return p.Seq == in })
	}
	for _, q := range s.needles {
		if !bytes.Contains(line, q) {
			return nil
		}
	}
	r := new(Record)
	if err := unmarshalRecord(line, r); err != nil {
		seq := uint64(n)
		if n == 0 {
			seq, _ = seqOf(line)
		}
		return &VerifyError{Seq: seq, Line: n, Reason: ReasonMalformed, Err: err}
	}
	if !s.m.Matches(r) {
		return nil
	}
	if r.Outcome == OutcomePending {
		s.open = append(s.open, r)
		return nil
	}
	return s.fn(r)
}

// finish passes on the intents that no outcome followed.
func (s *filterState) finish() error {
	if s.err != nil {
		return s.err
	}
	for _, r := range s.open {
		if err := s.fn(r); err != nil {
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
			// A record stores each string's readable form (for a path
			// that is not UTF-8, beside its hex; Matches compares the
			// exact bytes).
			q, _ := json.Marshal(rawpath.Display(v))
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
	n, _, err = VerifyFrom(dir, name, Mark{})
	return n, err
}

// A Mark names a record by its seq and hash: where a verification ended,
// from which a later one may start.
type Mark struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// VerifyFrom is Verify for the records after from: each must chain from
// the one before, and the anchor and the tail are checked as Verify
// checks them. With from.Hash set, record from.Seq must be there, verify
// on its own and have that hash: since every record's hash covers the one
// before it, that proves every record up to it unchanged since from was
// taken, at the cost of reading none of them. With from.Hash empty and
// from.Seq above 0, the records up to from.Seq are not checked at all:
// record from.Seq+1's prev is taken as given. It returns the number of
// records it verified and a mark of the last one (from, if none follows).
// A *VerifyError's Line counts lines from the first record read.
func VerifyFrom(dir *statedir.Dir, name string, from Mark) (n int, last Mark, err error) {
	last = from
	prev := from.Hash
	want := from.Seq + 1 // the seq of the next line
	if from.Hash != "" {
		want = from.Seq // the marked record is read again
	}
	var h *head // the anchor, known before the first line
	var anchored head
	var anchorLine, lines int
	start := func(f *os.File, size int64) (int64, error) {
		if want <= 1 {
			return 0, nil
		}
		return seekSeq(f, size, want)
	}
	torn, err := read(dir, name, &h, start, func(line []byte, lineNo int) error {
		lines = lineNo
		r, reason, err := decodeLine(line)
		switch {
		case r == nil:
			return &VerifyError{Seq: want, Line: lineNo, Reason: reason, Err: err}
		case r.Seq != want:
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: ReasonSeq,
				Err: fmt.Errorf("seq %d, want %d", r.Seq, want)}
		case from.Hash != "" && r.Seq == from.Seq:
			if r.Hash != from.Hash || reason != "" {
				return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: ReasonHash,
					Err: fmt.Errorf("the record is not the one the mark names (%s): the ledger up to it changed since the mark was taken", from.Hash)}
			}
			want++
			return nil
		case r.Prev != prev && (r.Seq != from.Seq+1 || from.Hash != "" || from.Seq == 0):
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: ReasonPrev}
		case reason != "":
			return &VerifyError{Seq: r.Seq, Line: lineNo, Reason: reason, Err: err}
		}
		prev = r.Hash
		want++
		n++
		last = Mark{Seq: r.Seq, Hash: r.Hash}
		if h != nil && r.Seq == h.seq {
			anchored, anchorLine = head{seq: r.Seq, hash: r.Hash}, lineNo
		}
		return nil
	})
	if err != nil {
		return n, last, err
	}
	if from.Hash != "" && want == from.Seq {
		return n, last, &VerifyError{Seq: from.Seq, Reason: ReasonTruncated,
			Err: fmt.Errorf("the ledger does not hold record %d, which the mark names", from.Seq)}
	}
	if h != nil {
		switch {
		case h.seq >= want:
			return n, last, &VerifyError{Seq: want, Line: lines + 1, Reason: ReasonTruncated,
				Err: fmt.Errorf("the ledger ends at record %d, its head anchor names record %d", want-1, h.seq)}
		case h.seq > from.Seq && anchored.hash != h.hash:
			return n, last, &VerifyError{Seq: h.seq, Line: anchorLine, Reason: ReasonTruncated,
				Err: fmt.Errorf("record %d is not the one the head anchor names", h.seq)}
		}
	}
	if torn > 0 {
		return n, last, &VerifyError{Seq: want, Line: lines + 1, Reason: ReasonTornTail,
			Err: fmt.Errorf("%d bytes without newline", torn)}
	}
	return n, last, nil
}

// read calls fn with each complete line of the ledger name in dir (without
// its newline) and its 1-based number, up to the size the file has when read
// takes the shared lock, and returns the length of a final line without
// newline. If hp is not nil, read sets *hp to the head anchor as it was then
// (nil if there is none) before the first call of fn. It takes
// the lock only to learn that size and the anchor, so it never sees the
// middle of an append; with no lock file no Ledger ever wrote there, and it
// reads without one rather than create it. A missing ledger reads as empty.
// start, if not nil, returns the offset of the line to begin at, a line's
// start; the lines are then numbered from there.
func read(dir *statedir.Dir, name string, hp **head, start func(f *os.File, size int64) (int64, error), fn func(line []byte, lineNo int) error) (torn int64, err error) {
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
	var off int64
	if start != nil {
		if off, err = start(f, size); err != nil {
			return 0, err
		}
	}
	return readLines(f, off, size, func(line []byte, _ int64, n int) error { return fn(line, n) })
}

// readLines calls fn with each complete line of f between off, a line's
// start, and size (without its newline), the line's offset and its number
// from 1, and returns the length of a final line without newline.
func readLines(f io.ReaderAt, off, size int64, fn func(line []byte, off int64, n int) error) (torn int64, err error) {
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
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
		if err := fn(line[:len(line)-1], off, lineNo); err != nil {
			return 0, err
		}
		off += int64(len(line))
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
