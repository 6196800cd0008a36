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
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil, fmt.Errorf("ledger: read %s: %w", l.Name(), os.ErrClosed)
	}
	// Under the lock, so that no append is half written, and with the
	// tail brought up to date: another process may have appended.
	lk, err := l.lock()
	if err != nil {
		return nil, err
	}
	err = l.loadTail()
	size := l.tail.size
	buf := make([]byte, min(size, window))
	if err == nil {
		_, err = l.f.ReadAt(buf, size-int64(len(buf)))
		if err == io.EOF {
			err = nil
		}
	}
	lk.Unlock()
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
		if err := json.Unmarshal(line, r); err != nil {
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
