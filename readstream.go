package editguard

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
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
	full       bool // every line was selected
	sum        string
	lineEnding string
	bom        bool
}

// streamLines reads r to the end, hashing every byte, and keeps only lines
// [offset, offset+limit) (1-based; limit 0 means to the end), so a read of a
// few lines of a large file holds those lines and a buffer, never the file.
// It handles UTF-8 with or without a BOM and any mix of LF and CRLF; for
// anything else (UTF-16, NUL bytes, invalid UTF-8) it returns
// errNotPlainText and the caller decodes the whole file, which knows how to
// report or decode it. The result equals decoding the whole file and
// selecting the same lines.
func streamLines(r io.Reader, offset, limit int) (*streamed, error) {
	h := sha256.New()
	v := &utf8Check{}
	br := bufio.NewReaderSize(io.TeeReader(r, io.MultiWriter(h, v)), 64<<10)
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
	var (
		sel      strings.Builder
		line     = 1 // number of the line being read
		lf, crlf int
		prevCR   bool // the previous piece of this line ended in '\r'
		partial  bool // the current line has unterminated content
	)
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			selected := line >= first && (limit == 0 || line < first+limit)
			ends := piece[len(piece)-1] == '\n'
			body := piece
			if ends {
				isCRLF := (len(piece) >= 2 && piece[len(piece)-2] == '\r') || (len(piece) == 1 && prevCR)
				if isCRLF {
					crlf++
					if len(piece) >= 2 {
						body = piece[:len(piece)-2]
					} else {
						body = piece[:0]
					}
				} else {
					lf++
					body = piece[:len(piece)-1]
				}
				if selected {
					if isCRLF && len(piece) == 1 {
						// The '\r' went out with the previous piece.
						s := sel.String()
						sel.Reset()
						sel.WriteString(strings.TrimSuffix(s, "\r"))
					}
					sel.Write(body)
					sel.WriteByte('\n')
				}
				line++
				prevCR, partial = false, false
			} else {
				if selected {
					sel.Write(body)
				}
				prevCR = piece[len(piece)-1] == '\r'
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
	if !v.ok() {
		return nil, errNotPlainText
	}
	out.total = line - 1
	if partial {
		out.total++
	}
	out.text = sel.String()
	// Whole when no line was skipped before the selection or after it.
	out.full = min(first-1, out.total) == 0 && (limit == 0 || out.total < first+limit)
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
