package toolset

import (
	"context"
	"encoding/json"

	"github.com/editguard/editguard"
)

var moveFileTool = &toolDef{
	name: "move_file", title: "Move file",
	description: moveFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "source": {"type": "string", "description": "File to move, relative to the workspace root."},
    "destination": {"type": "string", "description": "New path, relative to the workspace root."},
    "overwrite": {"type": "boolean", "description": "Replace an existing destination (which you must have read in full). Default false."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and report without moving."}
  },
  "required": ["source", "destination"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true},
	run:         (*Toolset).moveFile,
}

const moveFileDescription = `Move or rename a file, guarded. You must have read the source in this session (a partial read is enough), and it must not have changed since (NOT_READ, STALE_FILE). An existing destination is refused (STALE_FILE, reason created) unless overwrite is true, and then you must have read the destination in full. Missing directories of the destination are created. A new destination name that is not portable (Windows-reserved like CON, a character among <>:"|?* or a control character, a trailing dot or space, a case or Unicode-normalization twin of a name beside it) gets a warning, or INVALID_ARGUMENT if the workspace refuses such names. The move is atomic: the file is never lost or half-moved, even in a crash. History keeps what left the source and what the destination held, so restore_file can undo either side; your read follows the file to its new name. Use this instead of mv in a shell. The result is text: what moved where and the history versions (and, when overwriting, the diff of the destination, cut after about 4,000 characters).`

type moveArgs struct {
	Source       *string                 `json:"source"`
	Destination  *string                 `json:"destination"`
	Overwrite    bool                    `json:"overwrite"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) moveFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a moveArgs
	if err := decodeArgs("move_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Source == nil {
		return nil, missing("move_file", "source")
	}
	if a.Destination == nil {
		return nil, missing("move_file", "destination")
	}
	res, err := t.s.Move(ctx, *a.Source, *a.Destination, &editguard.MoveOptions{Overwrite: a.Overwrite, Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return &Output{Structured: res, Text: moveText(res), Meta: resultMeta(res)}, nil
}
