// Package textcodec turns a file's bytes into the text an agent sees (UTF-8,
// LF line endings) and turns edited text back into bytes in the file's own
// format: its encoding, its byte order mark and its line endings.
//
// The promise is fidelity: encoding an unchanged Doc gives back the exact
// bytes it was decoded from, and encoding an edited text changes only the
// bytes of the lines that were edited. Every line that the edit left alone
// keeps its own line ending, even in a file that mixes LF and CRLF.
//
// Decoding is strict. Bytes that are not valid in the file's encoding are an
// *EncodingError, never a U+FFFD that would later be written to disk, and
// characters that the file's encoding cannot represent are an *EncodingError
// on Encode, never a '?'.
//
// Decode and Encode are pure: they never touch the disk. A Doc is immutable
// after Decode and safe for concurrent use by multiple goroutines.
package textcodec

import (
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
	// Encoding is the canonical name of the character encoding: "utf-8",
	// "utf-16le", "utf-16be", "iso-8859-1" or a name from the WHATWG
	// encoding index (golang.org/x/text/encoding/htmlindex) such as "gbk",
	// "gb18030", "shift_jis", "euc-kr" or "windows-1252". Passing it back to
	// Decode or NewDocIn selects the same encoding.
	Encoding string
	// BOM reports whether the file starts with a byte order mark.
	BOM bool
	// LineEnding is LF, CRLF, Mixed or None.
	LineEnding string
}

// Doc is a decoded file: the text the agent sees and what is needed to write
// an edited text back in the same format.
type Doc struct {
	Text   string
	Format Format

	// orig is the text as decoded; Encode diffs a new text against it to
	// find the lines that were left alone. It shares memory with Text.
	orig string
	// decoded reports that Format.LineEnding was measured by Decode (and
	// dominantCRLF and exceptions are valid) rather than set by hand.
	decoded bool
	// dominantCRLF is the style new line breaks take: CRLF if the file has
	// more CRLF than LF breaks (ties go to the file's first break).
	dominantCRLF bool
	// exceptions lists, in increasing order, the 0-based indexes of the
	// line breaks of orig whose style is not the dominant one. It is empty
	// unless the file mixes styles, so a uniform file costs nothing.
	exceptions []int
}

// ErrBinary reports content that is not text.
var ErrBinary = errors.New("textcodec: binary content")

// EncodingError reports bytes that are not valid in the expected encoding
// (from Decode) or text that the file's encoding cannot represent (from
// Encode).
type EncodingError struct {
	Encoding string // canonical encoding name
	// Offset is, for Decode, the byte offset in the input of the first
	// sequence that does not decode or does not round-trip; for Encode, the
	// byte offset in the text of the first character that cannot be encoded.
	Offset int
	Line   int  // 1-based line of Offset, 0 if unknown
	Rune   rune // for Encode: the character that cannot be encoded
	// Likely names encodings, most plausible first, in which the input
	// decodes cleanly. Set by Decode only.
	Likely []string
	Err    error // underlying error, if any
}

func (e *EncodingError) Error() string {
	var b strings.Builder
	if e.Rune != 0 {
		fmt.Fprintf(&b, "textcodec: character %q (U+%04X) cannot be encoded in %s", e.Rune, e.Rune, e.Encoding)
	} else {
		fmt.Fprintf(&b, "textcodec: invalid %s at byte %d", e.Encoding, e.Offset)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	if len(e.Likely) > 0 {
		fmt.Fprintf(&b, "; it may be %s", strings.Join(e.Likely, ", "))
	}
	return b.String()
}

func (e *EncodingError) Unwrap() error { return e.Err }

// UnknownEncodingError reports an encoding name that textcodec does not know.
type UnknownEncodingError struct {
	Name string
	Err  error
}

func (e *UnknownEncodingError) Error() string {
	return fmt.Sprintf("textcodec: unknown encoding %q", e.Name)
}

func (e *UnknownEncodingError) Unwrap() error { return e.Err }

// UnknownLineEndingError reports a lineEnding argument to Encode other than
// "", LF or CRLF.
type UnknownLineEndingError struct {
	Value string
}

func (e *UnknownLineEndingError) Error() string {
	return fmt.Sprintf("textcodec: unknown line ending %q (want %q or %q)", e.Value, LF, CRLF)
}

// binaryScan is how much of a file is searched for a NUL byte.
const binaryScan = 8 << 10

// Decode decodes raw in the named encoding.
//
// encoding "" means detect: a UTF-8 or UTF-16 byte order mark names the
// encoding, otherwise the content must be valid UTF-8. A byte order mark
// always wins over the encoding argument, because a file that starts with
// one is in that encoding whatever the caller believes.
//
// Decode returns ErrBinary for content with a NUL byte in its first 8 KiB
// (for UTF-16, a U+0000 character) and for invalid UTF-8 that no candidate
// encoding decodes either; an *EncodingError for bytes that are not valid in
// the encoding or do not encode back to the same bytes (with Likely set to
// the encodings in which they would decode); an *UnknownEncodingError for an
// encoding name it does not know.
func Decode(raw []byte, encoding string) (*Doc, error) {
	return decode(raw, encoding, false)
}

// DecodeOwned is Decode for a caller that never changes raw afterwards:
// the Doc's text may then share raw's memory instead of copying it, which
// for a large file saves an allocation of its size.
func DecodeOwned(raw []byte, encoding string) (*Doc, error) {
	return decode(raw, encoding, true)
}

func decode(raw []byte, encoding string, owned bool) (*Doc, error) {
	cs, bomLen, err := detect(raw, encoding)
	if err != nil {
		return nil, err
	}
	body := raw[bomLen:]
	u, err := cs.decode(body)
	if err != nil {
		var ee *EncodingError
		if errors.As(err, &ee) {
			ee.Offset += bomLen
			if encoding == "" && cs.name == "utf-8" && bomLen == 0 {
				ee.Likely = likely(body, "")
				if len(ee.Likely) == 0 || looksBinary(body) {
					return nil, ErrBinary
				}
			} else if ee.Likely == nil {
				ee.Likely = likely(body, cs.name)
			}
		}
		return nil, err
	}
	d := &Doc{Format: Format{Encoding: cs.name, BOM: bomLen > 0}, decoded: true}
	d.Text, d.Format.LineEnding, d.dominantCRLF, d.exceptions = splitLines(u, owned)
	d.orig = d.Text
	return d, nil
}

// Show returns raw as text for a diff or a message: decoded in encoding
// (detected if ""), or a line that says how many bytes it holds and why
// they are not text. nil is "".
func Show(raw []byte, encoding string) string {
	if raw == nil {
		return ""
	}
	doc, err := Decode(raw, encoding)
	if err != nil {
		return fmt.Sprintf("(%d bytes, not text: %v)\n", len(raw), err)
	}
	return doc.Text
}

// NewDoc returns an empty document in the format new files get: UTF-8
// without BOM, no line break yet (so new lines get LF).
func NewDoc() *Doc {
	return &Doc{Format: Format{Encoding: "utf-8", LineEnding: None}}
}

// NewDocIn returns an empty document in the named encoding, for creating a
// file in that encoding. A UTF-8 document has a byte order mark only if bom
// is set: a BOM in front of a shell script or a JSON file breaks it, so it
// is never added unasked. UTF-16 documents always get one, because a UTF-16
// file without one cannot be recognised later. It returns an
// *UnknownEncodingError for a name it does not know.
func NewDocIn(encoding string, bom bool) (*Doc, error) {
	cs := csUTF8
	if encoding != "" {
		var err error
		if cs, err = lookup(encoding); err != nil {
			return nil, err
		}
	}
	withBOM := cs.bom != nil && (cs.kind != kindUTF8 || bom)
	return &Doc{Format: Format{Encoding: cs.name, BOM: withBOM, LineEnding: None}}, nil
}

// LookupEncoding returns the canonical name of an encoding name or alias
// ("UTF8", "latin1", "sjis", "GB2312", ...), or an *UnknownEncodingError.
func LookupEncoding(name string) (string, error) {
	cs, err := lookup(name)
	if err != nil {
		return "", err
	}
	return cs.name, nil
}

// Encode returns text in d's format: d's encoding and byte order mark, and
// d's line endings. text uses "\n" for line breaks, as Doc.Text does.
//
// With lineEnding "" every line of text that is also a line of d.Text (and
// was left where it was) keeps the line ending it had in the file; other
// line breaks take the file's dominant style. A "\r\n" that the caller put
// into new lines counts as one line break. A document without any line break
// (a new file) writes text's line breaks as they are. The final newline, or
// its absence, is whatever text says.
//
// lineEnding LF or CRLF instead writes every line break of text in that
// style, normalising the whole file.
//
// Encode returns an *EncodingError if text is not valid UTF-8 or has a
// character that the encoding cannot represent, and an
// *UnknownLineEndingError for a lineEnding other than "", LF or CRLF.
func (d *Doc) Encode(text string, lineEnding string) ([]byte, error) {
	cs, err := lookup(d.Format.Encoding)
	if err != nil {
		return nil, err
	}
	if !utf8.ValidString(text) {
		off := invalidUTF8(text)
		return nil, &EncodingError{Encoding: "utf-8", Offset: off, Line: 1 + strings.Count(text[:off], "\n")}
	}
	var bom []byte
	if d.Format.BOM {
		bom = cs.bom
	}
	if cs.name != "utf-8" {
		// Line endings first, in UTF-8, then the character encoding.
		u, err := d.appendLines(nil, text, lineEnding)
		if err != nil {
			return nil, err
		}
		return cs.encode(bom, u, text)
	}
	dst := make([]byte, 0, len(bom)+len(text)+extraCap(d, text, lineEnding))
	dst = append(dst, bom...)
	return d.appendLines(dst, text, lineEnding)
}

// EncodesAsIs reports whether Encode(text, lineEnding) would return text's
// own bytes, unchanged: UTF-8 without a byte order mark, valid, and no line
// break to convert. A caller can then use them without Encode's copy.
func (d *Doc) EncodesAsIs(text, lineEnding string) bool {
	if d.Format.BOM || !strings.EqualFold(d.Format.Encoding, "utf-8") {
		return false
	}
	switch {
	case lineEnding == "":
		if d.Format.LineEnding != None && (len(d.exceptions) > 0 || d.dominant()) {
			return false
		}
	case strings.EqualFold(lineEnding, LF):
	case strings.EqualFold(lineEnding, CRLF):
		if strings.Contains(text, "\n") {
			return false
		}
	default:
		return false
	}
	return !strings.Contains(text, "\r\n") && utf8.ValidString(text)
}

// extraCap estimates how many bytes line endings add, so that the output
// buffer is allocated once.
func extraCap(d *Doc, text, lineEnding string) int {
	if strings.EqualFold(lineEnding, CRLF) || (lineEnding == "" && d.dominant() && d.Format.LineEnding != None) {
		return strings.Count(text, "\n")
	}
	return len(d.exceptions)
}

func invalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return i
			}
		}
	}
	return len(s)
}
