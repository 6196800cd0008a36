package replay

import (
	"encoding/json"
	"strings"

	"github.com/editguard/editguard/internal/ledger"
)

// The tools replay decides again, by the names the ledger records.
const (
	toolWrite   = "write_file"
	toolEdit    = "edit_file"
	toolDelete  = "delete_file"
	toolRestore = "restore_file"
	toolMove    = "move_file"
	toolPatch   = "apply_patch"
	toolUndo    = "undo_patch"

	// toolTurn marks a turn's start: no call that changes a file, so
	// replay passes over it without counting it.
	toolTurn = "begin_turn"
)

// known are the tools replay decides again.
var known = map[string]bool{
	toolWrite: true, toolEdit: true, toolDelete: true, toolRestore: true, toolMove: true, toolPatch: true, toolUndo: true,
}

// byTool are the tools whose records replay cannot decide again, whatever
// they hold, and why: records that recovery and the engine write for
// changes no call made, git, and rewind.
var byTool = map[string]string{
	"recover": SkippedRecovery, "apply_patch_undone": SkippedRecovery,
	"crashed_write": SkippedRecovery, "displaced_write": SkippedRecovery,
	"publish": SkippedGit, "pull": SkippedGit, "rewind": SkippedRewind, "exec": SkippedShell,
}

// note keeps what a later record's replay needs from rec: a move's source,
// a transaction's records.
func (r *run) note(rec *ledger.Record) {
	if rec.Outcome != "ok" {
		return
	}
	switch rec.Tool {
	case toolMove:
		// The source's record comes first, then the destination's.
		key := rec.Session + "\x00" + string(rec.Args)
		if src, ok := r.moves[key]; ok {
			r.dstOf[rec.Seq] = src
			delete(r.moves, key)
			return
		}
		r.moves[key] = rec.SHA256Before
	case toolPatch, toolUndo:
		if tx, ok := strings.CutPrefix(rec.Strategy, "transaction "); ok {
			r.txs[tx+"\x00"+rec.Path] = rec
		}
	}
}

// evaluate decides rec again, or says why it cannot.
func (r *run) evaluate(rec *ledger.Record) verdict {
	if reason, detail := skipReason(rec); reason != "" {
		return skipped(reason, detail)
	}
	if !known[rec.Tool] {
		return skipped(SkippedUnknown, rec.Tool)
	}
	if rec.Observed == nil && rec.Tool != toolPatch && rec.Tool != toolUndo {
		// The engine observes the file before it decides: a change
		// recorded without an observation was not decided by it.
		return refused(unobserved)
	}
	switch rec.Tool {
	case toolWrite:
		return r.write(rec)
	case toolEdit:
		return r.edit(rec)
	case toolRestore:
		return r.restore(rec)
	case toolDelete:
		return deleteFile(rec)
	case toolMove:
		return r.move(rec)
	case toolPatch:
		switch {
		case rec.Text == nil:
			return patchFile(rec)
		case rec.Outcome == "error":
			return r.patchRefused(rec)
		}
		return r.patchRecord(rec)
	}
	return r.undo(rec)
}

// skipReason says why rec cannot be decided again whatever its tool, or
// returns "".
func skipReason(rec *ledger.Record) (reason, detail string) {
	if reason := byTool[rec.Tool]; reason != "" {
		return reason, rec.Tool
	}
	switch {
	case rec.Outcome == ledger.OutcomePending || rec.Outcome == "interrupted":
		return SkippedNoOutcome, rec.Outcome
	case rec.Recovered:
		return SkippedRecovery, "outcome judged by recovery"
	case strings.HasPrefix(rec.Tool, "hook:"):
		return SkippedHook, rec.Tool
	case rec.Approval != "" && rec.Approval != "auto":
		return SkippedApproval, rec.Approval
	case isCommand(rec):
		return SkippedShell, rec.Tool
	case rec.Observed == nil && rec.Outcome == "error" && (rec.Tool != toolPatch || rec.Text == nil):
		return SkippedUnobserved, rec.ErrorCode
	}
	return "", ""
}

// isCommand reports whether rec records a shell command's change: its
// arguments name the command.
func isCommand(rec *ledger.Record) bool {
	var a struct {
		Command *string `json:"command"`
	}
	return len(rec.Args) > 0 && json.Unmarshal(rec.Args, &a) == nil && a.Command != nil
}

// unobserved is what replay decides for a change recorded without an
// observation of its file.
const unobserved = "no observation recorded"

// lateCodes are the refusals that come after the decision replay makes,
// from what the ledger does not hold: the size limit, the file system,
// the lock, a cancellation, a policy.
var lateCodes = map[string]bool{
	"TOO_LARGE": true, "REJECTED": true, "PERMISSION_DENIED": true, "NO_SPACE": true, "READ_ONLY": true,
	"BUSY": true, "UNSAFE_STATE": true, "IO": true, "CANCELED": true, "OUTSIDE_ROOT": true,
	"PROTECTED_PATH": true, "NOT_A_FILE": true,
}

// late turns an accepting verdict into a skip when rec records a refusal
// that replay cannot decide.
func late(rec *ledger.Record, v verdict) verdict {
	if v.skip == "" && v.code == "" && rec.Outcome == "error" && lateCodes[rec.ErrorCode] {
		return skipped(SkippedLate, rec.ErrorCode)
	}
	return v
}

// unregular reports whether rec observed something that is not a regular
// file: it exists but has no content hash.
func unregular(rec *ledger.Record) bool {
	return rec.Observed != nil && rec.Observed.Exists && rec.Observed.SHA256 == ""
}

// accept finishes a verdict: a recorded late refusal is skipped, and an
// observation of something other than a regular file is not decided.
func accept(rec *ledger.Record, v verdict) verdict {
	if unregular(rec) && v.skip == "" {
		return skipped(SkippedLate, "not a regular file")
	}
	return late(rec, v)
}
