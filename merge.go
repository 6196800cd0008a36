package editguard

import (
	"errors"
	"strconv"
	"strings"

	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
	"github.com/editguard/editguard/internal/udiff"
)

// Stale edits that can merge.
//
// An exact edit is written against the text the session last read. When
// the file changed since (someone else's change), the edit is still
// meaningful if the text it replaces is untouched by that change: then it
// is applied to the file as it is now, and the other change is kept. So
// Edit, finding its file changed since the session's read, merges when all
// of these hold, and otherwise answers STALE_FILE as before:
//
//   - the session still has the bytes of its last read (seen.go) and the
//     file decodes as text in the read's encoding both then and now;
//   - no edit replaces every occurrence (replace_all);
//   - each edit's old text occurs exactly once in what was read and
//     exactly once in the file now;
//   - no line of what was read that the other change removed or replaced,
//     and no place where it inserted lines, lies within the lines an
//     edit's old text spans (a change on an adjacent line is not within);
//   - the edits apply to the file now as they would have to the read.
//
// All of it is decided under the file's lock, against the bytes observed
// there, like any change: nothing is applied that the check did not see.
// The result says it merged (Merged) and shows the other change
// (ExternalDiff); the ledger records the strategy "merged". Whole-file
// writes, deletes and moves never merge: they would discard the other
// change. Options.NoMerge and EditOptions.NoMerge turn merging off.
//
// An update of apply_patch merges by the same rules (planMerge), each
// hunk an exact edit of its context and removed lines; a hunk that only
// adds lines, or is anchored at the end of the file, shows no place to
// check, and the patch does not merge. Its records keep the strategy of
// their transaction, and PatchFile.Merged says it merged;
// PatchOptions.NoMerge turns it off.

// seenForMerge returns the content of b, the session's read, when stale
// is the STALE_FILE of a file modified since that read which an edit may
// merge over: merging is on, the file is still a regular file small
// enough for the session to remember it, and the session does remember
// that read. Edit (commitRun.mayMerge) and Guard (guardMerge) both ask it.
func (s *Session) seenForMerge(b *baseline, obs *observation, stale error) ([]byte, bool) {
	var e *Error
	if s.w.opts.NoMerge || b == nil || !obs.Stat.Exists || !obs.Stat.Regular() || len(obs.Data) > seenFileMax ||
		!errors.As(stale, &e) || e.Code != CodeStaleFile || e.Details["reason"] != ReasonModified {
		return nil, false
	}
	return s.recall(b.SHA256)
}

// strategyMerged is the ledger strategy of a merged edit.
const strategyMerged = "merged"

// errNoMerge says why an edit could not be merged.
type errNoMerge struct{ why string }

func (e *errNoMerge) Error() string { return "not merged: " + e.why }

// mergeEdits applies edits, written against seen (the session's last read,
// in encoding enc), to cur, the text of the file now, if the change from
// seen to cur leaves the text they replace alone. It returns the new text
// and the diff from seen to cur.
func mergeEdits(seen []byte, enc string, cur string, edits []Edit) (string, string, []string, error) {
	for _, e := range edits {
		if e.ReplaceAll {
			return "", "", nil, &errNoMerge{"replace_all edits are not merged"}
		}
		if e.OldString == "" {
			return "", "", nil, &errNoMerge{"an edit with an empty old_string"}
		}
	}
	doc, err := textcodec.Decode(seen, enc)
	if err != nil {
		return "", "", nil, &errNoMerge{"the content read no longer decodes"}
	}
	was := doc.Text
	d := udiff.Unified("a (your last read)", was, "b (now)", cur)
	if d == "" {
		return "", "", nil, &errNoMerge{"only the bytes changed, not the text"}
	}
	touched := changedLines(d)
	for i, e := range edits {
		at := strings.Index(was, e.OldString)
		if at < 0 || strings.Contains(was[at+1:], e.OldString) {
			return "", "", nil, &errNoMerge{"edit " + strconv.Itoa(i+1) + "'s old_string does not occur exactly once in what was read"}
		}
		if now := strings.Index(cur, e.OldString); now < 0 || strings.Contains(cur[now+1:], e.OldString) {
			return "", "", nil, &errNoMerge{"edit " + strconv.Itoa(i+1) + "'s old_string does not occur exactly once in the file now"}
		}
		first := strings.Count(was[:at], "\n")
		last := first + strings.Count(e.OldString[:len(e.OldString)-1], "\n")
		for _, r := range touched {
			if r.overlaps(first, last) {
				return "", "", nil, &errNoMerge{"the other change touches the lines edit " + strconv.Itoa(i+1) + " replaces"}
			}
		}
	}
	te := make([]textedit.Edit, len(edits))
	for i, e := range edits {
		te[i] = textedit.Edit{Old: e.OldString, New: e.NewString}
	}
	r, err := textedit.Apply(cur, te)
	if err != nil {
		return "", "", nil, &errNoMerge{"the edits do not apply to the file now: " + err.Error()}
	}
	for _, m := range r.MatchedWith {
		if m != "exact" {
			return "", "", nil, &errNoMerge{"an old_string matched the file now only after relaxing"}
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

// isNoMerge reports whether err says an edit could not be merged.
func isNoMerge(err error) (*errNoMerge, bool) {
	var e *errNoMerge
	return e, errors.As(err, &e)
}
