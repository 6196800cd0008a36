//go:build unix

package ledger

import (
	"bytes"
	"encoding/json"
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
// and not with the ledger's length. Like Scan it reads the ledger as it is
// when Tail begins, skips a final line without newline, and verifies no
// chain. n < 1 lists nothing.
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
	var out []*Record
	for len(out) < n {
		line, ok, err := b.line()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		r, err := tailRecord(line, m, resolved)
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
func tailRecord(line []byte, m Match, resolved map[uint64]bool) (*Record, error) {
	if in, ok := intentOf(line); ok {
		resolved[in] = true
	}
	if bytes.Contains(line, pendingField) {
		if seq, ok := seqOf(line); ok && resolved[seq] {
			return nil, nil // its outcome, later in the ledger, stands for it
		}
	}
	for _, v := range []string{m.Path, m.Session, m.Tool} {
		if v == "" {
			continue
		}
		q, _ := json.Marshal(v)
		if !bytes.Contains(line, q) {
			return nil, nil
		}
	}
	r := new(Record)
	if err := json.Unmarshal(line, r); err != nil {
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
