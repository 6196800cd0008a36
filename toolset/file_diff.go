package toolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/editguard/editguard/internal/udiff"
)

var fileDiffTool = &toolDef{
	name: "file_diff", title: "File diff",
	description: fileDiffDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "version": {"type": "string", "description": "A version id from file_history: show what changed from it to the current file."},
    "against_path": {"type": "string", "description": "Another file: show what changed from it to this one."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).fileDiff,
}

const fileDiffDescription = `Show a unified diff of a file against one of its history versions (version, from file_history) or against another file (against_path): the changes that lead from that version or file to the current file. Give exactly one of the two. It changes nothing and does not count as a read. Diffs longer than about 25,000 characters are cut after whole hunks.`

func (t *Toolset) fileDiff(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Path        *string `json:"path"`
		Version     string  `json:"version"`
		AgainstPath string  `json:"against_path"`
	}
	if err := decodeArgs("file_diff", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("file_diff", "path")
	}
	var (
		d    string
		err  error
		from string
	)
	switch {
	case (a.Version == "") == (a.AgainstPath == ""):
		return nil, invalidArgument("file_diff", "give exactly one of version and against_path", nil)
	case a.Version != "":
		d, err = t.ws.VersionDiff(*a.Path, a.Version)
		from = "version " + a.Version
	default:
		d, err = t.ws.PathDiff(*a.Path, a.AgainstPath)
		from = a.AgainstPath
	}
	if err != nil {
		return nil, err
	}
	if d == "" {
		return &Output{Structured: map[string]any{"path": *a.Path, "same": true}, Text: fmt.Sprintf("%s is the same as %s.\n", *a.Path, from)}, nil
	}
	bounded, _ := udiff.Bound(d, ReadBudget-readOverhead)
	text := fmt.Sprintf("Changes from %s to %s: %s.\n\n%s", from, *a.Path, udiff.Count(d), bounded)
	return &Output{Structured: map[string]any{"path": *a.Path, "diff": d}, Text: text}, nil
}
