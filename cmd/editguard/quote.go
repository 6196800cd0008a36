package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Names on a terminal.
//
// A file name, a session name or a command line comes from whoever made
// the file or ran the command, and printed raw it could act on the
// terminal (ESC ] 52 writes the clipboard, ESC [ moves the cursor or
// clears the screen), forge a line of editguard's output (a newline), shift
// a table's columns (a tab), or hide and reorder what is shown. So the
// command line prints every such string through quoteName, which leaves a
// name as it is unless it holds one of:
//
//   - a C0 control character (bytes 0x00-0x1f) or DEL (0x7f);
//   - a C1 control character (U+0080-U+009F, which some terminals take as
//     ESC sequences);
//   - a Unicode format or separator character (categories Cf, Zl, Zp:
//     bidirectional overrides, zero-width characters, the line and
//     paragraph separators), which reorder, hide or break the text around
//     it;
//   - a byte that is not part of valid UTF-8;
//   - a double quote or a backslash, so that a quoted name reads back one
//     way only.
//
// Such a name is printed in double quotes with C escapes, as git prints
// names with core.quotePath: \a \b \t \n \v \f \r \" \\, and every other
// byte of an escaped character in octal (ESC is \033, an invalid byte
// \351, U+202E is \342\200\256). Unlike git's default, printable non-ASCII
// text (é, 日本) stays as it is, so that names stay readable: only what
// can forge or mangle the output is escaped. Every escape stands for one
// byte, so a C or Go string literal reading (strconv.Unquote) gives back
// the exact bytes.
//
// Machines get the exact bytes instead: --json (as JSON escapes them) and
// -z (find, tree: NUL-terminated raw names).

// quoteName returns s as the command line prints a name or a command:
// as it is, or in double quotes with C escapes (see above).
func quoteName(s string) string {
	if !needsQuote(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, u := range escapeUnits(s, true) {
		b.WriteString(u)
	}
	b.WriteByte('"')
	return b.String()
}

// quoteNameCut is quoteName cut to at most n bytes of output, followed by
// "..." when cut: the cut falls between two characters or escapes, never
// inside one.
func quoteNameCut(s string, n int) string {
	if !needsQuote(s) {
		return cutUnits(s, runeUnits(s), n)
	}
	return cutUnits(quoteName(s), append([]string{`"`}, escapeUnits(s, true)...), n)
}

// escapeTextCut is escapeText cut as quoteNameCut cuts.
func escapeTextCut(s string, n int) string {
	if !needsEscape(s, false) {
		return cutUnits(s, runeUnits(s), n)
	}
	return cutUnits(escapeText(s), escapeUnits(s, false), n)
}

// cutUnits returns whole, the concatenation of units, if it is at most n
// bytes long, else the most units that fit in n bytes with "...".
func cutUnits(whole string, units []string, n int) string {
	if len(whole) <= n {
		return whole
	}
	var b strings.Builder
	for _, u := range units {
		if b.Len()+len(u) > n-3 {
			break
		}
		b.WriteString(u)
	}
	return b.String() + "..."
}

// runeUnits splits s into its characters.
func runeUnits(s string) []string {
	var units []string
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		units = append(units, s[i:i+size])
		i += size
	}
	return units
}

// escapeText returns a sentence that names things (an error message, a
// warning) with each character quoteName would escape written as its
// escape, but without quotes and leaving '"' and '\' alone: the sentence
// stays as it reads and can no longer act on the terminal.
func escapeText(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return strings.Join(escapeUnits(s, false), "")
}

// escapeLines is escapeText for text of several lines: each line is
// escaped, the newlines between them kept.
func escapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeText(l)
	}
	return strings.Join(lines, "\n")
}

// needsQuote reports whether quoteName quotes s.
func needsQuote(s string) bool { return needsEscape(s, true) }

// needsEscape reports whether s holds a character to escape; quotes
// counts '"' and '\' among them.
func needsEscape(s string, quotes bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || quotes && (c == '"' || c == '\\') {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports whether the non-ASCII character r is escaped.
func unsafeRune(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// escapeUnits returns s as a list of pieces, each a character as it is or
// the escape of one character (or of one invalid byte); quotes escapes '"'
// and '\' too.
func escapeUnits(s string, quotes bool) []string {
	var units []string
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case quotes && (c == '"' || c == '\\'):
				units = append(units, `\`+string(c))
			case c < 0x20 || c == 0x7f:
				units = append(units, escapeByte(c))
			default:
				units = append(units, string(c))
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || unsafeRune(r) {
			var b strings.Builder
			for _, c := range []byte(s[i : i+size]) {
				b.WriteString(escapeByte(c))
			}
			units = append(units, b.String())
		} else {
			units = append(units, s[i:i+size])
		}
		i += size
	}
	return units
}

// escapeByte returns the C escape of the byte c: \n and its kind for the
// control characters C names, else three octal digits.
func escapeByte(c byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\v':
		return `\v`
	case '\f':
		return `\f`
	case '\r':
		return `\r`
	}
	o := strconv.FormatUint(uint64(c), 8)
	return `\` + strings.Repeat("0", 3-len(o)) + o
}
