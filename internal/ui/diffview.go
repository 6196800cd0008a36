package ui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/udiff"
)

// shownDiffBytes is how much of a diff a page shows; the rest is behind a
// "show all" link that streams it as plain text.
const shownDiffBytes = 256 << 10

// statsLimit is the largest pair of contents whose diff the timeline
// computes to count lines; larger changes show no count there.
const statsLimit = 4 << 20

// diffLine is one line of a unified diff as a page shows it.
type diffLine struct {
	Kind         string // "add", "del", "ctx", "hunk", "meta", "note"
	Text         string
	OldNo, NewNo int
}

// splitRow is one row of a side-by-side diff: the old line on the left,
// the new one on the right; either may be missing.
type splitRow struct {
	Left, Right *diffLine
	Hunk        string
}

// shownDiff is a diff ready for a page: its lines, inline and side by
// side, and whether it was cut.
type shownDiff struct {
	Empty   bool
	Cut     bool
	Full    int // bytes of the whole diff
	Lines   []diffLine
	Split   []splitRow
	Added   int
	Removed int
}

// showDiff parses the unified diff d, cut to shownDiffBytes.
func showDiff(d string) *shownDiff {
	st := udiff.Count(d)
	sd := &shownDiff{Empty: d == "", Full: len(d), Added: st.Added, Removed: st.Removed}
	d, sd.Cut = udiff.Bound(d, shownDiffBytes)
	sd.Lines = parseUnified(d)
	sd.Split = splitRows(sd.Lines)
	return sd
}

// showDiffCounts counts the lines the diff d adds and removes.
func showDiffCounts(d string) udiff.Stats { return udiff.Count(d) }

// parseUnified numbers the lines of a unified diff.
func parseUnified(d string) []diffLine {
	var out []diffLine
	oldNo, newNo, inHunk := 0, 0, false
	for line := range strings.Lines(d) {
		line = strings.TrimSuffix(line, "\n")
		l := diffLine{Text: line}
		switch {
		case strings.HasPrefix(line, "@@ "):
			l.Kind, inHunk = "hunk", true
			oldNo, newNo = hunkStarts(line)
		case !inHunk:
			l.Kind = "meta"
		case strings.HasPrefix(line, "[diff cut here"):
			l.Kind = "note"
		case strings.HasPrefix(line, "+"):
			l.Kind, l.NewNo = "add", newNo
			newNo++
		case strings.HasPrefix(line, "-"):
			l.Kind, l.OldNo = "del", oldNo
			oldNo++
		case strings.HasPrefix(line, `\`):
			l.Kind = "note"
		default:
			l.Kind, l.OldNo, l.NewNo = "ctx", oldNo, newNo
			oldNo++
			newNo++
		}
		out = append(out, l)
	}
	return out
}

// hunkStarts reads the first old and new line numbers of a hunk header
// "@@ -a,b +c,d @@".
func hunkStarts(h string) (int, int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, 0
	}
	return rangeStart(f[1]), rangeStart(f[2])
}

func rangeStart(r string) int {
	r = strings.TrimLeft(r, "-+")
	r, _, _ = strings.Cut(r, ",")
	n, _ := strconv.Atoi(r)
	return n
}

// splitRows pairs each run of removed lines with the run of added lines
// that follows it.
func splitRows(lines []diffLine) []splitRow {
	var rows []splitRow
	for i := 0; i < len(lines); {
		l := &lines[i]
		switch l.Kind {
		case "ctx":
			rows = append(rows, splitRow{Left: l, Right: l})
			i++
		case "del", "add":
			var n int
			rows, n = pairRun(rows, lines[i:])
			i += n
		default:
			rows = append(rows, splitRow{Hunk: l.Text})
			i++
		}
	}
	return rows
}

// pairRun appends the rows of one run of removals and additions at the
// start of lines and returns how many lines it took.
func pairRun(rows []splitRow, lines []diffLine) ([]splitRow, int) {
	var dels, adds []*diffLine
	n := 0
	for ; n < len(lines) && lines[n].Kind == "del"; n++ {
		dels = append(dels, &lines[n])
	}
	for ; n < len(lines) && lines[n].Kind == "add"; n++ {
		adds = append(adds, &lines[n])
	}
	for i := range max(len(dels), len(adds)) {
		var r splitRow
		if i < len(dels) {
			r.Left = dels[i]
		}
		if i < len(adds) {
			r.Right = adds[i]
		}
		rows = append(rows, r)
	}
	return rows, n
}

// content is one side of a change: bytes, or the note that they are not
// known.
type content struct {
	Data    []byte
	Absent  bool   // the file did not exist
	Unknown string // why the bytes are not known; "" when they are
}

// text decodes c for a diff and describes its format.
func (c content) text() (string, *textcodec.Format) {
	if c.Absent || c.Unknown != "" {
		return "", nil
	}
	doc, err := textcodec.Decode(c.Data, "")
	if err != nil {
		return fmt.Sprintf("(%d bytes, not text: %v)\n", len(c.Data), err), nil
	}
	return doc.Text, &doc.Format
}

// diffOf returns the unified diff from before to after of the file p and
// notes on their encodings and line endings.
func diffOf(p string, before, after content) (string, []string) {
	bt, bf := before.text()
	at, af := after.text()
	notes := formatNotes(bf, af)
	for _, c := range []struct {
		side string
		c    content
	}{{"before", before}, {"after", after}} {
		if c.c.Unknown != "" {
			notes = append(notes, "content "+c.side+" the change is not known: "+c.c.Unknown)
		}
	}
	oldName, newName := "a/"+p, "b/"+p
	if before.Absent {
		oldName = "/dev/null"
	}
	if after.Absent {
		newName = "/dev/null"
	}
	return udiff.Unified(oldName, bt, newName, at), notes
}

// formatNotes describes the encoding, byte order mark and line endings of
// the two sides, and what changed between them.
func formatNotes(b, a *textcodec.Format) []string {
	var notes []string
	switch {
	case b == nil && a == nil:
	case b == nil:
		notes = append(notes, "after: "+describeFormat(a))
	case a == nil:
		notes = append(notes, "before: "+describeFormat(b))
	case *a == *b:
		notes = append(notes, describeFormat(a)+", unchanged")
	default:
		notes = append(notes, "before: "+describeFormat(b), "after: "+describeFormat(a))
	}
	return notes
}

func describeFormat(f *textcodec.Format) string {
	s := "encoding " + f.Encoding
	if f.BOM {
		s += " with byte order mark"
	}
	return s + ", line endings " + f.LineEnding
}
