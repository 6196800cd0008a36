// Package textedit applies exact string replacements to text. It is pure: it
// never touches the disk. Replacement text is literal: "$1", "$&" and "\1"
// are plain characters.
package textedit

import (
	"fmt"
	"strings"
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
	// MatchedWith names, per edit, how Old was found: "exact" or a
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
	Closest []Line // the lines most like Old's first line
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("edit %d: old_string not found", e.Index)
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
		n := strings.Count(res.Text, e.Old)
		switch {
		case n == 0:
			return nil, &NoMatchError{Index: i, Closest: closest(res.Text, e.Old)}
		case n > 1 && !e.ReplaceAll:
			return nil, &AmbiguousError{Index: i, Count: n, Lines: matchLines(res.Text, e.Old)}
		}
		res.Text = strings.ReplaceAll(res.Text, e.Old, e.New)
		res.Replacements += n
		res.MatchedWith = append(res.MatchedWith, "exact")
	}
	if res.Text == text {
		return nil, &NoChangeError{Index: len(edits) - 1}
	}
	return res, nil
}

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

// closest returns up to three lines of text that contain the first
// non-blank line of old, trimmed.
func closest(text, old string) []Line {
	var want string
	for _, l := range strings.Split(old, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			want = t
			break
		}
	}
	var out []Line
	if want == "" {
		return nil
	}
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(strings.TrimSpace(l), want) || strings.Contains(want, strings.TrimSpace(l)) && strings.TrimSpace(l) != "" {
			out = append(out, Line{Number: i + 1, Text: l})
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}
