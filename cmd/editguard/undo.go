package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
)

var undoCmd = &command{
	name:    "undo",
	args:    "TX [--dry-run] [--json]",
	summary: "undo a whole patch transaction, all or nothing",
	help: `Undo puts every file that the patch transaction TX changed (see
"editguard apply" or "editguard log") back as it was, all or nothing: a
file the patch added is removed. Each file must still be exactly what the
patch left; if any changed since, nothing is undone (exit 3), and a patch
that was undone already is said to be, with the transaction that undid
it. No read is needed. The undo is a transaction of its own and can
itself be undone.`,
}

func runUndo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(undoCmd.name)
	dry := fs.Bool("dry-run", false, "check and show the diffs, write nothing")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, undoCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(undoCmd.name, "undo takes exactly one TX, got %d", len(pos))
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	r, err := s.UndoPatch(ctx, pos[0], &editguard.UndoOptions{DryRun: *dry})
	if errors.Is(err, editguard.ErrStaleFile) {
		if undo := undoneBy(e, pos[0]); undo != nil {
			return alreadyUndone(pos[0], undo, err)
		}
	}
	if err != nil {
		return err
	}
	return printPatch(e, r, func(f editguard.PatchFile) string {
		if f.SHA256 == "" {
			// The patch added the file: undoing it removes the file.
			return fmt.Sprintf("removed %s (history %s)", quoteName(f.Path), f.BackupVersion)
		}
		return fmt.Sprintf("put back %s (history %s)", quoteName(f.Path), f.BackupVersion)
	}, "undone as transaction "+r.TxID)
}

// undoneBy returns the ledger's latest record of an undo of the patch
// transaction tx that was committed, or nil if there is none.
func undoneBy(e *env, tx string) *editguard.LedgerRecord {
	w, err := e.workspace()
	if err != nil {
		return nil
	}
	var last *editguard.LedgerRecord
	w.Log(editguard.LogFilter{Tool: "undo_patch"}, func(r *editguard.LedgerRecord) error {
		var a struct {
			Tx     string `json:"tx"`
			DryRun bool   `json:"dry_run"`
		}
		if r.Outcome == "ok" && json.Unmarshal(r.Args, &a) == nil && !a.DryRun && strings.EqualFold(a.Tx, tx) {
			last = r
		}
		return nil
	})
	return last
}

// alreadyUndone is the error of an undo of the patch tx that undo, a
// record of an earlier undo of it, already put back: the files no longer
// hold what the patch left because they hold what was there before it.
func alreadyUndone(tx string, undo *editguard.LedgerRecord, stale error) error {
	by := strings.TrimPrefix(undo.Strategy, "transaction ")
	e := &editguard.Error{
		Code:    editguard.CodeStaleFile,
		Message: fmt.Sprintf("patch transaction %s was already undone, by transaction %s at %s; nothing was undone again", tx, by, cliTime(undo.Time)),
		Details: map[string]any{"tx": tx, "undone_by": by},
		Err:     stale,
	}
	if by != "" {
		e.RecoveryHint = fmt.Sprintf("to bring the patch's changes back, undo the undo: editguard undo %s", shellQuote(by))
	}
	return e
}
