package textcodec

import (
	"bytes"
	"sort"
	"strings"
	"unsafe"

	"github.com/editguard/editguard/internal/udiff"
)

// splitLines turns decoded UTF-8 into the text the agent sees: every "\r\n"
// becomes "\n"; a lone "\r" stays in its line as an ordinary character. It
// returns the file's line ending style, the style new lines take, and the
// indexes of the line breaks whose style is not that one.
//
// A uniform file is converted in one pass with no per-line bookkeeping; only
// a file that mixes styles records its minority breaks. With share set, u
// never changes afterwards, and text shares its memory where it can.
func splitLines(u []byte, share bool) (text, style string, dominantCRLF bool, exceptions []int) {
	nl := bytes.Count(u, []byte{'\n'})
	crlf := bytes.Count(u, []byte("\r\n"))
	lf := nl - crlf
	asIs := func() string {
		if share && len(u) > 0 {
			return unsafe.String(&u[0], len(u))
		}
		return string(u)
	}
	switch {
	case nl == 0:
		return asIs(), None, false, nil
	case crlf == 0:
		return asIs(), LF, false, nil
	case lf == 0:
		style, dominantCRLF = CRLF, true
	default:
		style = Mixed
		if crlf != lf {
			dominantCRLF = crlf > lf
		} else {
			// A tie goes to the style of the file's first line break.
			i := bytes.IndexByte(u, '\n')
			dominantCRLF = i > 0 && u[i-1] == '\r'
		}
	}
	var b strings.Builder
	b.Grow(len(u) - crlf)
	for idx := 0; ; idx++ {
		i := bytes.IndexByte(u, '\n')
		if i < 0 {
			b.Write(u)
			break
		}
		isCRLF := i > 0 && u[i-1] == '\r'
		if isCRLF {
			b.Write(u[:i-1])
		} else {
			b.Write(u[:i])
		}
		b.WriteByte('\n')
		if isCRLF != dominantCRLF {
			exceptions = append(exceptions, idx)
		}
		u = u[i+1:]
	}
	return b.String(), style, dominantCRLF, exceptions
}

// dominant reports whether new line breaks are CRLF.
func (d *Doc) dominant() bool {
	if d.decoded {
		return d.dominantCRLF
	}
	return d.Format.LineEnding == CRLF
}

// appendLines appends text to dst with line breaks in the file's style (see
// Encode), still in UTF-8.
func (d *Doc) appendLines(dst []byte, text, lineEnding string) ([]byte, error) {
	switch {
	case lineEnding == "":
	case strings.EqualFold(lineEnding, LF):
		return appendUniform(dst, text, false), nil
	case strings.EqualFold(lineEnding, CRLF):
		return appendUniform(dst, text, true), nil
	default:
		return nil, &UnknownLineEndingError{Value: lineEnding}
	}
	if d.Format.LineEnding == None {
		// Nothing to preserve and no style to follow: the text's own
		// line breaks are written as they are.
		return append(dst, text...), nil
	}
	if len(d.exceptions) == 0 && !strings.Contains(text, "\r\n") {
		// A uniform file and a text without "\r\n": every line break,
		// old or new, takes the one style. No diff is needed.
		return appendUniform(dst, text, d.dominant()), nil
	}
	return d.appendDiffed(dst, text), nil
}

// appendUniform appends text with every line break ("\n" or "\r\n") in one
// style.
func appendUniform(dst []byte, text string, crlf bool) []byte {
	if !crlf && !strings.Contains(text, "\r\n") {
		return append(dst, text...)
	}
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			return append(dst, text...)
		}
		dst = append(dst, strings.TrimSuffix(text[:i], "\r")...)
		dst = appendBreak(dst, crlf)
		text = text[i+1:]
	}
}

func appendBreak(dst []byte, crlf bool) []byte {
	if crlf {
		return append(dst, '\r', '\n')
	}
	return append(dst, '\n')
}

// appendDiffed appends text, giving each line break that text shares with
// the decoded text the ending it had in the file, and every other line break
// the dominant style.
//
// The common suffix and then the common prefix of the old and new text are
// written with their original bytes, so an edit never changes bytes outside
// the span it replaced. Looking for the suffix first places an ambiguous
// insertion or deletion the way edits usually make them: "b" replaced by
// "b\nc" inserts "\nc" before b's line break, so the break after c is b's
// original one. Between prefix and suffix, whole lines are matched with a
// patience diff and a matched line keeps its ending; a "\r\n" in an
// unmatched (new) line counts as one line break.
func (d *Doc) appendDiffed(dst []byte, text string) []byte {
	old := d.orig
	if !d.decoded {
		old = ""
	}
	dom := d.dominant()
	s := udiff.CommonSuffix(old, text)
	p := udiff.CommonPrefix(old[:len(old)-s], text[:len(text)-s])
	oEnd, nEnd := len(old)-s, len(text)-s
	dst = d.appendOld(dst, old[:p], 0)

	// Lines touching the changed span, whole, for the line diff.
	start := strings.LastIndexByte(old[:p], '\n') + 1
	k := strings.Count(old[:p], "\n") // index of the first break at or after start
	oLines := segments(old[start:lineEnd(old, oEnd)])
	nLines := segments(text[start:lineEnd(text, nEnd)])
	match := matchSegments(oLines, nLines)

	mid := text[p:nEnd]
	if strings.HasSuffix(mid, "\r") && s > 0 && text[nEnd] == '\n' {
		// A "\r\n" whose "\n" is an original break: the "\r" is new
		// (the old text had none there, or it would be in the suffix).
		mid = mid[:len(mid)-1]
	}
	for j := 0; ; j++ {
		i := strings.IndexByte(mid, '\n')
		if i < 0 {
			dst = append(dst, mid...)
			break
		}
		if m := match[j]; m >= 0 {
			dst = append(dst, mid[:i]...)
			dst = appendBreak(dst, d.crlfAt(k+m))
		} else {
			dst = append(dst, strings.TrimSuffix(mid[:i], "\r")...)
			dst = appendBreak(dst, dom)
		}
		mid = mid[i+1:]
	}
	return d.appendOld(dst, old[oEnd:], strings.Count(old[:oEnd], "\n"))
}

// lineEnd returns the offset just after the line break at or after i, or
// len(s).
func lineEnd(s string, i int) int {
	j := strings.IndexByte(s[i:], '\n')
	if j < 0 {
		return len(s)
	}
	return i + j + 1
}

// appendOld appends a piece of the decoded text whose first line break is
// break number idx, with every break in its original style.
func (d *Doc) appendOld(dst []byte, s string, idx int) []byte {
	dom := d.dominant()
	exc := d.exceptions
	e := sort.SearchInts(exc, idx)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(dst, s...)
		}
		crlf := dom
		if e < len(exc) && exc[e] == idx {
			crlf = !dom
			e++
		}
		dst = append(dst, s[:i]...)
		dst = appendBreak(dst, crlf)
		s = s[i+1:]
		idx++
	}
}

// crlfAt reports whether line break number idx of the decoded text was CRLF.
func (d *Doc) crlfAt(idx int) bool {
	i := sort.SearchInts(d.exceptions, idx)
	return d.dominant() != (i < len(d.exceptions) && d.exceptions[i] == idx)
}

// segments splits s after each "\n". The last segment has no "\n" if s
// does not end with one.
func segments(s string) []string {
	if s == "" {
		return nil
	}
	seg := strings.SplitAfter(s, "\n")
	if seg[len(seg)-1] == "" {
		seg = seg[:len(seg)-1]
	}
	return seg
}
