package textcodec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// roundTripEncodings are the encoding arguments FuzzRoundTrip decodes with.
var roundTripEncodings = []string{"", "utf-8", "utf-16le", "utf-16be", "gbk", "gb18030", "shift_jis", "euc-kr", "windows-1252", "iso-8859-1"}

// FuzzRoundTrip checks that decoding and encoding an unchanged file gives
// back its exact bytes, in every encoding and line ending mix, and that
// Decode fails only in the documented ways.
func FuzzRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, enc int) {
		name := roundTripEncodings[uint(enc)%uint(len(roundTripEncodings))]
		d, err := Decode(raw, name)
		if err != nil {
			var ee *EncodingError
			if !errors.Is(err, ErrBinary) && !errors.As(err, &ee) {
				t.Fatalf("Decode(%q, %q) error = %v, want ErrBinary or *EncodingError", raw, name, err)
			}
			return
		}
		if !utf8.ValidString(d.Text) {
			t.Fatalf("Decode(%q, %q).Text = %q, not valid UTF-8", raw, name, d.Text)
		}
		got, err := d.Encode(d.Text, "")
		if err != nil {
			t.Fatalf("Encode() of unchanged text error = %v", err)
		}
		if !bytes.Equal(got, raw) {
			t.Fatalf("Encode(Decode(%q, %q)) = %q, want the input", raw, name, got)
		}
	})
}

// editEncodings are the encodings FuzzEdit uses; for each, textOffset can
// map a text offset to a byte offset independently of the codec.
var editEncodings = []string{"", "utf-16le", "utf-16be", "windows-1252"}

// FuzzEdit replaces a span of a decoded file and checks that the encoded
// result keeps the original bytes before and after the changed region, and
// that it decodes to the edited text.
//
// The changed region is the edit's span joined with the span where old and
// new text differ (common suffix first, then common prefix): when an edit
// inserts text next to an identical copy of itself, which copy is "new" is
// undecidable, and the codec is free to choose.
func FuzzEdit(f *testing.F) {
	f.Fuzz(func(t *testing.T, raw []byte, enc int, at, del int, repl string) {
		name := editEncodings[uint(enc)%uint(len(editEncodings))]
		d, err := Decode(raw, name)
		if err != nil || !utf8.ValidString(repl) {
			return
		}
		text := d.Text
		a := runeStart(text, int(uint(at)%uint(len(text)+1)))
		b := runeStart(text, a+int(uint(del)%uint(len(text)-a+1)))
		next := text[:a] + repl + text[b:]
		if next == text {
			return
		}
		got, err := d.Encode(next, "")
		if err != nil {
			var ee *EncodingError
			if errors.As(err, &ee) && ee.Rune != 0 {
				return // repl has a character the encoding lacks
			}
			t.Fatalf("Encode() error = %v", err)
		}
		s := commonSuffixRef(text, next)
		p := commonPrefixRef(text[:len(text)-s], next[:len(next)-s])
		// Byte-wise common ends may split a character; widen to whole ones.
		lo, hi := runeStart(text, min(a, p)), max(b, len(text)-s)
		for hi < len(text) && !utf8.RuneStart(text[hi]) {
			hi++
		}
		rlo, rhi := rawOffset(t, d, raw, lo), rawOffset(t, d, raw, hi)
		if !bytes.HasPrefix(got, raw[:rlo]) {
			t.Fatalf("Encode() = %q, want prefix %q (edit [%d,%d) of %q by %q)", got, raw[:rlo], a, b, text, repl)
		}
		if !bytes.HasSuffix(got, raw[rhi:]) {
			t.Fatalf("Encode() = %q, want suffix %q (edit [%d,%d) of %q by %q)", got, raw[rhi:], a, b, text, repl)
		}
		if strings.Contains(next, "\r\n") || strings.ContainsRune(next, 0) {
			// A "\r\n" in new text is written as one line break, and a
			// lone CR followed by a new LF reads back as CRLF; a NUL
			// reads back as binary.
			return
		}
		d2, err := Decode(got, d.Format.Encoding)
		if err != nil {
			t.Fatalf("Decode(Encode()) error = %v", err)
		}
		if d2.Text != next {
			t.Fatalf("Decode(Encode(%q)).Text = %q", next, d2.Text)
		}
	})
}

func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func commonPrefixRef(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func commonSuffixRef(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// rawOffset maps an offset in d.Text to the offset in raw, walking both:
// a "\n" of the text is "\n" or "\r\n" in raw, any other character is one
// character of raw's encoding.
func rawOffset(t *testing.T, d *Doc, raw []byte, off int) int {
	t.Helper()
	unit, width := 1, utf8.RuneLen
	at := func(i int) rune { return rune(raw[i]) }
	switch d.Format.Encoding {
	case "utf-16le":
		unit, width = 2, widthUTF16
		at = func(i int) rune { return rune(raw[i]) | rune(raw[i+1])<<8 }
	case "utf-16be":
		unit, width = 2, widthUTF16
		at = func(i int) rune { return rune(raw[i])<<8 | rune(raw[i+1]) }
	case "windows-1252":
		width = func(rune) int { return 1 }
	}
	r := 0
	if d.Format.BOM {
		r = unit
		if d.Format.Encoding == "utf-8" {
			r = 3
		}
	}
	for _, c := range d.Text[:off] {
		if c == '\n' && r+unit < len(raw) && at(r) == '\r' {
			r += unit
		}
		r += width(c)
	}
	if r > len(raw) {
		t.Fatalf("rawOffset(%d) = %d beyond %d bytes", off, r, len(raw))
	}
	return r
}

func widthUTF16(r rune) int {
	if r >= 0x10000 {
		return 4
	}
	return 2
}

// encodeLineEndings are the line_ending values FuzzEncodesAsIs tries.
var encodeLineEndings = []string{"", LF, CRLF, "LF", "bogus"}

// FuzzEncodesAsIs checks that a text EncodesAsIs accepts is exactly what
// Encode writes, and that DecodeOwned reads what Decode reads.
func FuzzEncodesAsIs(f *testing.F) {
	f.Add([]byte("a\nb\n"), 0, 0, "c\nd\n")
	f.Add([]byte("a\r\nb\r\n"), 0, 0, "c\nd\n")
	f.Add([]byte("a\r\nb\n"), 0, 1, "c\nd")
	f.Add([]byte("\xef\xbb\xbfa\n"), 0, 0, "a\n")
	f.Add([]byte("no break"), 0, 2, "x")
	f.Add([]byte("a\nb"), 2, 0, "é\n")
	f.Fuzz(func(t *testing.T, raw []byte, enc, le int, text string) {
		name := roundTripEncodings[uint(enc)%uint(len(roundTripEncodings))]
		lineEnding := encodeLineEndings[uint(le)%uint(len(encodeLineEndings))]
		d, err := Decode(raw, name)
		owned, oerr := DecodeOwned(bytes.Clone(raw), name)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("Decode error %v, DecodeOwned error %v", err, oerr)
		}
		if err != nil {
			return
		}
		if owned.Text != d.Text || owned.Format != d.Format {
			t.Fatalf("DecodeOwned(%q) = %q %+v, Decode = %q %+v", raw, owned.Text, owned.Format, d.Text, d.Format)
		}
		if !d.EncodesAsIs(text, lineEnding) {
			return
		}
		got, err := d.Encode(text, lineEnding)
		if err != nil {
			t.Fatalf("EncodesAsIs(%q, %q) over %q, but Encode fails: %v", text, lineEnding, raw, err)
		}
		if string(got) != text {
			t.Fatalf("EncodesAsIs(%q, %q) over %q, but Encode = %q", text, lineEnding, raw, got)
		}
	})
}
