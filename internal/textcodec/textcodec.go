// Package textcodec turns a file's bytes into the text an agent sees (UTF-8,
// LF line endings) and turns edited text back into bytes in the file's own
// format: its encoding, its byte order mark and its line endings.
//
// Decode and Encode are pure: they never touch the disk.
package textcodec

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Line ending styles reported in Format.LineEnding.
const (
	LF    = "lf"
	CRLF  = "crlf"
	Mixed = "mixed"
	None  = "none" // no line break in the file
)

// Format is how a file stores its text.
type Format struct {
	Encoding   string // "utf-8", "utf-16le", "utf-16be" or an htmlindex name
	BOM        bool
	LineEnding string // LF, CRLF, Mixed or None
}

// Doc is a decoded file: the text the agent sees and what is needed to write
// an edited text back in the same format.
type Doc struct {
	Text   string
	Format Format
}

// ErrBinary reports content that is not text.
var ErrBinary = errors.New("textcodec: binary content")

// EncodingError reports bytes that are not valid in the expected encoding.
type EncodingError struct {
	Encoding string
	Offset   int      // byte offset of the first invalid sequence
	Likely   []string // encodings that would decode the bytes
}

func (e *EncodingError) Error() string {
	return fmt.Sprintf("textcodec: invalid %s at byte %d", e.Encoding, e.Offset)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Decode decodes raw in the named encoding ("" means detect: UTF-8 with or
// without BOM).
func Decode(raw []byte, encoding string) (*Doc, error) {
	if encoding != "" && !strings.EqualFold(encoding, "utf-8") && !strings.EqualFold(encoding, "utf8") {
		return nil, &EncodingError{Encoding: encoding}
	}
	d := &Doc{Format: Format{Encoding: "utf-8"}}
	if bytes.HasPrefix(raw, utf8BOM) {
		d.Format.BOM = true
		raw = raw[len(utf8BOM):]
	}
	if bytes.IndexByte(raw[:min(len(raw), 8192)], 0) >= 0 {
		return nil, ErrBinary
	}
	if !utf8.Valid(raw) {
		off := 0
		for off < len(raw) {
			r, n := utf8.DecodeRune(raw[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, &EncodingError{Encoding: "utf-8", Offset: off}
	}
	s := string(raw)
	crlf := strings.Count(s, "\r\n")
	lf := strings.Count(s, "\n") - crlf
	switch {
	case crlf == 0 && lf == 0:
		d.Format.LineEnding = None
	case crlf == 0:
		d.Format.LineEnding = LF
	case lf == 0:
		d.Format.LineEnding = CRLF
	default:
		d.Format.LineEnding = Mixed
	}
	if crlf > 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
	}
	d.Text = s
	return d, nil
}

// NewDoc returns an empty document in the format new files get: UTF-8
// without BOM, LF line endings.
func NewDoc() *Doc {
	return &Doc{Format: Format{Encoding: "utf-8", LineEnding: None}}
}

// Encode returns text in d's format. lineEnding overrides the file's style
// (LF or CRLF); "" keeps it.
func (d *Doc) Encode(text string, lineEnding string) ([]byte, error) {
	style := lineEnding
	if style == "" {
		style = d.Format.LineEnding
	}
	if style == CRLF {
		text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
	}
	var b []byte
	if d.Format.BOM {
		b = append(b, utf8BOM...)
	}
	return append(b, text...), nil
}
