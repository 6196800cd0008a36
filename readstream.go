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
	cut        bool      // a selected line was longer than the line cap and was cut
	next       int       // the byte cap stopped the selection before this line (1-based); 0 if it did not
	pending    *hashPass // sum is empty: this pass computes it (see readpending.go)
}

// extent returns the lines a read starting at offset (1-based; 0 for the
// first line) showed, first to last, of total; all zero for a full read.
func (s *streamed) extent(offset int) (from, to, total int) {
	if s.full {
		return 0, 0, 0
	}
	n := strings.Count(s.text, "\n")
	if s.text != "" && !strings.HasSuffix(s.text, "\n") {
		n++
	}
	from = max(offset, 1)
	return from, from + n - 1, s.total
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
	return streamIndexed(r, offset, limit, caps, size, nil)
}

// streamIndexed is streamLines; with ix set, it also notes in ix where
// lines start, for later reads of the same bytes to start there (see
// readEntry.page).
func streamIndexed(r io.Reader, offset, limit int, caps readCaps, size int64, ix *lineIndex) (*streamed, error) {
	h := sha256.New()
	v := &utf8Check{}
	cr := &countingReader{r: r}
	// A small file needs no 64 KiB buffer; the first 8 KiB are peeked at.
	bufSize := 64 << 10
	if size > 0 && size < int64(bufSize) {
		bufSize = max(int(size)+1, 8<<10)
	}
	br := bufio.NewReaderSize(io.TeeReader(cr, io.MultiWriter(h, v)), bufSize)
	ls := &lineSelector{first: max(offset, 1), limit: limit, caps: caps, out: &streamed{}, line: 1, ix: ix}
	if err := ls.head(br); err != nil {
		return nil, err
	}
	if ix != nil {
		ix.start(ls.pos, size)
	}
	ls.grow(size)
	ls.startLine()
	for {
		piece, err := br.ReadSlice('\n')
		ls.piece(piece)
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
	if !v.ok() {
		return nil, errNotPlainText
	}
	out := ls.finish()
	out.size = cr.n
	out.sum = hex.EncodeToString(h.Sum(nil))
	return out, nil
}

// lineSelector is streamLines' state: it splits the stream into lines,
// counts their endings, and keeps the selected ones within the caps.
type lineSelector struct {
	first, limit int
	caps         readCaps
	out          *streamed
	sel          strings.Builder

	line     int   // number of the line being read
	pos      int64 // bytes of the stream taken, the BOM included
	ix       *lineIndex
	lf, crlf int
	heldCR   bool  // the previous piece of this line ended in '\r', not yet written
	partial  bool  // the current line has unterminated content
	kept     int   // bytes of the current line kept
	lineFull bool  // the current line reached the line cap
	length   int64 // bytes of the current line
	selected bool  // the current line is selected
	nsel     int   // lines kept
}

// head looks at the first 8 KiB: UTF-16 and NUL bytes are not plain text,
// and a UTF-8 BOM is noted and skipped.
func (ls *lineSelector) head(br *bufio.Reader) error {
	head, _ := br.Peek(8 << 10)
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return errNotPlainText
	}
	if bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
		ls.out.bom, ls.pos = true, 3
		br.Discard(3)
		head = head[3:]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return errNotPlainText
	}
	return nil
}

// grow allocates the whole selection at once when the size is known, or
// as much as the cap lets through, with room for the line-cut note of its
// last line.
func (ls *lineSelector) grow(size int64) {
	if size <= 0 {
		return
	}
	n := size
	if ls.caps.bytes > 0 {
		n = min(n, int64(ls.caps.bytes)+256)
	}
	ls.sel.Grow(int(n))
}

// startLine decides whether the line about to be read is selected: in
// the range asked for, and started before the byte cap was reached.
func (ls *lineSelector) startLine() {
	ls.selected = ls.line >= ls.first && (ls.limit == 0 || ls.line < ls.first+ls.limit) && ls.out.next == 0
	if ls.selected && ls.caps.bytes > 0 && ls.sel.Len()+ls.nsel*ls.caps.perLine >= ls.caps.bytes {
		ls.out.next, ls.selected = ls.line, false
	}
	ls.kept, ls.length, ls.lineFull = 0, 0, false
}

// keep adds b to the current line, and to the selection up to the line
// cap, never cutting a character in two.
func (ls *lineSelector) keep(b []byte) {
	ls.length += int64(len(b))
	if !ls.selected || ls.lineFull {
		return
	}
	if ls.caps.line > 0 && ls.kept+len(b) > ls.caps.line {
		n := ls.caps.line - ls.kept
		for n > 0 && !utf8.RuneStart(b[n]) {
			n-- // b[n] is the first byte dropped
		}
		b, ls.lineFull = b[:n], true // nothing more of this line
	}
	ls.kept += len(b)
	ls.sel.Write(b)
}

// noteCut says how long a selected line was that the line cap cut.
func (ls *lineSelector) noteCut() {
	if ls.selected && int64(ls.kept) < ls.length {
		fmt.Fprintf(&ls.sel, "… [line cut: %d bytes, %d shown]", ls.length, ls.kept)
		ls.out.cut = true
	}
}

// endLine ends a selected line with LF, whatever its ending was.
func (ls *lineSelector) endLine() {
	ls.noteCut()
	if ls.selected {
		ls.sel.WriteByte('\n')
		ls.nsel++
	}
}

// piece takes one piece of the stream: a line's end, or part of a line
// the buffer could not hold. A CR is held back until what follows says
// whether it ends the line (CRLF) or stands inside it.
func (ls *lineSelector) piece(piece []byte) {
	if len(piece) == 0 {
		return
	}
	ls.pos += int64(len(piece))
	ends := piece[len(piece)-1] == '\n'
	body := piece
	if ends {
		body = piece[:len(piece)-1]
	}
	isCRLF := ends && (len(body) > 0 && body[len(body)-1] == '\r' || len(body) == 0 && ls.heldCR)
	if ls.heldCR && !(ends && len(body) == 0) {
		ls.keep([]byte{'\r'}) // a lone CR inside the line
	}
	ls.heldCR = false
	if len(body) > 0 && body[len(body)-1] == '\r' {
		body, ls.heldCR = body[:len(body)-1], !ends
	}
	ls.keep(body)
	if !ends {
		ls.partial = true
		return
	}
	if isCRLF {
		ls.crlf++
	} else {
		ls.lf++
	}
	ls.endLine()
	ls.line++
	ls.partial, ls.heldCR = false, false
	if ls.ix != nil {
		ls.ix.note(ls.line, ls.pos)
	}
	ls.startLine()
}

// done reports that no line after the current one can be selected: the
// selection is over once the current line is not in it. Only meaningful
// at a line's start.
func (ls *lineSelector) done() bool {
	return ls.out.next != 0 || ls.limit > 0 && ls.line >= ls.first+ls.limit
}

// finish ends the last line, unterminated or not, and fills in the
// totals: lines, wholeness and the line ending.
func (ls *lineSelector) finish() *streamed {
	out := ls.out
	ls.endStream()
	out.total = ls.line - 1
	if ls.partial {
		out.total++
	}
	out.lineEnding = endingOf(ls.lf, ls.crlf)
	ls.settle()
	return out
}

// endStream ends the last line at the end of the stream: a CR held back
// stands inside it, and an unterminated selected line may have been cut.
func (ls *lineSelector) endStream() {
	if ls.heldCR {
		ls.keep([]byte{'\r'})
	}
	if ls.partial {
		ls.noteCut()
	}
}

// settle fills in what depends on the total number of lines, once
// out.total holds it: where to go on, the text and its wholeness.
func (ls *lineSelector) settle() {
	out := ls.out
	if out.next > out.total {
		out.next = 0
	}
	out.text = ls.sel.String()
	// Whole when no line was skipped before the selection or after it, and
	// nothing was cut.
	out.full = min(ls.first-1, out.total) == 0 && (ls.limit == 0 || out.total < ls.first+ls.limit) && !out.cut && out.next == 0
}

// endingOf names the line ending of a text with lf lines ending in LF
// and crlf in CRLF.
func endingOf(lf, crlf int) string {
	switch {
	case lf == 0 && crlf == 0:
		return textcodec.None
	case crlf == 0:
		return textcodec.LF
	case lf == 0:
		return textcodec.CRLF
	default:
		return textcodec.Mixed
	}
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
