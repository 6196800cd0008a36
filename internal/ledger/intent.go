//go:build unix

package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Outcomes of the records of a change recorded in two (see the package
// documentation, Intents).
const (
	// OutcomePending marks an intent: the change it describes is about to
	// be made.
	OutcomePending = "pending"
	// OutcomeInterrupted is the outcome appended for an intent whose
	// writer stopped before recording one, when the file does not hold
	// what the intent said the change would leave.
	OutcomeInterrupted = "interrupted"
)

// DefaultUnresolvedWindow is how far from the end of the ledger Unresolved
// looks by default. A writer's outcome record follows its intent after the
// change's swap and directory fsync, so the records between the two are
// those of concurrent commits: with 16 sessions committing at once over
// HTTP, at most 46 records and 52 KB lay between an intent's start and its
// outcome's end (5,224 commits), five times less than the window.
const DefaultUnresolvedWindow = 256 << 10

// Unresolved returns the intents in the last window bytes of the ledger
// (0: DefaultUnresolvedWindow) that no outcome record follows, in order of
// seq. An intent's writer may still be at work: the caller decides, under
// the lock that writer holds, whether it stopped. Unresolved writes
// nothing.
//
// It decodes only the records that may be such intents: every line is
// checked for an intent's outcome field, and an outcome's reference to its
// intent is read from the line's end (Intent is the last field before Prev
// and Hash, so no argument or result the record carries can mimic it).
func (l *Ledger) Unresolved(window int64) ([]*Record, error) {
	if window <= 0 {
		window = DefaultUnresolvedWindow
	}
	buf, size, _, err := l.readTail(window)
	if err != nil {
		return nil, err
	}
	if int64(len(buf)) < size {
		// The first line may start before the window.
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, nil
		}
		buf = buf[i+1:]
	}
	var candidates [][]byte
	resolved := map[uint64]bool{}
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break // a torn tail: not a record
		}
		line := buf[:i]
		buf = buf[i+1:]
		if n, ok := intentOf(line); ok {
			resolved[n] = true
		}
		if bytes.Contains(line, pendingField) {
			candidates = append(candidates, line)
		}
	}
	var out []*Record
	for _, line := range candidates {
		if n, ok := seqOf(line); ok && resolved[n] {
			continue
		}
		r := new(Record)
		if err := unmarshalRecord(line, r); err != nil {
			return nil, &VerifyError{Reason: ReasonMalformed, Err: err}
		}
		if r.Outcome == OutcomePending && !resolved[r.Seq] {
			out = append(out, r)
		}
	}
	return out, nil
}

var (
	pendingField = []byte(`"outcome":"` + OutcomePending + `"`)
	seqPrefix    = []byte(`{"seq":`)
	intentField  = []byte(`,"intent":`)
	prevField    = []byte(`,"prev":"`)
	hashField    = []byte(`","hash":"`)
)

// seqOf reads the seq at the start of a canonical line.
func seqOf(line []byte) (uint64, bool) {
	if !bytes.HasPrefix(line, seqPrefix) {
		return 0, false
	}
	rest := line[len(seqPrefix):]
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	return n, err == nil
}

// intentOf reads the Intent field of a canonical line, which, when present,
// is immediately followed by Prev.
func intentOf(line []byte) (uint64, bool) {
	// The line ends with ,"prev":"P","hash":"H"} where H is 64 hex digits
	// and P is 64 or none (the first record).
	n := len(line) - len(hashField) - 64 - 2
	if n < 0 || !bytes.Equal(line[n:n+len(hashField)], hashField) {
		return 0, false
	}
	before := line[:n]
	switch {
	case bytes.HasSuffix(before, prevField):
		before = before[:len(before)-len(prevField)]
	case len(before) >= len(prevField)+64 && bytes.Equal(before[len(before)-len(prevField)-64:len(before)-64], prevField):
		before = before[:len(before)-len(prevField)-64]
	default:
		return 0, false
	}
	i := len(before)
	for i > 0 && before[i-1] >= '0' && before[i-1] <= '9' {
		i--
	}
	if i == len(before) || !bytes.HasSuffix(before[:i], intentField) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(before[i:]), 10, 64)
	return v, err == nil
}

// SinceLimit is how much of the ledger's end Since reads at most. A
// ledger is untrusted input and may be of any size; the records Since is
// for are written shortly before they are asked for.
const SinceLimit = 64 << 20

// Position names a record: its seq and hash.
type Position struct {
	Seq  uint64
	Hash string
}

// Since returns the records of changes written after the record at from:
// the intents, and the outcomes that name an intent, in order of seq; and
// the position of the ledger's last record. If no record at from has from's
// hash (the ledger was cut or replaced since from was taken, or from is
// zero), it returns those of the ledger's last SinceLimit bytes and
// anchored false. Since writes nothing; the records are not verified
// (Verify does that), and a line that does not decode is skipped.
func (l *Ledger) Since(from Position) (recs []*Record, last Position, anchored bool, err error) {
	return l.after(from, func(line []byte) bool {
		_, isOutcome := intentOf(line)
		return isOutcome || bytes.Contains(line, pendingField)
	}, func(r *Record) bool { return r.Outcome == OutcomePending || r.Intent != 0 })
}

// Last returns the position of the ledger's last record.
func (l *Ledger) Last() (Position, error) {
	_, _, last, err := l.readTail(0)
	return last, err
}

// WithStrategy returns the records written after the record at from whose
// strategy is strategy, read as Since reads (anchored says whether from's
// record was found). Only lines holding the strategy's JSON are decoded.
func (l *Ledger) WithStrategy(from Position, strategy string) (recs []*Record, anchored bool, err error) {
	field, err := json.Marshal(strategy)
	if err != nil {
		return nil, false, err
	}
	field = append([]byte(`"strategy":`), field...)
	recs, _, anchored, err = l.after(from, func(line []byte) bool { return bytes.Contains(line, field) },
		func(r *Record) bool { return r.Strategy == strategy })
	return recs, anchored, err
}

// OKAfter returns the records of changes made (outcome "ok") written after
// the record at from, read as Since reads (anchored says whether from's
// record was found). Only lines holding an ok outcome are decoded.
func (l *Ledger) OKAfter(from Position) (recs []*Record, anchored bool, err error) {
	field := []byte(`"outcome":"ok"`)
	recs, _, anchored, err = l.after(from, func(line []byte) bool { return bytes.Contains(line, field) },
		func(r *Record) bool { return r.Outcome == "ok" })
	return recs, anchored, err
}

// after returns the records after the record at from whose line passes
// line and whose record passes keep (see Since).
func (l *Ledger) after(from Position, line func([]byte) bool, keep func(*Record) bool) (recs []*Record, last Position, anchored bool, err error) {
	_, _, last, err = l.readTail(0)
	if err != nil {
		return nil, Position{}, false, err
	}
	if last.Seq == from.Seq && last.Hash == from.Hash {
		return nil, last, true, nil
	}
	// Read back from the end in growing windows until the window begins
	// at or before from's record. The bytes up to size are complete
	// records: appends only add whole lines after them.
	for window := int64(DefaultUnresolvedWindow); ; window *= 4 {
		if from.Seq == 0 || window > SinceLimit {
			window = SinceLimit
		}
		buf, size, end, err := l.readTail(window)
		if err != nil {
			return nil, Position{}, false, err
		}
		last = end
		n := int64(len(buf))
		if n < size {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 && n < SinceLimit {
				continue
			}
			buf = buf[i+1:]
			if first, ok := seqOf(buf); (!ok || first > from.Seq) && n < SinceLimit {
				continue
			}
		}
		recs, anchored = changesAfter(buf, from, line, keep)
		if anchored || n == size || n == SinceLimit {
			return recs, last, anchored, nil
		}
		// from's seq is in the window with another hash: the ledger is
		// not the one from was taken in.
		window = SinceLimit / 4
	}
}

// changesAfter returns the records in buf (whole lines) after the record
// at from that pass match (on their line) and keep, and whether it found
// that record; if it did not, those of all of buf.
func changesAfter(buf []byte, from Position, match func([]byte) bool, keep func(*Record) bool) (recs []*Record, anchored bool) {
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		line := buf[:i]
		buf = buf[i+1:]
		n, ok := seqOf(line)
		if !ok {
			continue
		}
		if !anchored && n == from.Seq && from.Seq != 0 && lineHash(line) == from.Hash {
			anchored, recs = true, recs[:0]
			continue
		}
		if !match(line) {
			continue
		}
		r := new(Record)
		if unmarshalRecord(line, r) != nil {
			continue
		}
		if keep(r) {
			recs = append(recs, r)
		}
	}
	return recs, anchored
}

// lineHash reads the hash at the end of a canonical line.
func lineHash(line []byte) string {
	n := len(line) - 64 - 2
	if n < len(hashField) || !bytes.Equal(line[n-len(hashField):n], hashField) {
		return ""
	}
	return string(line[n : n+64])
}

// readTail returns the ledger's last window bytes (0: none), as far as its
// last complete record, with the ledger's size then and the position of its
// last record. It reads under the lock, so that no append is half written,
// with the tail brought up to date: another process may have appended.
func (l *Ledger) readTail(window int64) (buf []byte, size int64, last Position, err error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil, 0, Position{}, fmt.Errorf("ledger: read %s: %w", l.Name(), os.ErrClosed)
	}
	lk, err := l.lock()
	if err != nil {
		return nil, 0, Position{}, err
	}
	defer lk.Unlock()
	if err := l.loadTail(); err != nil {
		return nil, 0, Position{}, err
	}
	size = l.tail.size
	buf = make([]byte, min(size, window))
	if _, err := l.f.ReadAt(buf, size-int64(len(buf))); err != nil && err != io.EOF {
		return nil, 0, Position{}, err
	}
	return buf, size, Position{Seq: l.tail.seq, Hash: l.tail.hash}, nil
}
