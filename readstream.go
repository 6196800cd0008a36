package editguard

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/textcodec"
)

// errNotPlainText makes a streaming read give way to the full decode, which
// handles (and reports) everything but plain UTF-8.
var errNotPlainText = errors.New("not plain UTF-8 text")

// streamed is the outcome of streamLines.
type streamed struct {
	text       string // the selected lines, LF line endings
	total      int
	full       bool // every line was selected, whole
	sum        string
	size       int64 // bytes read and hashed
	lineEnding string
	bom        bool
	cut        bool // a selected line was longer than the line cap and was cut
	next       int  // the byte cap stopped the selection before this line (1-based); 0 if it did not
}

// readCaps bound what a read returns, whatever its arguments: bytes of
// text in all, and bytes of one line. Zero means no cap.
type readCaps struct {
	bytes, line int
	perLine     int // counted toward bytes for each line kept
}

// streamLines reads r to the end, hashing every byte, and keeps only lines
// [offset, offset+limit) (1-based; limit 0 means to the end), within caps:
// a line longer than caps.line keeps its first caps.line bytes and a marker
// saying how long it was, and no line starts once caps.bytes of text are
// kept. So a read holds at most the caps and a buffer, for a file of any
// size and any line length. It handles UTF-8 with or without a BOM and any
// mix of LF and CRLF; for anything else (UTF-16, NUL bytes, invalid UTF-8)
// it returns errNotPlainText and the caller decodes the whole file, which
// knows how to report or decode it. Without caps, the result equals
// decoding the whole file and selecting the same lines. size is what r is
// expected to hold, to allocate the selection once; 0 if unknown.
func streamLines(r io.Reader, offset, limit int, caps readCaps, size int64) (*streamed, error) {
	h := sha256.New()
	v := &utf8Check{}
	cr := &countingReader{r: r}
	// A small file needs no 64 KiB buffer; the first 8 KiB are peeked at.
	bufSize := 64 << 10
	if size > 0 && size < int64(bufSize) {
		bufSize = max(int(size)+1, 8<<10)
	}
	br := bufio.NewReaderSize(io.TeeReader(cr, io.MultiWriter(h, v)), bufSize)
	first := max(offset, 1)
	out := &streamed{}
	head, _ := br.Peek(8 << 10)
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return nil, errNotPlainText
	}
	if bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
		out.bom = true
		br.Discard(3)
		head = head[3:]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return nil, errNotPlainText
	}
	var sel strings.Builder
	if size > 0 {
		// The whole selection, or as much as the cap lets through, with
		// room for the line-cut note of its last line.
		n := size
		if caps.bytes > 0 {
			n = min(n, int64(caps.bytes)+256)
		}
		sel.Grow(int(n))
	}
	var (
		line     = 1 // number of the line being read
		lf, crlf int
		heldCR   bool  // the previous piece of this line ended in '\r', not yet written
		partial  bool  // the current line has unterminated content
		kept     int   // bytes of the current line kept
		lineFull bool  // the current line reached the line cap
		length   int64 // bytes of the current line
		selected bool  // the current line is selected
		nsel     int   // lines kept
	)
	startLine := func() {
		selected = line >= first && (limit == 0 || line < first+limit) && out.next == 0
		if selected && caps.bytes > 0 && sel.Len()+nsel*caps.perLine >= caps.bytes {
			out.next, selected = line, false
		}
		kept, length, lineFull = 0, 0, false
	}
	keep := func(b []byte) {
		length += int64(len(b))
		if !selected {
			return
		}
		if lineFull {
			return
		}
		if caps.line > 0 && kept+len(b) > caps.line {
			n := caps.line - kept
			for n > 0 && !utf8.RuneStart(b[n]) {
				n-- // b[n] is the first byte dropped: do not cut a character in two
			}
			b, lineFull = b[:n], true // nothing more of this line
		}
		kept += len(b)
		sel.Write(b)
	}
	endLine := func() {
		if selected && int64(kept) < length {
			fmt.Fprintf(&sel, "… [line cut: %d bytes, %d shown]", length, kept)
			out.cut = true
		}
		if selected {
			sel.WriteByte('\n')
			nsel++
		}
	}
	startLine()
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			ends := piece[len(piece)-1] == '\n'
			body := piece
			if ends {
				body = piece[:len(piece)-1]
			}
			isCRLF := ends && (len(body) > 0 && body[len(body)-1] == '\r' || len(body) == 0 && heldCR)
			if heldCR && !(ends && len(body) == 0) {
				keep([]byte{'\r'}) // a lone CR inside the line
			}
			heldCR = false
			if len(body) > 0 && body[len(body)-1] == '\r' {
				body, heldCR = body[:len(body)-1], !ends
			}
			keep(body)
			if ends {
				if isCRLF {
					crlf++
				} else {
					lf++
				}
				endLine()
				line++
				partial, heldCR = false, false
				startLine()
			} else {
				partial = true
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if heldCR {
		keep([]byte{'\r'})
	}
	if !v.ok() {
		return nil, errNotPlainText
	}
	out.total = line - 1
	if partial {
		out.total++
		if selected && int64(kept) < length {
			fmt.Fprintf(&sel, "… [line cut: %d bytes, %d shown]", length, kept)
			out.cut = true
		}
	}
	if out.next > out.total {
		out.next = 0
	}
	out.text = sel.String()
	out.size = cr.n
	// Whole when no line was skipped before the selection or after it, and
	// nothing was cut.
	out.full = min(first-1, out.total) == 0 && (limit == 0 || out.total < first+limit) && !out.cut && out.next == 0
	out.sum = hex.EncodeToString(h.Sum(nil))
	switch {
	case lf == 0 && crlf == 0:
		out.lineEnding = textcodec.None
	case crlf == 0:
		out.lineEnding = textcodec.LF
	case lf == 0:
		out.lineEnding = textcodec.CRLF
	default:
		out.lineEnding = textcodec.Mixed
	}
	return out, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// utf8Check validates a byte stream as UTF-8 across write boundaries.
type utf8Check struct {
	carry [utf8.UTFMax]byte
	n     int
	bad   bool
}

func (c *utf8Check) Write(p []byte) (int, error) {
	if c.bad {
		return len(p), nil
	}
	size := len(p)
	if c.n > 0 {
		// Complete the rune carried over from the previous write.
		need := min(utf8.UTFMax-c.n, len(p))
		buf := append(c.carry[:c.n:c.n], p[:need]...)
		r, w := utf8.DecodeRune(buf)
		if r == utf8.RuneError && w <= 1 {
			if !utf8.FullRune(buf) && len(p) == need {
				c.n = copy(c.carry[:], buf)
				return size, nil
			}
			c.bad = true
			return size, nil
		}
		p = p[w-c.n:]
		c.n = 0
	}
	// Carry an incomplete rune at the end.
	tail := 0
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				tail = len(p) - i
			}
			break
		}
	}
	if !utf8.Valid(p[:len(p)-tail]) {
		c.bad = true
		return size, nil
	}
	c.n = copy(c.carry[:], p[len(p)-tail:])
	return size, nil
}

func (c *utf8Check) ok() bool { return !c.bad && c.n == 0 }

// cappedBuffer keeps what is written to it up to max bytes; past that it
// drops everything and notes that it overflowed.
type cappedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

// keptBuffers recycles the cappedBuffers that reads keep files in: remember
// copies what it keeps, and a new buffer for every read of a large file
// costs more than the read's other work.
var keptBuffers = sync.Pool{New: func() any { return new(cappedBuffer) }}

// reset empties c and sets its cap, keeping its memory.
func (c *cappedBuffer) reset(max int) {
	c.buf.Reset()
	c.max, c.over = max, false
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if !c.over && c.buf.Len()+len(p) <= c.max {
		c.buf.Write(p)
	} else if !c.over {
		c.over = true
		c.buf = bytes.Buffer{}
	}
	return len(p), nil
}
