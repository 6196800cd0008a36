// Package merge decides whether exact edits written against one text (a
// session's read) still apply to another (the file now, after someone
// else's change), and applies them if so. The engine merges with it, and
// replay decides a recorded merge again with it. Pure.
//
// Edits merge when all of these hold: no edit replaces every occurrence
// or has an empty old text; the read decodes in its encoding; each old
// text occurs exactly once in the read and exactly once in the text now;
// no line of the read that the other change removed or replaced, and no
// place where it inserted lines, lies within the lines an edit's old text
// spans (a change on an adjacent line is not within); and the edits apply
// to the text now exactly (no relaxed match).
package merge

import (
	"strconv"
	"strings"

	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
	"github.com/editguard/editguard/internal/udiff"
)

// Refusal says why edits could not be merged.
type Refusal struct{ Why string }

func (e *Refusal) Error() string { return "not merged: " + e.Why }

// Edits applies edits, written against seen (the session's last read,
// in encoding enc), to cur, the text of the file now, if the change from
// seen to cur leaves the text they replace alone. It returns the new text
// and the diff from seen to cur.
func Edits(seen []byte, enc string, cur string, edits []textedit.Edit) (string, string, []string, error) {
	for _, e := range edits {
		if e.ReplaceAll {
			return "", "", nil, &Refusal{"replace_all edits are not merged"}
		}
		if e.Old == "" {
			return "", "", nil, &Refusal{"an edit with an empty old_string"}
		}
	}
	doc, err := textcodec.Decode(seen, enc)
	if err != nil {
		return "", "", nil, &Refusal{"the content read no longer decodes"}
	}
	was := doc.Text
	d := udiff.Unified("a (your last read)", was, "b (now)", cur)
	if d == "" {
		return "", "", nil, &Refusal{"only the bytes changed, not the text"}
	}
	touched := changedLines(d)
	for i, e := range edits {
		at := strings.Index(was, e.Old)
		if at < 0 || strings.Contains(was[at+1:], e.Old) {
			return "", "", nil, &Refusal{"edit " + strconv.Itoa(i+1) + "'s old_string does not occur exactly once in what was read"}
		}
		if now := strings.Index(cur, e.Old); now < 0 || strings.Contains(cur[now+1:], e.Old) {
			return "", "", nil, &Refusal{"edit " + strconv.Itoa(i+1) + "'s old_string does not occur exactly once in the file now"}
		}
		first := strings.Count(was[:at], "\n")
		last := first + strings.Count(e.Old[:len(e.Old)-1], "\n")
		for _, r := range touched {
			if r.overlaps(first, last) {
				return "", "", nil, &Refusal{"the other change touches the lines edit " + strconv.Itoa(i+1) + " replaces"}
			}
		}
	}
	te := make([]textedit.Edit, len(edits))
	for i, e := range edits {
		te[i] = textedit.Edit{Old: e.Old, New: e.New}
	}
	r, err := textedit.Apply(cur, te)
	if err != nil {
		return "", "", nil, &Refusal{"the edits do not apply to the file now: " + err.Error()}
	}
	for _, m := range r.MatchedWith {
		if m != "exact" {
			return "", "", nil, &Refusal{"an old_string matched the file now only after relaxing"}
		}
	}
	return r.Text, d, r.MatchedWith, nil
}

// lineRange is lines [from, to) of the old side of a diff that it removed
// (to > from), or the place before line from where it inserted (to ==
// from).
type lineRange struct{ from, to int }

// overlaps reports whether r lies within lines first to last (0-based,
// inclusive): a removed line among them, or an insertion between two of
// them.
func (r lineRange) overlaps(first, last int) bool {
	if r.to > r.from {
		return r.from <= last && r.to > first
	}
	return r.from > first && r.from <= last
}

// changedLines returns what the unified diff d changes, on its old side.
func changedLines(d string) []lineRange {
	var out []lineRange
	line, inHunk := 0, false
	for l := range strings.Lines(d) {
		switch {
		case !inHunk && (strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++")):
			// The file names, before the first hunk.
		case strings.HasPrefix(l, "@@ "):
			inHunk = true
			// @@ -a,b +c,d @@: a is 1-based (the line before, when b is 0).
			f := strings.Fields(l)
			if len(f) < 2 {
				continue
			}
			start, _, _ := strings.Cut(strings.TrimPrefix(f[1], "-"), ",")
			n, _ := strconv.Atoi(start)
			count := 1
			if _, c, ok := strings.Cut(f[1], ","); ok {
				count, _ = strconv.Atoi(c)
			}
			line = n - 1
			if count == 0 {
				line = n
			}
		case strings.HasPrefix(l, " "):
			line++
		case strings.HasPrefix(l, "-"):
			out = append(out, lineRange{line, line + 1})
			line++
		case strings.HasPrefix(l, "+"):
			out = append(out, lineRange{line, line})
		}
	}
	return out
}
