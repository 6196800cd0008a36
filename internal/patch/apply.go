package patch

import (
	"fmt"
	"slices"
	"strings"
)

// Match strategies, reported per hunk, in the order they are tried.
const (
	Exact              = "exact"
	TrailingWhitespace = "trailing_whitespace" // lines compared without trailing spaces and tabs
	Quotes             = "quotes"              // curly quotes compared as straight ones
	LineNumbers        = "line_numbers"        // a "  12\t" prefix copied from a numbered read, dropped
)

// NoMatchError reports a hunk whose old lines are nowhere in the file.
type NoMatchError struct {
	Hunk int    // 0-based
	Old  string // the lines looked for
	// Anchor is the anchor line that was not found, if that was the failure.
	Anchor string
}

func (e *NoMatchError) Error() string {
	if e.Anchor != "" {
		return fmt.Sprintf("hunk %d: anchor line %q not found", e.Hunk+1, e.Anchor)
	}
	return fmt.Sprintf("hunk %d: its context and removed lines are not in the file", e.Hunk+1)
}

// AmbiguousError reports a hunk (or its anchor) that matches several
// places.
type AmbiguousError struct {
	Hunk   int
	Lines  []int  // 1-based first lines of the candidates
	Anchor string // the anchor that matched several lines, if that was the failure
}

func (e *AmbiguousError) Error() string {
	switch {
	case e.Anchor != "":
		return fmt.Sprintf("hunk %d: anchor line %q occurs %d times (lines %v); use a more specific anchor", e.Hunk+1, e.Anchor, len(e.Lines), e.Lines)
	case len(e.Lines) == 0:
		return fmt.Sprintf("hunk %d only adds lines and has no context, anchor or End of File to say where", e.Hunk+1)
	}
	return fmt.Sprintf("hunk %d matches %d places (lines %v); add context lines or an @@ anchor to pick one", e.Hunk+1, len(e.Lines), e.Lines)
}

// OverlapError reports two hunks of one file that change the same lines.
type OverlapError struct {
	First, Second int // 0-based hunk indexes
	Line          int // 1-based
}

func (e *OverlapError) Error() string {
	return fmt.Sprintf("hunks %d and %d overlap at line %d; merge them into one", e.First+1, e.Second+1, e.Line)
}

// Result is a patched text.
type Result struct {
	Text string
	// Matched names the strategy that placed each hunk (see Exact).
	Matched []string
	// Lines is the 1-based first line of each hunk's match in the old text.
	Lines []int
}

type placed struct {
	hunk, at, n int // hunk index, first line (0-based) and number of old lines
	strategy    string
}

// Apply applies hunks to text (LF line endings). Every hunk must match
// exactly one place, in the order of the strategies; none may overlap
// another; otherwise the text is returned unchanged with the error.
func Apply(text string, hunks []Hunk) (*Result, error) {
	finalNL := text == "" || strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if text == "" {
		lines = nil
	}
	var ps []placed
	for i := range hunks {
		p, err := locate(lines, &hunks[i], i)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	order := slices.Clone(ps)
	slices.SortStableFunc(order, func(a, b placed) int { return a.at - b.at })
	for k := 1; k < len(order); k++ {
		prev, cur := order[k-1], order[k]
		if cur.at < prev.at+prev.n || cur.at == prev.at && prev.n == 0 && cur.n == 0 {
			return nil, &OverlapError{First: min(prev.hunk, cur.hunk), Second: max(prev.hunk, cur.hunk), Line: cur.at + 1}
		}
	}
	var out []string
	pos := 0
	for _, p := range order {
		out = append(out, lines[pos:p.at]...)
		fileLines := lines[p.at : p.at+p.n]
		j := 0
		for _, l := range hunks[p.hunk].Lines {
			switch l.Op {
			case ' ':
				out = append(out, fileLines[j]) // the file's own text
				j++
			case '-':
				j++
			case '+':
				text := l.Text
				if p.strategy == LineNumbers {
					text, _ = stripNumber(text)
				}
				out = append(out, text)
			}
		}
		pos = p.at + p.n
	}
	out = append(out, lines[pos:]...)
	res := &Result{Text: strings.Join(out, "\n")}
	// A file without a final newline keeps it so while its last line is
	// still the last, untouched.
	tailKept := pos < len(lines)
	if len(out) > 0 && (finalNL || !tailKept) {
		res.Text += "\n"
	}
	res.Matched = make([]string, len(hunks))
	res.Lines = make([]int, len(hunks))
	for _, p := range ps {
		res.Matched[p.hunk], res.Lines[p.hunk] = p.strategy, p.at+1
	}
	return res, nil
}

// locate finds the one place hunk i matches.
func locate(lines []string, h *Hunk, i int) (placed, error) {
	old := oldLines(h)
	from, err := afterAnchors(lines, h, i, old)
	if err != nil {
		return placed{}, err
	}
	if len(old) == 0 {
		return placeAddition(lines, h, i, from)
	}
	anchored := len(h.Anchors) > 0
	for _, s := range strategies {
		want, have, ok := strategyLines(lines, old, s)
		if !ok {
			continue
		}
		at := matchesFrom(have, want, from, h.EndOfFile)
		// The hunk is the first place after the last anchor: an anchor
		// says where the change is, but must itself be unique after the
		// one before it.
		if anchored && len(at) > 1 {
			at = at[:1]
		}
		switch len(at) {
		case 0:
			continue
		case 1:
			return placed{i, at[0], len(old), s.name}, nil
		default:
			lines1 := make([]int, len(at))
			for k, a := range at {
				lines1[k] = a + 1
			}
			return placed{}, &AmbiguousError{Hunk: i, Lines: lines1}
		}
	}
	return placed{}, &NoMatchError{Hunk: i, Old: strings.Join(old, "\n")}
}

// oldLines returns the lines hunk h expects in the file: its context and
// removed lines, the ones looked for.
func oldLines(h *Hunk) []string {
	var old []string
	for _, l := range h.Lines {
		if l.Op != '+' {
			old = append(old, l.Text)
		}
	}
	return old
}

// afterAnchors returns the first line the search for hunk i may start at.
// Anchors narrow the search to after the last of them, each found after
// the one before; each must be found exactly once there, else the error
// names it (old is the hunk's old lines, for that error).
func afterAnchors(lines []string, h *Hunk, i int, old []string) (int, error) {
	from := 0
	for _, a := range h.Anchors {
		ks := anchorLines(lines, a, from)
		switch len(ks) {
		case 0:
			return 0, &NoMatchError{Hunk: i, Old: strings.Join(old, "\n"), Anchor: a}
		case 1:
			from = ks[0] + 1
		default:
			for k := range ks {
				ks[k]++
			}
			return 0, &AmbiguousError{Hunk: i, Lines: ks, Anchor: a}
		}
	}
	return from, nil
}

// placeAddition places hunk i, which has only additions and so no lines to
// match: at the end, after the anchor (from is the line after it), or where
// the unified diff's header says.
func placeAddition(lines []string, h *Hunk, i, from int) (placed, error) {
	switch {
	case h.EndOfFile:
		return placed{i, len(lines), 0, Exact}, nil
	case len(h.Anchors) > 0:
		return placed{i, from, 0, Exact}, nil
	case h.OldStart >= 0 && h.OldStart <= len(lines) && (h.OldStart > 0 || len(lines) == 0):
		return placed{i, h.OldStart, 0, Exact}, nil
	}
	return placed{}, &AmbiguousError{Hunk: i}
}

// strategy is a way of comparing a hunk's lines with the file's: norm
// rewrites a line of each before they are compared (nil: as they are).
type strategy struct {
	name string
	norm func(string) string
}

// strategies are the match strategies in the order they are tried.
var strategies = []strategy{
	{Exact, nil},
	{TrailingWhitespace, trimRight},
	{Quotes, func(s string) string { return straightQuotes(trimRight(s)) }},
	{LineNumbers, func(s string) string { t, _ := stripNumber(s); return trimRight(t) }},
}

// strategyLines returns the hunk's old lines (want) and the file's lines
// (have) as strategy s compares them, or ok false when s does not apply:
// LineNumbers applies only to a hunk whose old lines are all numbered.
func strategyLines(lines, old []string, s strategy) (want, have []string, ok bool) {
	if s.norm == nil {
		return old, lines, true
	}
	want = mapLines(old, s.norm)
	if s.name == LineNumbers {
		// The prefix is in the hunk, not in the file.
		have = mapLines(lines, trimRight)
		if !allNumbered(old) {
			return nil, nil, false
		}
	} else {
		have = mapLines(lines, s.norm)
	}
	return want, have, true
}

// matchesFrom returns every line at or after from where want is in have;
// with eof, only where it ends have.
func matchesFrom(have, want []string, from int, eof bool) []int {
	var at []int
	for k := from; k+len(want) <= len(have); k++ {
		if eof && k+len(want) != len(have) {
			continue
		}
		if slices.Equal(have[k:k+len(want)], want) {
			at = append(at, k)
		}
	}
	return at
}

// anchorLines returns the lines at or after from that read want, compared
// without surrounding whitespace (and then with curly quotes as straight).
func anchorLines(lines []string, want string, from int) []int {
	for _, norm := range []func(string) string{strings.TrimSpace, func(s string) string { return straightQuotes(strings.TrimSpace(s)) }} {
		w := norm(want)
		var ks []int
		for k := from; k < len(lines); k++ {
			if norm(lines[k]) == w {
				ks = append(ks, k)
			}
		}
		if len(ks) > 0 {
			return ks
		}
	}
	return nil
}

func mapLines(ls []string, f func(string) string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = f(l)
	}
	return out
}

func trimRight(s string) string { return strings.TrimRight(s, " \t") }

var quoteReplacer = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'",
	"\u201c", `"`, "\u201d", `"`, "\u201e", `"`, "\u201f", `"`)

func straightQuotes(s string) string { return quoteReplacer.Replace(s) }

// stripNumber removes a line-number prefix as a numbered read shows it:
// spaces, digits, then a TAB or "→".
func stripNumber(s string) (string, bool) {
	t := strings.TrimLeft(s, " ")
	d := 0
	for d < len(t) && t[d] >= '0' && t[d] <= '9' {
		d++
	}
	if d == 0 {
		return s, false
	}
	switch {
	case strings.HasPrefix(t[d:], "\t"):
		return t[d+1:], true
	case strings.HasPrefix(t[d:], "→"):
		return t[d+len("→"):], true
	}
	return s, false
}

func allNumbered(ls []string) bool {
	for _, l := range ls {
		if _, ok := stripNumber(l); !ok {
			return false
		}
	}
	return len(ls) > 0
}
