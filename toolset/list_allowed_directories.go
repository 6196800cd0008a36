package toolset

import (
	"context"
	"encoding/json"
	"fmt"
)

var listAllowedDirectoriesTool = &toolDef{
	name: "list_allowed_directories", title: "Workspace root",
	description: listAllowedDirectoriesDescription,
	input:       `{"type": "object", "properties": {}, "additionalProperties": false}`,
	output: `{
  "type": "object",
  "properties": {"directories": {"type": "array", "items": {"type": "string"}}},
  "required": ["directories"]
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).listAllowedDirectories,
}

const listAllowedDirectoriesDescription = `Show the directory the tools work in: the workspace root. Paths given to the other tools are relative to it (absolute paths inside it work too); nothing outside it can be read or changed, and .git directories and editguard's .editguard cannot be changed.`

func (t *Toolset) listAllowedDirectories(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct{}
	if err := decodeArgs("list_allowed_directories", raw, &a); err != nil {
		return nil, err
	}
	dir := t.ws.Dir()
	return &Output{
		Structured: map[string]any{"directories": []string{dir}},
		Text:       fmt.Sprintf("The workspace root is %s; paths are relative to it.\n", dir),
	}, nil
}
