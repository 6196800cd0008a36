package udiff

import (
	"fmt"
	"strings"
)

// Stats counts what a unified diff changes.
type Stats struct {
	Added, Removed, Hunks int
}

// String renders s as "+3 -1 lines in 2 hunks".
func (s Stats) String() string {
	h := "hunks"
	if s.Hunks == 1 {
		h = "hunk"
	}
	return fmt.Sprintf("+%d -%d lines in %d %s", s.Added, s.Removed, s.Hunks, h)
}

// Count returns the Stats of a diff made by Unified.
func Count(d string) Stats {
	var s Stats
	for line := range strings.Lines(d) {
		switch {
		case strings.HasPrefix(line, "@@ "):
			s.Hunks++
		case s.Hunks == 0:
			// the ---/+++ header
		case line[0] == '+':
			s.Added++
		case line[0] == '-':
			s.Removed++
		}
	}
	return s
}

// Bound returns d cut to at most about max bytes: the header and as many
// whole hunks as fit, then as many lines of the next hunk as fit, and a
// last line saying how much was left out. It returns d itself, and false,
// when d fits.
func Bound(d string, max int) (string, bool) {
	if len(d) <= max {
		return d, false
	}
	var out strings.Builder
	rest := d
	for rest != "" {
		i := strings.IndexByte(rest, '\n')
		line := rest
		if i >= 0 {
			line = rest[:i+1]
		}
		if out.Len()+len(line) > max {
			break
		}
		out.WriteString(line)
		rest = rest[len(line):]
	}
	note := fmt.Sprintf("[diff cut here: %d more lines", strings.Count(rest, "\n"))
	if h := strings.Count("\n"+rest, "\n@@ "); h > 0 {
		note += fmt.Sprintf(" in %d more hunks", h)
	}
	out.WriteString(note + "]\n")
	return out.String(), true
}

// NewRanges returns the lines of the new text that a diff made by Unified
// adds, as ranges ("12-15", "40"), and the places where lines were only
// removed ("after 7"): at most max of them, then "…".
func NewRanges(d string, max int) []string {
	var (
		out        []string
		line       int  // number of the next line of the new text
		start, end int  // the run of added lines being collected, if start > 0
		removed    bool // lines were removed since the last line kept or added
	)
	flush := func() {
		switch {
		case start > 0 && start == end:
			out = append(out, fmt.Sprint(start))
		case start > 0:
			out = append(out, fmt.Sprintf("%d-%d", start, end))
		case removed:
			out = append(out, fmt.Sprintf("after %d", line-1))
		}
		start, removed = 0, false
	}
	for l := range strings.Lines(d) {
		switch {
		case strings.HasPrefix(l, "@@ "):
			flush()
			var oa, ob, nb int
			if n, _ := fmt.Sscanf(l, "@@ -%d,%d +%d,%d @@", &oa, &ob, &line, &nb); n != 4 {
				return out
			}
			if nb == 0 {
				line++ // "+7,0": nothing of the new text, the hunk sits after line 7
			}
		case line == 0, strings.HasPrefix(l, "\\"):
			// the ---/+++ header; "\ No newline at end of file"
		case l[0] == '+':
			if start == 0 {
				start = line
			}
			end = line
			line++
		case l[0] == '-':
			if start == 0 {
				removed = true
			}
		default:
			flush()
			line++
		}
		if len(out) > max {
			return append(out[:max], "…")
		}
	}
	flush()
	if len(out) > max {
		return append(out[:max], "…")
	}
	return out
}
