package toolset

import (
	"context"
	"encoding/json"

	"github.com/editguard/editguard"
)

var undoPatchTool = &toolDef{
	name: "undo_patch", title: "Undo patch",
	description: undoPatchDescription,
	input: `{
  "type": "object",
  "properties": {
    "tx": {"type": "string", "description": "The transaction id apply_patch reported."},
    "dry_run": {"type": "boolean", "description": "If true, check and return the diffs without writing."}
  },
  "required": ["tx"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true},
	run:         (*Toolset).undoPatch,
}

const undoPatchDescription = `Undo a whole apply_patch transaction: every file it changed goes back to what it held before, all or nothing (added files are removed, deleted files come back). Each file must still be exactly what the patch left; if any changed since, nothing is undone (STALE_FILE), so later work is never destroyed. No read is needed. The undo is itself a transaction, with its own id, and can be undone. The result is text like apply_patch's.`

func (t *Toolset) undoPatch(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Tx     *string `json:"tx"`
		DryRun bool    `json:"dry_run"`
	}
	if err := decodeArgs("undo_patch", raw, &a); err != nil {
		return nil, err
	}
	if a.Tx == nil || *a.Tx == "" {
		return nil, missing("undo_patch", "tx")
	}
	res, err := t.s.UndoPatch(ctx, *a.Tx, &editguard.UndoOptions{DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	text, meta := patchSummary(res, *a.Tx)
	return &Output{Structured: res, Text: text, Meta: meta}, nil
}
