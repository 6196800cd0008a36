package textedit

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxLineLength is the number of characters after which Numbered and
// Closest cut a line.
const MaxLineLength = 2000

// Numbered returns lines of text numbered the way cat -n does
// ("%6d\t%s\n"), which is the form whose prefixes Apply knows to strip.
//
// offset is the 1-based number of the first line to show (0 or 1: from the
// start); limit is the most lines to show (0 or less: all). A line longer
// than MaxLineLength characters is cut and ends with a marker saying how
// many characters were left out. totalLines counts the lines of the whole
// text (a final line without a newline counts; an empty text has none).
// truncated reports whether the view leaves anything out: lines before
// offset or past limit, or characters of a long line.
//
// Memory is proportional to the view, not to text: lines are not copied
// except into the result.
func Numbered(text string, offset, limit int) (view string, totalLines int, truncated bool) {
	totalLines = strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		totalLines++
	}
	offset = max(offset, 1)
	if limit <= 0 {
		limit = totalLines
	}
	truncated = offset > 1 && totalLines > 0 || offset-1+limit < totalLines
	rest := text
	for skip := offset - 1; skip > 0 && rest != ""; skip-- {
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			rest = ""
			break
		}
		rest = rest[i+1:]
	}
	var b strings.Builder
	var num [20]byte
	for n := offset; n < offset+limit && rest != ""; n++ {
		l := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		s := strconv.AppendInt(num[:0], int64(n), 10)
		for pad := len(s); pad < 6; pad++ {
			b.WriteByte(' ')
		}
		b.Write(s)
		b.WriteByte('\t')
		cut := cutLine(l)
		truncated = truncated || len(cut) != len(l)
		b.WriteString(cut)
		b.WriteByte('\n')
	}
	return b.String(), totalLines, truncated
}

// cutLine shortens a line longer than MaxLineLength characters, ending it
// with a marker that says how many characters were cut.
func cutLine(l string) string {
	if len(l) <= MaxLineLength {
		return l // fewer bytes than the limit: fewer characters too
	}
	n := 0
	for i := range l {
		if n == MaxLineLength {
			more := utf8.RuneCountInString(l[i:])
			return l[:i] + " [... " + strconv.Itoa(more) + " more characters]"
		}
		n++
	}
	return l
}
