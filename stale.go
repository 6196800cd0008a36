package editguard

import (
	"fmt"
	"time"

	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/udiff"
)

// staleDiffMax bounds the diff a STALE_FILE error carries in
// details.changes, in bytes. A larger change is described by the line
// ranges it touches (details.changed_lines) instead.
const staleDiffMax = 3000

// staleChanges adds to e, a STALE_FILE error for a file that was modified
// since the session's last read b, what changed: the unified diff from the
// text the session last read (or wrote) to the text on disk now, when the
// session still holds the former (see remember) and the diff fits in
// staleDiffMax. Having been shown the whole change, the agent knows the
// current content as well as a read would have told it, so the baseline
// moves to the current content: the agent can redo its change at once, on
// top of what is there now. The new baseline counts as a partial read,
// though: an edit (anchored on text) can be redone at once, but a
// whole-file write composed before the change would silently revert it if
// simply sent again, so it needs a full read first. Otherwise the error
// gives the changed line ranges, or says why it cannot, and the agent
// reads again.
//
// The caller holds the file's lock; obs is what is on disk now.
func (s *Session) staleChanges(t *target, b *baseline, obs *observation, wholeFile bool, e *Error) {
	old, ok := s.recall(b.SHA256)
	if !ok {
		e.Details["changes_unavailable"] = "the content of your last read is not kept (too large, or read elsewhere)"
		if b.Shown {
			e.Details["changes_unavailable"] = "your last read showed only part of a version the file no longer holds"
		}
		return
	}
	if len(obs.Data) > seenFileMax {
		e.Details["changes_unavailable"] = "the file is now too large to compare"
		return
	}
	oldDoc, err1 := textcodec.Decode(old, b.Encoding)
	newDoc, err2 := textcodec.Decode(obs.Data, b.Encoding)
	if err1 != nil || err2 != nil {
		e.Details["changes_unavailable"] = "the file no longer decodes as text in its encoding"
		return
	}
	name := t.Path
	if t.Lexical != "" {
		name = t.Lexical // relative to the root, also for an absolute path
	}
	d := udiff.Unified("a/"+name+" (your last read)", oldDoc.Text, "b/"+name+" (now)", newDoc.Text)
	if d == "" {
		// Same text, other bytes: line endings, BOM or encoding changed.
		e.Details["changes_unavailable"] = "only the bytes changed, not the text (line endings, byte order mark or encoding)"
		return
	}
	stats := udiff.Count(d)
	e.Details["changes_summary"] = stats.String()
	if len(d) > staleDiffMax {
		e.Details["changed_lines"] = udiff.NewRanges(d, 20)
		e.RecoveryHint = fmt.Sprintf("the change is too large to show here: call read_file on %s (at least the changed lines), then redo your change on top of what it holds now", t.Path)
		return
	}
	e.Details["changes"] = d
	nb := baseline{
		Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(),
		FullRead: false, Diffed: b.FullRead || b.Diffed, CapturedAt: time.Now(), Encoding: b.Encoding,
	}
	if s.setBaseline(t.Lexical, nb) != nil {
		e.RecoveryHint = fmt.Sprintf("call read_file on %s, then redo the change on top of what it holds now", t.Path)
		return
	}
	s.rememberFrozen(obs.Sum, obs.Data, true) // an observation is never written to
	e.Details["baseline_updated"] = true
	e.Message = "file changed since your last read; the changes are shown"
	e.RecoveryHint = "look at the changes, then redo your edit on top of the file as it is now (your read now covers them, so edit_file needs no new read)"
	if wholeFile {
		e.RecoveryHint = fmt.Sprintf("look at the changes: to keep them, redo your change with edit_file (no new read needed), or call read_file on %s before writing the whole file again", t.Path)
	}
}
