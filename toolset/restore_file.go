package toolset

import (
	"context"
	"encoding/json"

	"github.com/editguard/editguard"
)

var restoreFileTool = &toolDef{
	name: "restore_file", title: "Restore file version",
	description: restoreFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "version": {"type": "string", "description": "Version id from file_history."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return the diff without writing."}
  },
  "required": ["path", "version"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true, Idempotent: true},
	run:         (*Toolset).restoreFile,
}

const restoreFileDescription = `Put an earlier version of a file (from file_history) back. This is a guarded write like write_file: read the file in full first (NOT_READ otherwise), and it fails with STALE_FILE if the file changed since your read; over a file that does not exist (deleted) no read is needed. The content it replaces is kept in history, so a restore can itself be undone. Restoring a version marked absent deletes the file. dry_run returns the diff without writing.`

type restoreArgs struct {
	Path         *string                 `json:"path"`
	Version      *string                 `json:"version"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) restoreFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a restoreArgs
	if err := decodeArgs("restore_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("restore_file", "path")
	}
	if a.Version == nil || *a.Version == "" {
		return nil, missing("restore_file", "version")
	}
	res, err := t.s.Restore(ctx, *a.Path, *a.Version, &editguard.RestoreOptions{Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return changeOutput("Restored version "+*a.Version+" of", res), nil
}
