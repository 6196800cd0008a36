package textedit

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// A numbering style is the separator after a line number in a numbered
// view: a TAB (cat -n and Numbered), an arrow, or a colon.
var numberSeps = []string{"\t", "→", ": ", ":"}

// stripLineNumbers removes line-number prefixes from every line of s. It
// reports false unless every line (a final empty line aside) has a prefix
// in one style; with consecutive, the numbers must also count up by one,
// which a real text almost never does by accident.
func stripLineNumbers(s string, consecutive bool) (string, bool) {
	lines := strings.Split(s, "\n")
	last := len(lines)
	if last > 1 && lines[last-1] == "" {
		last--
	}
	for _, sep := range numberSeps {
		var b strings.Builder
		prev, ok := -1, true
		for i, l := range lines[:last] {
			n, rest, found := cutNumber(l, sep)
			if !found || consecutive && prev >= 0 && n != prev+1 {
				ok = false
				break
			}
			prev = n
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(rest)
		}
		if !ok {
			continue
		}
		if last < len(lines) {
			b.WriteByte('\n')
		}
		return b.String(), true
	}
	return "", false
}

// cutNumber parses "  12<sep>rest". A line that is only "  12" (a numbered
// empty line whose trailing separator was lost) counts too for TAB style.
func cutNumber(l, sep string) (n int, rest string, ok bool) {
	t := strings.TrimLeft(l, " ")
	d := 0
	for d < len(t) && d < 9 && t[d] >= '0' && t[d] <= '9' {
		n = n*10 + int(t[d]-'0')
		d++
	}
	if d == 0 {
		return 0, "", false
	}
	if d == len(t) && sep == "\t" {
		return n, "", true
	}
	rest, ok = strings.CutPrefix(t[d:], sep)
	return n, rest, ok
}

// quoteClass maps curly and prime quotes to their straight equivalent.
func quoteClass(r rune) rune {
	switch r {
	case '‘', '’', '‚', '‛', '′':
		return '\''
	case '“', '”', '„', '‟', '″':
		return '"'
	}
	return r
}

const curlyQuotes = "‘’‚‛′“”„‟″"

// normalizeQuotes returns s with curly quotes made straight, and the
// offsets in the result where a (3-byte) curly quote was replaced by one
// byte. Every curly quote in curlyQuotes is 3 bytes in UTF-8.
func normalizeQuotes(s string) (string, []int) {
	if !strings.ContainsAny(s, curlyQuotes) {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	var shrunk []int
	for len(s) > 0 {
		i := strings.IndexAny(s, curlyQuotes)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		r, n := utf8.DecodeRuneInString(s[i:])
		shrunk = append(shrunk, b.Len())
		b.WriteRune(quoteClass(r))
		s = s[i+n:]
	}
	return b.String(), shrunk
}

// origOffset maps an offset in a normalized string back to the original.
func origOffset(shrunk []int, n int) int {
	return n + 2*sort.SearchInts(shrunk, n)
}

// replaceQuotes replaces e.Old in text, treating curly and straight quotes
// as equal. It returns n == 0 and no error if nothing matches or if quote
// normalisation changes nothing (then exact matching already decided).
func replaceQuotes(text string, i int, e Edit) (string, int, error) {
	normOld, oldShrunk := normalizeQuotes(e.Old)
	if !strings.ContainsAny(normOld, `'"`) {
		return "", 0, nil
	}
	normText, shrunk := normalizeQuotes(text)
	if shrunk == nil && oldShrunk == nil {
		return "", 0, nil
	}
	var starts []int
	for pos := 0; ; {
		j := strings.Index(normText[pos:], normOld)
		if j < 0 {
			break
		}
		starts = append(starts, pos+j)
		pos += j + len(normOld)
	}
	switch {
	case len(starts) == 0:
		return "", 0, nil
	case len(starts) > 1 && !e.ReplaceAll:
		return "", 0, &AmbiguousError{Index: i, Count: len(starts), Lines: matchLines(normText, normOld)}
	}
	var b strings.Builder
	b.Grow(max(0, len(text)+len(starts)*(len(e.New)-len(e.Old))))
	prev := 0
	for _, s := range starts {
		os, oe := origOffset(shrunk, s), origOffset(shrunk, s+len(normOld))
		b.WriteString(text[prev:os])
		b.WriteString(keepQuoteStyle(e.Old, text[os:oe], e.New))
		prev = oe
	}
	b.WriteString(text[prev:])
	return b.String(), len(starts), nil
}

// keepQuoteStyle returns repl with its quotes replaced by the file's own
// where they line up with old's: region is the file's text that old
// matched, character for character. Quotes line up in the common prefix and
// suffix of old and repl, and in between when both have the same sequence
// of quote kinds. Other quotes are written as given.
func keepQuoteStyle(old, region, repl string) string {
	o, r, n := []rune(old), []rune(region), []rune(repl)
	if len(o) != len(r) {
		return repl // cannot happen: normalisation maps rune to rune
	}
	out := append([]rune(nil), n...)
	isQuote := func(c rune) bool { return quoteClass(c) == '\'' || quoteClass(c) == '"' }
	p := 0
	for p < len(o) && p < len(n) && quoteClass(o[p]) == quoteClass(n[p]) {
		if isQuote(n[p]) {
			out[p] = r[p]
		}
		p++
	}
	s := 0
	for s < len(o)-p && s < len(n)-p && quoteClass(o[len(o)-1-s]) == quoteClass(n[len(n)-1-s]) {
		if isQuote(n[len(n)-1-s]) {
			out[len(n)-1-s] = r[len(r)-1-s]
		}
		s++
	}
	var oq, nq []int
	for k := p; k < len(o)-s; k++ {
		if isQuote(o[k]) {
			oq = append(oq, k)
		}
	}
	for k := p; k < len(n)-s; k++ {
		if isQuote(n[k]) {
			nq = append(nq, k)
		}
	}
	if len(oq) == len(nq) {
		same := true
		for k := range oq {
			if quoteClass(o[oq[k]]) != quoteClass(n[nq[k]]) {
				same = false
				break
			}
		}
		if same {
			for k := range oq {
				out[nq[k]] = r[oq[k]]
			}
		}
	}
	return string(out)
}
