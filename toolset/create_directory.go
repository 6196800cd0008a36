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
  "properties": {"path": {"type": "string"}, "created": {"type": "boolean"}, "warnings": {"type": "array", "items": {"type": "string"}}},
  "required": ["path", "created"]
}`,
	annotations: Annotations{Idempotent: true},
	run:         (*Toolset).createDirectory,
}

const createDirectoryDescription = `Create a directory in the workspace, with any missing parents (like mkdir -p). A directory that already exists is not an error (created is false). A new name that is not portable to other systems (Windows-reserved like CON, a character among <>:"|?* or a control character, a trailing dot or space, a case or Unicode-normalization twin of a name beside it) gets a warning, or INVALID_ARGUMENT if the workspace refuses such names. Protected paths (.git of any repository, editguard's .editguard) are refused with PROTECTED_PATH. write_file and move_file create missing directories themselves; use this for an empty directory.`

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
	for _, w := range res.Warnings {
		text += fmt.Sprintf("Warning: %s\n", w)
	}
	return &Output{Structured: res, Text: text}, nil
}
