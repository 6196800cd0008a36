package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
)

var fileHistoryTool = &toolDef{
	name: "file_history", title: "File history",
	description: fileHistoryDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).fileHistory,
}

const fileHistoryDescription = `List the earlier versions of a file that editguard kept when it replaced, edited or restored it, newest first: version id, time, sha256, size and the operation that displaced it. A version marked absent records that the file did not exist. Use restore_file with a version id to put one back.`

// History is file_history's result.
type History struct {
	Path     string              `json:"path"`
	Versions []editguard.Version `json:"versions"`
}

func (t *Toolset) fileHistory(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("file_history", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("file_history", "path")
	}
	vs, err := t.ws.History(*a.Path)
	if err != nil {
		return nil, err
	}
	if vs == nil {
		vs = []editguard.Version{}
	}
	h := &History{Path: *a.Path, Versions: vs}
	var b strings.Builder
	if len(vs) == 0 {
		fmt.Fprintf(&b, "no earlier versions of %s are kept\n", *a.Path)
	}
	for _, v := range vs {
		sum := v.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		if v.Absent {
			fmt.Fprintf(&b, "%s\t%s\t%s\t(file did not exist)\n", v.ID, v.Time, v.Op)
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d bytes\tsha256 %s\n", v.ID, v.Time, v.Op, v.SizeBytes, sum)
	}
	return &Output{Structured: h, Text: b.String(), Meta: h}, nil
}
