package textcodec

import (
	"bytes"
	"sort"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/transform"
)

// charsetKind says how a charset is converted: the Unicode encodings are
// converted here (they are simple and hot), the legacy ones by x/text.
type charsetKind int

const (
	kindUTF8 charsetKind = iota
	kindUTF16LE
	kindUTF16BE
	kindLegacy
)

// A charset is a resolved encoding.
type charset struct {
	name string
	kind charsetKind
	bom  []byte            // the byte order mark of this encoding, nil if none
	enc  encoding.Encoding // for kindLegacy
}

var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}

	csUTF8    = &charset{name: "utf-8", kind: kindUTF8, bom: bomUTF8}
	csUTF16LE = &charset{name: "utf-16le", kind: kindUTF16LE, bom: bomUTF16LE}
	csUTF16BE = &charset{name: "utf-16be", kind: kindUTF16BE, bom: bomUTF16BE}
	csLatin1  = &charset{name: "iso-8859-1", kind: kindLegacy, enc: charmap.ISO8859_1}
)

// latin1Names are the ISO-8859-1 aliases. The WHATWG index maps them to
// windows-1252, which a browser may do but an editor must not: a Latin-1
// file given "€" must be refused, not written with 0x80, which is a control
// character in Latin-1.
var latin1Names = map[string]bool{
	"iso-8859-1": true, "iso8859-1": true, "iso_8859-1": true, "iso88591": true,
	"latin1": true, "latin-1": true, "l1": true, "iso-ir-100": true, "cp819": true, "ibm819": true,
	"csisolatin1": true, "iso_8859-1:1987": true,
}

// lookup resolves an encoding name or alias. "" is UTF-8.
func lookup(name string) (*charset, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	switch {
	case key == "":
		return csUTF8, nil
	case latin1Names[key]:
		return csLatin1, nil
	}
	e, err := htmlindex.Get(key)
	if err != nil {
		return nil, &UnknownEncodingError{Name: name, Err: err}
	}
	canon, err := htmlindex.Name(e)
	if err != nil {
		return nil, &UnknownEncodingError{Name: name, Err: err}
	}
	switch canon {
	case "utf-8":
		return csUTF8, nil
	case "utf-16le":
		return csUTF16LE, nil
	case "utf-16be":
		return csUTF16BE, nil
	case "replacement":
		// Decodes every input to a single U+FFFD: not an encoding a file
		// can be edited in.
		return nil, &UnknownEncodingError{Name: name}
	}
	return &charset{name: canon, kind: kindLegacy, enc: e}, nil
}

// detect picks the charset for raw: a byte order mark first, then the
// named encoding, then UTF-8. It returns the length of the byte order mark.
func detect(raw []byte, name string) (*charset, int, error) {
	switch {
	case bytes.HasPrefix(raw, bomUTF8):
		return csUTF8, len(bomUTF8), nil
	case bytes.HasPrefix(raw, bomUTF16LE):
		return csUTF16LE, len(bomUTF16LE), nil
	case bytes.HasPrefix(raw, bomUTF16BE):
		return csUTF16BE, len(bomUTF16BE), nil
	}
	cs, err := lookup(name)
	if err != nil {
		return nil, 0, err
	}
	return cs, 0, nil
}

// decode converts b (without byte order mark) to UTF-8. The result may
// alias b for UTF-8.
func (cs *charset) decode(b []byte) ([]byte, error) {
	switch cs.kind {
	case kindUTF8:
		if bytes.IndexByte(b[:min(len(b), binaryScan)], 0) >= 0 {
			return nil, ErrBinary
		}
		if !utf8.Valid(b) {
			off := invalidUTF8Bytes(b)
			return nil, &EncodingError{Encoding: cs.name, Offset: off, Line: 1 + bytes.Count(b[:off], []byte{'\n'})}
		}
		return b, nil
	case kindUTF16LE, kindUTF16BE:
		return decodeUTF16(b, cs)
	}
	if bytes.IndexByte(b[:min(len(b), binaryScan)], 0) >= 0 {
		return nil, ErrBinary
	}
	u, _, err := transform.Bytes(cs.enc.NewDecoder(), b)
	if err != nil {
		return nil, &EncodingError{Encoding: cs.name, Err: err}
	}
	// Strictness: x/text decoders turn invalid bytes into U+FFFD. Encoding
	// back and comparing catches those, and any byte sequence that would
	// not be written back the same way.
	back, _, err := transform.Bytes(cs.enc.NewEncoder(), u)
	if err != nil || !bytes.Equal(back, b) {
		off := 0
		for off < len(b) && off < len(back) && b[off] == back[off] {
			off++
		}
		return nil, &EncodingError{Encoding: cs.name, Offset: off, Line: 1 + bytes.Count(b[:off], []byte{'\n'}), Err: err}
	}
	return u, nil
}

func decodeUTF16(b []byte, cs *charset) ([]byte, error) {
	unit := func(i int) rune {
		if cs.kind == kindUTF16LE {
			return rune(b[i]) | rune(b[i+1])<<8
		}
		return rune(b[i])<<8 | rune(b[i+1])
	}
	fail := func(off, line int) error {
		return &EncodingError{Encoding: cs.name, Offset: off, Line: line}
	}
	u := make([]byte, 0, len(b)/2+len(b)/8)
	line := 1
	for i := 0; i < len(b); {
		if i+1 >= len(b) {
			return nil, fail(i, line)
		}
		r := unit(i)
		n := 2
		switch {
		case r == 0 && i < binaryScan:
			return nil, ErrBinary
		case utf16.IsSurrogate(r):
			if r >= 0xDC00 || i+3 >= len(b) {
				return nil, fail(i, line)
			}
			r = utf16.DecodeRune(r, unit(i+2))
			if r == utf8.RuneError {
				return nil, fail(i, line)
			}
			n = 4
		case r == '\n':
			line++
		}
		u = utf8.AppendRune(u, r)
		i += n
	}
	return u, nil
}

// encode converts u (UTF-8 with the file's line endings) to the charset,
// after bom. text is the caller's text, to locate an unencodable character.
func (cs *charset) encode(bom, u []byte, text string) ([]byte, error) {
	switch cs.kind {
	case kindUTF8:
		return append(bom, u...), nil
	case kindUTF16LE, kindUTF16BE:
		out := make([]byte, 0, len(bom)+2*len(u))
		out = append(out, bom...)
		for _, r := range string(u) {
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				out = cs.appendUnit(out, r1)
				out = cs.appendUnit(out, r2)
				continue
			}
			out = cs.appendUnit(out, r)
		}
		return out, nil
	}
	enc, n, err := transform.Bytes(cs.enc.NewEncoder(), u)
	if err != nil {
		// u[n:] starts with the character that could not be encoded. Find
		// the same place in text: same line, same column (line endings
		// only differ at the end of a line).
		r, _ := utf8.DecodeRune(u[n:])
		line := 1 + bytes.Count(u[:n], []byte{'\n'})
		col := n - (bytes.LastIndexByte(u[:n], '\n') + 1)
		off := lineStart(text, line) + col
		return nil, &EncodingError{Encoding: cs.name, Offset: off, Line: line, Rune: r, Err: err}
	}
	if len(bom) == 0 {
		return enc, nil
	}
	return append(append(make([]byte, 0, len(bom)+len(enc)), bom...), enc...), nil
}

func (cs *charset) appendUnit(b []byte, r rune) []byte {
	if cs.kind == kindUTF16LE {
		return append(b, byte(r), byte(r>>8))
	}
	return append(b, byte(r>>8), byte(r))
}

// lineStart returns the byte offset of 1-based line n of s.
func lineStart(s string, n int) int {
	off := 0
	for ; n > 1; n-- {
		i := strings.IndexByte(s[off:], '\n')
		if i < 0 {
			return len(s)
		}
		off += i + 1
	}
	return off
}

// candidates are the legacy encodings tried when bytes are not UTF-8, in the
// order used to break ties in plausibility.
var candidates = []string{"windows-1252", "gb18030", "shift_jis", "euc-kr"}

// likelySample bounds how much of a file is decoded to guess its encoding.
const likelySample = 1 << 20

// likely returns the candidate encodings other than except in which b
// decodes cleanly and round-trips, most plausible first.
func likely(b []byte, except string) []string {
	sample := b
	truncated := false
	if len(sample) > likelySample {
		sample, truncated = sample[:likelySample], true
	}
	type scored struct {
		name  string
		score float64
		order int
	}
	var got []scored
	if except != "utf-8" && utf8.Valid(sample) {
		got = append(got, scored{"utf-8", 2, -1})
	}
	for i, name := range candidates {
		if name == except {
			continue
		}
		e, err := htmlindex.Get(name)
		if err != nil {
			continue
		}
		u, ok := roundTrips(e, sample, truncated)
		if !ok {
			continue
		}
		got = append(got, scored{name, plausibility(name, u), i})
	}
	sort.SliceStable(got, func(i, j int) bool { return got[i].score > got[j].score })
	var names []string
	for _, s := range got {
		names = append(names, s.name)
	}
	return names
}

// roundTrips decodes b with e and reports whether it decodes without
// replacement characters and encodes back to b. A truncated sample may end
// in the middle of a character; differences in its last 4 bytes are allowed.
func roundTrips(e encoding.Encoding, b []byte, truncated bool) (string, bool) {
	u, _, err := transform.Bytes(e.NewDecoder(), b)
	if err != nil {
		return "", false
	}
	back, _, err := transform.Bytes(e.NewEncoder(), u)
	if err == nil && bytes.Equal(back, b) {
		return string(u), true
	}
	if !truncated {
		return "", false
	}
	off := 0
	for off < len(b) && off < len(back) && b[off] == back[off] {
		off++
	}
	if off < len(b)-4 {
		return "", false
	}
	return string(u), true
}

// commonHan holds frequent Chinese characters: real Chinese text is full of
// them, Korean or Japanese bytes read as GB18030 give rarer ones.
const commonHan = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴"

// plausibility scores how much text decoded in the named encoding looks
// like text written in it: the share of its non-ASCII characters that
// belong to the scripts the encoding is used for.
func plausibility(name, s string) float64 {
	var nonASCII, good float64
	var prev rune
	runes := []rune(s)
	for i, r := range runes {
		if r < utf8.RuneSelf {
			prev = r
			continue
		}
		nonASCII++
		switch name {
		case "windows-1252":
			// Latin text has accented letters between ASCII letters;
			// CJK bytes read as Latin-1 give runs of them.
			var next rune
			if i+1 < len(runes) {
				next = runes[i+1]
			}
			if (r >= 0xA0 && r <= 0xFF || r >= 0x2010 && r <= 0x20AC) && (prev < utf8.RuneSelf || next < utf8.RuneSelf) {
				good++
			}
		case "gb18030":
			switch {
			case strings.ContainsRune(commonHan, r):
				good++
			case unicode.Is(unicode.Han, r) || r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF:
				good += 0.5
			}
		case "shift_jis":
			switch {
			case unicode.In(r, unicode.Hiragana, unicode.Katakana) || r >= 0x3000 && r <= 0x303F || r >= 0xFF00 && r <= 0xFFEF:
				good++
			case unicode.Is(unicode.Han, r):
				good += 0.5
			}
		case "euc-kr":
			if unicode.Is(unicode.Hangul, r) || r >= 0x3000 && r <= 0x303F {
				good++
			}
		}
		prev = r
	}
	if nonASCII == 0 {
		return 0
	}
	return good / nonASCII
}

// looksBinary reports whether the start of b is mostly control characters,
// which text in any encoding is not.
func looksBinary(b []byte) bool {
	b = b[:min(len(b), binaryScan)]
	ctl := 0
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v' && c != 0x1B {
			ctl++
		}
	}
	return len(b) > 0 && ctl*10 > len(b)
}

func invalidUTF8Bytes(b []byte) int {
	for off := 0; off < len(b); {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			return off
		}
		off += n
	}
	return len(b)
}
