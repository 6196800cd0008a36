package toolset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
)

var readMultipleFilesTool = &toolDef{
	name: "read_multiple_files", title: "Read several files",
	description: readMultipleFilesDescription,
	input: `{
  "type": "object",
  "properties": {
    "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50, "description": "File paths, relative to the workspace root."}
  },
  "required": ["paths"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).readMultipleFiles,
}

const readMultipleFilesDescription = `Read several text files at once. Each is read exactly as read_file reads it (a header line, then numbered lines) and counts as a read of that file for later changes; one file failing does not fail the others (its error is shown in its place). All files together stay within about 25,000 characters: each gets a share, and a file cut short says the offset to read on with read_file.`

// maxMultipleFiles bounds read_multiple_files' paths.
const maxMultipleFiles = 50

// MultipleRead is one file's outcome in read_multiple_files' Meta.
type MultipleRead struct {
	Path       string `json:"path"`
	SHA256     string `json:"sha256,omitempty"`
	TotalLines int    `json:"total_lines,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	NextOffset int    `json:"next_offset,omitempty"`
	Error      string `json:"error,omitempty"` // the error code
}

func (t *Toolset) readMultipleFiles(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Paths []string `json:"paths"`
	}
	if err := decodeArgs("read_multiple_files", raw, &a); err != nil {
		return nil, err
	}
	if len(a.Paths) == 0 {
		return nil, missing("read_multiple_files", "paths")
	}
	if len(a.Paths) > maxMultipleFiles {
		return nil, invalidArgument("read_multiple_files", fmt.Sprintf("at most %d paths at once, got %d", maxMultipleFiles, len(a.Paths)), nil)
	}
	var b strings.Builder
	var reads []MultipleRead
	for i, p := range a.Paths {
		// Each file gets an equal share of what is left, so a short
		// file leaves more for the ones after it.
		share := (ReadBudget - readOverhead - b.Len()) / (len(a.Paths) - i)
		r := MultipleRead{Path: p}
		res, err := t.s.Read(ctx, p, &editguard.ReadOptions{MaxBytes: max(share, 1), MaxLineBytes: MaxLineBytes, LineCost: lineNumberWidth})
		if i > 0 {
			b.WriteString("\n")
		}
		if err != nil {
			e := asError(err)
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return nil, err
			}
			r.Error = string(e.Code)
			b.WriteString(ErrorText(e))
		} else {
			r.SHA256, r.TotalLines, r.Truncated, r.NextOffset = res.SHA256, res.TotalLines, res.Truncated, res.NextOffset
			b.WriteString(numberLines(res, 1))
		}
		reads = append(reads, r)
	}
	return &Output{Structured: reads, Text: b.String(), Meta: map[string]any{"files": reads}}, nil
}
