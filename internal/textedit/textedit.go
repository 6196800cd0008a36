// Package textedit applies exact string replacements to text. It is pure: it
// never touches the disk. Replacement text is literal: "$1", "$&" and "\1"
// are plain characters.
//
// Matching is exact first. Only when an edit's Old does not occur at all are
// two forgiving rules tried, in order, and the one that was needed is
// reported in Result.MatchedWith:
//
//   - "line_numbers_stripped": Old was copied from a numbered view
//     ("    12\tcode", "12→code" or "12: code"); the numbers are removed
//     from Old, and from New if it has them too.
//   - "quotes_normalized": curly and straight quotes are treated as equal;
//     where New's quotes line up with Old's, the file's own quote
//     characters are written.
//
// Uniqueness is decided after the rule is applied. When nothing matches,
// NoMatchError lists the lines of the text most like Old.
package textedit

import (
	"fmt"
	"strings"
)

// Values of Result.MatchedWith.
const (
	MatchExact          = "exact"
	MatchLineNumbers    = "line_numbers_stripped"
	MatchQuotes         = "quotes_normalized"
	MatchLineNumsQuotes = "line_numbers_stripped+quotes_normalized"
)

// Edit replaces Old with New. Old must occur exactly once unless ReplaceAll.
type Edit struct {
	Old        string
	New        string
	ReplaceAll bool
}

// Result is the outcome of Apply.
type Result struct {
	Text         string
	Replacements int
	// MatchedWith names, per edit, how Old was found: MatchExact or the
	// forgiving rule that was needed.
	MatchedWith []string
}

// Line is a numbered line of the text (1-based).
type Line struct {
	Number int
	Text   string
}

// NoMatchError reports an edit whose Old does not occur.
type NoMatchError struct {
	Index   int    // which edit, 0-based
	Closest []Line // up to three lines most like Old, best first
}

func (e *NoMatchError) Error() string {
	if len(e.Closest) == 0 {
		return fmt.Sprintf("edit %d: old_string not found", e.Index)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "edit %d: old_string not found; closest lines:", e.Index)
	for _, l := range e.Closest {
		fmt.Fprintf(&b, " %d: %q", l.Number, l.Text)
	}
	return b.String()
}

// AmbiguousError reports an edit whose Old occurs more than once.
type AmbiguousError struct {
	Index int
	Count int
	Lines []int // 1-based line numbers where each match starts
}

func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("edit %d: old_string found %d times (lines %v)", e.Index, e.Count, e.Lines)
}

// NoChangeError reports an edit whose Old equals New, or edits that leave
// the text as it was.
type NoChangeError struct {
	Index int
}

func (e *NoChangeError) Error() string {
	return fmt.Sprintf("edit %d: old_string and new_string are identical", e.Index)
}

// EmptyOldError reports an edit with an empty Old.
type EmptyOldError struct{ Index int }

func (e *EmptyOldError) Error() string {
	return fmt.Sprintf("edit %d: old_string is empty", e.Index)
}

// Apply applies edits in order, each to the result of the previous. It is
// all-or-nothing: on error the text is not changed.
func Apply(text string, edits []Edit) (*Result, error) {
	res := &Result{Text: text}
	for i, e := range edits {
		if e.Old == "" {
			return nil, &EmptyOldError{Index: i}
		}
		if e.Old == e.New {
			return nil, &NoChangeError{Index: i}
		}
		out, n, how, err := applyOne(res.Text, i, e)
		if err != nil {
			return nil, err
		}
		res.Text = out
		res.Replacements += n
		res.MatchedWith = append(res.MatchedWith, how)
	}
	if res.Text == text {
		return nil, &NoChangeError{Index: len(edits) - 1}
	}
	return res, nil
}

// applyOne applies edit i: exact, then with line numbers stripped, then
// quote-insensitive (on Old as given, then on Old with numbers stripped).
func applyOne(text string, i int, e Edit) (string, int, string, error) {
	if out, n, err := replaceExact(text, i, e); n > 0 || err != nil {
		return out, n, MatchExact, err
	}
	stripped, strippedOK := stripLineNumbers(e.Old, true)
	se := e
	if strippedOK {
		se.Old = stripped
		if s, ok := stripLineNumbers(e.New, false); ok {
			se.New = s
		}
		if se.Old == "" {
			return "", 0, "", &EmptyOldError{Index: i}
		}
		if se.Old == se.New {
			return "", 0, "", &NoChangeError{Index: i}
		}
		if out, n, err := replaceExact(text, i, se); n > 0 || err != nil {
			return out, n, MatchLineNumbers, err
		}
	}
	if out, n, err := replaceQuotes(text, i, e); n > 0 || err != nil {
		return out, n, MatchQuotes, err
	}
	if strippedOK {
		if out, n, err := replaceQuotes(text, i, se); n > 0 || err != nil {
			return out, n, MatchLineNumsQuotes, err
		}
	}
	return "", 0, "", &NoMatchError{Index: i, Closest: Closest(text, e.Old, 3)}
}

// replaceExact replaces e.Old in text. It returns n == 0 and no error if Old
// does not occur.
func replaceExact(text string, i int, e Edit) (string, int, error) {
	first := strings.Index(text, e.Old)
	if first < 0 {
		return "", 0, nil
	}
	if !e.ReplaceAll {
		if strings.Contains(text[first+len(e.Old):], e.Old) {
			n := strings.Count(text, e.Old)
			return "", 0, &AmbiguousError{Index: i, Count: n, Lines: matchLines(text, e.Old)}
		}
		return text[:first] + e.New + text[first+len(e.Old):], 1, nil
	}
	n := strings.Count(text, e.Old)
	return strings.ReplaceAll(text, e.Old, e.New), n, nil
}

// matchLines returns the 1-based line of each non-overlapping occurrence of
// old in text.
func matchLines(text, old string) []int {
	var lines []int
	line, pos := 1, 0
	for {
		i := strings.Index(text[pos:], old)
		if i < 0 {
			return lines
		}
		line += strings.Count(text[pos:pos+i], "\n")
		lines = append(lines, line)
		line += strings.Count(old, "\n")
		pos += i + len(old)
	}
}
