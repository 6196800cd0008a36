package editguard

// The operations the ledger records (a record's "tool") and history keeps
// versions for (a version's "op"). An operation an agent tool offers is
// recorded under that tool's name, so that a record reads as the call
// that made it; the others have names of their own. These are the only
// places the package names them.
const (
	opWrite       = "write_file"
	opEdit        = "edit_file"
	opDelete      = "delete_file"
	opRestore     = "restore_file"
	opMove        = "move_file"
	opApplyPatch  = "apply_patch"
	opUndoPatch   = "undo_patch"
	opRewind      = "rewind"
	opPublish     = "publish"
	opPull        = "pull"
	opRecover     = "recover"            // a transaction rolled back at Open
	opPatchUndone = "apply_patch_undone" // a file a failing transaction put back
	opExec        = "exec"               // a shell command's changes, when no client names its shell tool
	opBeginTurn   = "begin_turn"         // a turn's start: a mark with no path, no change
)

// The ops of history versions that no change displaced (kept.go).
const (
	opMergeBase    = "merge_base"    // the session's read a merge was decided against
	opPatchRefused = "patch_refused" // the file a refused patch's hunks were applied to
)
