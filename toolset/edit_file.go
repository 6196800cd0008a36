package toolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/editguard/editguard"
)

var editFileTool = &toolDef{
	name: "edit_file", title: "Edit file",
	description: editFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "old_string": {"type": "string", "description": "Exact text to replace (single edit form). Empty creates a new file."},
    "new_string": {"type": "string", "description": "Replacement text (single edit form)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string (single edit form)."},
    "edits": {
      "type": "array",
      "description": "Several edits, applied in order, all or none. Use instead of old_string/new_string.",
      "minItems": 1,
      "items": {
        "type": "object",
        "properties": {
          "old_string": {"type": "string", "description": "Exact text to replace."},
          "new_string": {"type": "string", "description": "Replacement text."},
          "replace_all": {"type": "boolean", "description": "Replace every occurrence."}
        },
        "required": ["old_string", "new_string"],
        "additionalProperties": false
      }
    },
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return the diff without writing."},
    "encoding": {"type": "string", "description": "Legacy encoding of the file. Omit to use the one it was read with."},
    "allow_placeholders": {"type": "boolean", "description": "Set only if new_string really contains text like '... existing code ...' on purpose."},
    "no_merge": {"type": "boolean", "description": "If true, refuse with STALE_FILE whenever the file changed since your read, instead of merging the edit over another change it does not touch."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true},
	run:         (*Toolset).editFile,
}

const editFileDescription = `Change an existing file by exact string replacement. Preferred over write_file for existing files.

Each edit replaces old_string with new_string. old_string must match the file's text exactly, including whitespace and indentation, and must occur exactly once unless replace_all is true: copy it from read_file's output without the line-number prefix, with enough surrounding lines to be unique. Give one edit with old_string/new_string at the top level, or several in edits; they apply in order, each to the result of the previous, and either all apply or none.
To create a new file, use a single edit with an empty old_string.

Refusals and how to recover:
- NOT_READ: the file has not been read in this session. Call read_file on it, then redo the edit.
- If the file changed after your last read but each old_string is still found exactly once and away from the other change, the edit is applied over it: the result says "merged" and shows the other change. no_merge: true refuses instead.
- STALE_FILE: the file changed after your last read in a way the edit cannot be merged over. When the change is small the error shows it as a diff and your read is moved to the current content: redo the edit against it, without reading again. Otherwise call read_file and redo the edit.
- NO_MATCH: old_string is not in the file (details may list the closest lines). Read the file again and copy the text exactly.
- AMBIGUOUS_MATCH: old_string occurs several times (details list the lines). Add surrounding lines, or set replace_all.
- NO_CHANGE: old_string equals new_string.
The result is text: what was done ("+N -M lines in K hunks"), the new size and SHA-256, the history version that keeps the old content, then the unified diff, cut after about 4,000 characters. dry_run returns the same without writing.`

type editArg struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

type editArgs struct {
	Path              *string                 `json:"path"`
	OldString         *string                 `json:"old_string"`
	NewString         *string                 `json:"new_string"`
	ReplaceAll        *bool                   `json:"replace_all"`
	Edits             []editArg               `json:"edits"`
	Precondition      *editguard.Precondition `json:"precondition"`
	DryRun            bool                    `json:"dry_run"`
	Encoding          string                  `json:"encoding"`
	AllowPlaceholders bool                    `json:"allow_placeholders"`
	NoMerge           bool                    `json:"no_merge"`
}

func (t *Toolset) editFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a editArgs
	if err := decodeArgs("edit_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("edit_file", "path")
	}
	single := a.OldString != nil || a.NewString != nil || a.ReplaceAll != nil
	var edits []editguard.Edit
	switch {
	case single && a.Edits != nil:
		return nil, invalidArgument("edit_file", "give either old_string/new_string or edits, not both", nil)
	case single:
		if a.OldString == nil {
			return nil, missing("edit_file", "old_string")
		}
		if a.NewString == nil {
			return nil, missing("edit_file", "new_string")
		}
		edits = []editguard.Edit{{OldString: *a.OldString, NewString: *a.NewString, ReplaceAll: a.ReplaceAll != nil && *a.ReplaceAll}}
	case len(a.Edits) > 0:
		for i, e := range a.Edits {
			if e.OldString == nil || e.NewString == nil {
				arg := fmt.Sprintf("edits[%d].old_string", i)
				if e.OldString != nil {
					arg = fmt.Sprintf("edits[%d].new_string", i)
				}
				return nil, missing("edit_file", arg)
			}
			edits = append(edits, editguard.Edit{OldString: *e.OldString, NewString: *e.NewString, ReplaceAll: e.ReplaceAll})
		}
	default:
		return nil, invalidArgument("edit_file", "no edit given: pass old_string and new_string, or a non-empty edits array", nil)
	}
	res, err := t.s.Edit(ctx, *a.Path, edits, &editguard.EditOptions{
		Precondition: a.Precondition, DryRun: a.DryRun, Encoding: a.Encoding, AllowPlaceholders: a.AllowPlaceholders,
		NoMerge: a.NoMerge,
	})
	if err != nil {
		return nil, err
	}
	verb := "Edited"
	if res.Created {
		verb = "Created"
	}
	return changeOutput(verb, res), nil
}
