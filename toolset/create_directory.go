package toolset

import (
	"context"
	"encoding/json"
	"fmt"
)

var createDirectoryTool = &toolDef{
	name: "create_directory", title: "Create directory",
	description: createDirectoryDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory path, relative to the workspace root. Missing parents are created too."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	output: `{
  "type": "object",
  "properties": {"path": {"type": "string"}, "created": {"type": "boolean"}},
  "required": ["path", "created"]
}`,
	annotations: Annotations{Idempotent: true},
	run:         (*Toolset).createDirectory,
}

const createDirectoryDescription = `Create a directory in the workspace, with any missing parents (like mkdir -p). A directory that already exists is not an error (created is false). Protected paths (.git of any repository, editguard's .editguard) are refused with PROTECTED_PATH. write_file and move_file create missing directories themselves; use this for an empty directory.`

func (t *Toolset) createDirectory(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("create_directory", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("create_directory", "path")
	}
	res, err := t.s.CreateDirectory(ctx, *a.Path)
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf("Created the directory %s.\n", res.Path)
	if !res.Created {
		text = fmt.Sprintf("The directory %s already exists.\n", res.Path)
	}
	return &Output{Structured: res, Text: text}, nil
}
