package toolset

import (
	"context"
	"encoding/json"

	"github.com/editguard/editguard"
)

var deleteFileTool = &toolDef{
	name: "delete_file", title: "Delete file",
	description: deleteFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return what would be removed without deleting."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true},
	run:         (*Toolset).deleteFile,
}

const deleteFileDescription = `Delete a file. Guarded like write_file: read the file in full first (NOT_READ otherwise); it fails with STALE_FILE if the file changed since your read. The deleted content is kept in history: the result names the version, and restore_file with it brings the file back. Use this instead of rm in a shell, which keeps nothing. dry_run checks the deletion without deleting. The result is text: the number of lines removed and the history version that keeps them, without the content you read.`

type deleteArgs struct {
	Path         *string                 `json:"path"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) deleteFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a deleteArgs
	if err := decodeArgs("delete_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("delete_file", "path")
	}
	res, err := t.s.Delete(ctx, *a.Path, &editguard.DeleteOptions{Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return changeOutput("Deleted", res), nil
}
