package replay

import (
	"encoding/json"

	"github.com/editguard/editguard/internal/ledger"
)

// decodeResult decodes rec's recorded result into res.
func decodeResult(rec *ledger.Record, res any) error { return json.Unmarshal(rec.Result, res) }

// move replays a move_file record: the source's (its decision, and the
// file gone after) or the destination's (the source's content arrived).
func (r *run) move(rec *ledger.Record) verdict {
	var a moveArgs
	if v := decodeArgs(rec, &a); v != nil {
		return *v
	}
	if src, ok := r.dstOf[rec.Seq]; ok {
		return accept(rec, accepted(src))
	}
	if rec.Observed.Exists && !unregular(rec) {
		if c, v := decide(rec, rules{}); v != nil || c != "" {
			return orRefused(v, c)
		}
	} else if !rec.Observed.Exists {
		return refused(codeNotFound)
	}
	v := accept(rec, verdict{})
	if v.skip == "" && rec.Outcome == "error" {
		return skipped(SkippedDestination, rec.ErrorCode)
	}
	if rec.Outcome == "ok" {
		v.afterKnown = true // a moved source is gone: after ""
	}
	return v
}

// patchFile replays one file's record of a committed patch. The patch's
// text is not recorded, so only the decision is made again: the file must
// be what the session read, if it read it.
func patchFile(rec *ledger.Record) verdict {
	if rec.Observed == nil {
		return skipped(SkippedUnobserved, rec.Outcome)
	}
	if rec.Outcome == "error" {
		// Refused for what its text holds, which is not kept.
		return skipped(SkippedPatchText, rec.ErrorCode)
	}
	obs, b := rec.Observed, rec.Baseline
	if b != nil && (!obs.Exists || obs.SHA256 != b.SHA256) {
		return refused(codeStale)
	}
	return accept(rec, verdict{})
}

// undo replays one file's record of an undone transaction: the file must
// be what the transaction left, and becomes what it found.
func (r *run) undo(rec *ledger.Record) verdict {
	if rec.Observed == nil {
		return skipped(SkippedUnobserved, rec.Outcome)
	}
	var a struct {
		Tx string `json:"tx"`
	}
	if v := decodeArgs(rec, &a); v != nil {
		return *v
	}
	prev, ok := r.txs[a.Tx+"\x00"+rec.Path]
	if !ok {
		return skipped(SkippedUnknown, "transaction "+a.Tx+" has no record of this file")
	}
	obs := rec.Observed
	if obs.Exists != (prev.SHA256After != "") || obs.SHA256 != prev.SHA256After {
		return refused(codeStale)
	}
	found := ""
	if prev.Observed != nil && prev.Observed.Exists {
		found = prev.SHA256Before
	}
	return accept(rec, accepted(found))
}
