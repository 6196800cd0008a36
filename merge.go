package editguard

import (
	"errors"

	"github.com/editguard/editguard/internal/merge"
	"github.com/editguard/editguard/internal/textedit"
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
// seen to cur leaves the text they replace alone (internal/merge). It
// returns the new text and the diff from seen to cur.
func mergeEdits(seen []byte, enc string, cur string, edits []Edit) (string, string, []string, error) {
	te := make([]textedit.Edit, len(edits))
	for i, e := range edits {
		te[i] = textedit.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll}
	}
	text, d, matched, err := merge.Edits(seen, enc, cur, te)
	var r *merge.Refusal
	if errors.As(err, &r) {
		return "", "", nil, &errNoMerge{r.Why}
	}
	return text, d, matched, err
}

// isNoMerge reports whether err says an edit could not be merged.
func isNoMerge(err error) (*errNoMerge, bool) {
	var e *errNoMerge
	return e, errors.As(err, &e)
}
