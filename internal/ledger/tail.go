//go:build unix

package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/editguard/editguard/internal/statedir"
)

// tailChunk is how much of the ledger Tail reads at a time, from its end.
const tailChunk = 64 << 10

// Tail calls fn for the last n records of the ledger name in dir that m
// matches, oldest first, as Filter lists them, except that an intent no
// outcome follows comes in its place by seq instead of after every other
// record. It reads the ledger backward from its end, decoding only the
// lines that may match, so its cost grows with the records it passes over
// and not with the ledger's length. With m.Before set it first finds the
// line of that seq by bisecting the file (seqs grow line by line), so a
// page far from the end costs the page too. Like Scan it reads the ledger
// as it is when Tail begins, skips a final line without newline, and
// verifies no chain. n < 1 lists nothing.
func Tail(dir *statedir.Dir, name string, m Match, n int, fn func(*Record) error) error {
	if n < 1 {
		return nil
	}
	f, size, err := openSized(dir, name)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	b := &backward{f: f, pos: size}
	resolved := map[uint64]bool{} // intents an outcome already passed over names
	needles := m.needles()
	if m.Before > 0 {
		if b.pos, err = seekSeq(f, size, m.Before); err != nil {
			return err
		}
		b.cut = b.pos < size // a line's start; at the end, a torn line may precede it
		if err := outcomesAfter(f, b.pos, size, resolved); err != nil {
			return err
		}
	}
	var out []*Record
	for len(out) < n {
		line, ok, err := b.line()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r, err := tailRecord(line, m, needles, resolved)
		if err != nil {
			return err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		if err := fn(out[i]); err != nil {
			return err
		}
	}
	return nil
}

// tailRecord decodes line if it is a record m matches that Filter would
// list, noting in resolved the intent an outcome names; else it returns
// nil. Lines that cannot match are passed over without being decoded.
func tailRecord(line []byte, m Match, needles [][]byte, resolved map[uint64]bool) (*Record, error) {
	if in, ok := intentOf(line); ok {
		resolved[in] = true
	}
	if bytes.Contains(line, pendingField) {
		if seq, ok := seqOf(line); ok && resolved[seq] {
			return nil, nil // its outcome, later in the ledger, stands for it
		}
	}
	for _, q := range needles {
		if !bytes.Contains(line, q) {
			return nil, nil
		}
	}
	r := new(Record)
	if err := unmarshalRecord(line, r); err != nil {
		seq, _ := seqOf(line)
		return nil, &VerifyError{Seq: seq, Reason: ReasonMalformed, Err: err}
	}
	if !m.Matches(r) || r.Outcome == OutcomePending && resolved[r.Seq] {
		return nil, nil
	}
	return r, nil
}

// openSized opens the ledger and learns its size under the shared lock, so
// that what is read holds no append in progress (see read). A missing
// ledger is a nil file.
func openSized(dir *statedir.Dir, name string) (*os.File, int64, error) {
	f, err := dir.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var size int64
	err = withSharedLock(dir, name+".lock", func() error {
		fi, err := f.Stat()
		size = fi.Size()
		return err
	})
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// backward returns the complete lines of f before pos, last first.
type backward struct {
	f   *os.File
	pos int64  // data starts here in the file
	buf []byte // the bytes from pos not yet returned, ending after a newline once started
	cut bool   // a final line without newline was dropped
}

// line returns the last complete line not yet returned, without its
// newline, and false when there is none.
func (b *backward) line() ([]byte, bool, error) {
	for {
		if !b.cut {
			// A final line without newline is an append in progress or a
			// torn tail: not a record.
			if i := bytes.LastIndexByte(b.buf, '\n'); i >= 0 {
				b.buf, b.cut = b.buf[:i+1], true
				continue
			}
		} else if len(b.buf) > 0 {
			if i := bytes.LastIndexByte(b.buf[:len(b.buf)-1], '\n'); i >= 0 || b.pos == 0 {
				line := b.buf[i+1 : len(b.buf)-1]
				b.buf = b.buf[:i+1]
				return line, true, nil
			}
		}
		if b.pos == 0 {
			return nil, false, nil
		}
		if err := b.more(); err != nil {
			return nil, false, err
		}
	}
}

// more prepends the chunk of the file before pos to buf.
func (b *backward) more() error {
	n := min(int64(tailChunk), b.pos)
	chunk := make([]byte, n, n+int64(len(b.buf)))
	if _, err := b.f.ReadAt(chunk, b.pos-n); err != nil && err != io.EOF {
		return err
	}
	b.pos -= n
	b.buf = append(chunk, b.buf...)
	return nil
}

// seekSeq returns the offset of the first complete line of f (of size
// bytes) whose seq is seq or more, or size if there is none. Bisection
// narrows lo, always a line's start with only lower seqs before it (a
// line's seq is greater than every seq before it); hi only bounds the
// search, so a line that does not read (torn, or longer than a chunk)
// costs a longer scan, never a record passed over.
func seekSeq(f *os.File, size int64, seq uint64) (int64, error) {
	lo, hi := int64(0), size
	for hi-lo > tailChunk {
		mid := lo + (hi-lo)/2
		start, got, ok, err := lineAfter(f, mid, size)
		switch {
		case err != nil:
			return 0, err
		case !ok || start >= hi || got >= seq:
			hi = mid
		default:
			lo = start
		}
	}
	return scanToSeq(f, lo, size, seq)
}

// lineAfter reads the first line that starts after off (off > 0) and
// returns its start and seq; ok is false when no complete line with a seq
// starts within a chunk.
func lineAfter(f *os.File, off, size int64) (start int64, seq uint64, ok bool, err error) {
	buf := make([]byte, min(int64(tailChunk), size-off))
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return 0, 0, false, err
	}
	i := bytes.IndexByte(buf, '\n') + 1
	if i == 0 {
		return 0, 0, false, nil
	}
	end := bytes.IndexByte(buf[i:], '\n')
	if end < 0 {
		return 0, 0, false, nil
	}
	seq, ok = seqOf(buf[i : i+end])
	return off + int64(i), seq, ok, nil
}

// scanToSeq reads the lines of f forward from lo, a line's start, and
// returns the start of the first whose seq is seq or more, or size.
func scanToSeq(f *os.File, lo, size int64, seq uint64) (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, lo, size-lo), tailChunk)
	for pos := lo; ; {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return size, nil // a final line without newline is not a record
		}
		if err != nil {
			return 0, err
		}
		if got, ok := seqOf(line); ok && got >= seq {
			return pos, nil
		}
		pos += int64(len(line))
	}
}

// outcomesAfter notes in resolved the intents that the outcomes in the
// chunk after pos name, so that a page ending just before an outcome does
// not show its intent as pending.
func outcomesAfter(f *os.File, pos, size int64, resolved map[uint64]bool) error {
	buf := make([]byte, min(int64(tailChunk), size-pos))
	if _, err := f.ReadAt(buf, pos); err != nil && err != io.EOF {
		return err
	}
	for _, line := range bytes.Split(buf, []byte{'\n'}) {
		if in, ok := intentOf(line); ok {
			resolved[in] = true
		}
	}
	return nil
}
