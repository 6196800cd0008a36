package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/editguard/editguard"
)

var writeFileTool = &toolDef{
	name: "write_file", title: "Write file",
	description: writeFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "content": {"type": "string", "description": "The complete new content of the file, with LF newlines."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return the diff without writing."},
    "line_ending": {"type": "string", "enum": ["lf", "crlf"], "description": "Convert the whole file to these line endings. Omit to keep the file's own."},
    "encoding": {"type": "string", "description": "Encoding to write. Omit to keep the file's own (UTF-8 for new files)."},
    "bom": {"type": "boolean", "description": "Start a new UTF-8 file with a byte order mark. Default false; existing files keep theirs."},
    "mode": {"type": "string", "enum": ["overwrite", "create", "append"], "description": "overwrite (default): replace the whole file, or create it. create: only create; fails with STALE_FILE (reason created) if the path exists. append: add content at the end (no read needed, since nothing is discarded; the file keeps its encoding and line endings)."},
    "allow_placeholders": {"type": "boolean", "description": "Set only if the content really contains text like '... existing code ...' on purpose."},
    "create_parents": {"type": "boolean", "description": "Create missing parent directories (default true). false: a missing directory fails with NOT_FOUND naming it."},
    "file_mode": {"type": "string", "pattern": "^(0o?)?[0-7]{1,3}$", "description": "Permission bits of a new file, in octal, such as \"0644\" or \"0600\" (0000 to 0777; no setuid, setgid or sticky bit). Applied exactly, the umask aside. Omit for the usual 0666 less the umask; an existing file keeps its mode."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`,
	annotations: Annotations{Destructive: true, Idempotent: true},
	run:         (*Toolset).writeFile,
}

const writeFileDescription = `Create a new file, or replace the whole content of an existing one.

Prefer edit_file for changing an existing file: it is shorter, and it cannot drop lines you did not mean to touch. Use write_file to create files or to rewrite a file completely. Write the complete content; placeholders like "// ... rest of code unchanged" are refused (PLACEHOLDER).

With mode "append" the content is added at the end and no read is needed. Otherwise an existing file must have been read in full (read_file without offset/limit) in this session, and must not have changed since:
- NOT_READ: you have not read the file (or read only part of it). Call read_file on it, then redo the write.
- STALE_FILE: the file changed after your last read (someone else edited it). The error shows the changes since your read when they are small: keep them, with edit_file (no new read needed), or call read_file before writing the whole file again. Do not retry blindly.
Missing parent directories are created unless create_parents is false. file_mode sets a new file's permissions (such as "0600"). The file keeps its encoding and line endings (CRLF stays CRLF); write with LF newlines. Every replaced version is kept in history (file_history, restore_file). A new name that is not portable (reserved on Windows like CON or aux.txt, a character among <>:"|?* or a control character or backslash, a trailing dot or space, over 255 bytes, or a twin of a name beside it differing only in case or Unicode normalization) gets a warning, or is refused with INVALID_ARGUMENT if the workspace says so. The result is text: what was done ("+N -M lines in K hunks"), the new size and SHA-256, the file's mode, encoding and line endings, the history version that keeps the old content, then the unified diff, cut after about 4,000 characters. dry_run returns the same without writing.`

type writeArgs struct {
	Path              *string                 `json:"path"`
	Content           *string                 `json:"content"`
	Precondition      *editguard.Precondition `json:"precondition"`
	DryRun            bool                    `json:"dry_run"`
	LineEnding        string                  `json:"line_ending"`
	Encoding          string                  `json:"encoding"`
	AllowPlaceholders bool                    `json:"allow_placeholders"`
	BOM               bool                    `json:"bom"`
	Mode              string                  `json:"mode"`
	CreateParents     *bool                   `json:"create_parents"`
	FileMode          *string                 `json:"file_mode"`
}

// parseFileMode reads file_mode, an octal string such as "0644".
func parseFileMode(s *string) (*uint32, error) {
	if s == nil {
		return nil, nil
	}
	digits := strings.TrimPrefix(*s, "0o")
	m, err := strconv.ParseUint(digits, 8, 32)
	if err != nil || digits == "" {
		return nil, invalidArgument("write_file", fmt.Sprintf("file_mode %q is not an octal mode such as \"0644\"", *s), map[string]any{"argument": "file_mode"})
	}
	mode := uint32(m)
	return &mode, nil
}

func (t *Toolset) writeFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a writeArgs
	if err := decodeArgs("write_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("write_file", "path")
	}
	if a.Content == nil {
		return nil, missing("write_file", "content")
	}
	mode, err := parseFileMode(a.FileMode)
	if err != nil {
		return nil, err
	}
	res, err := t.s.Write(ctx, *a.Path, *a.Content, &editguard.WriteOptions{
		Precondition: a.Precondition, DryRun: a.DryRun, LineEnding: a.LineEnding,
		Encoding: a.Encoding, AllowPlaceholders: a.AllowPlaceholders, BOM: a.BOM, Mode: a.Mode,
		CreateParents: a.CreateParents, FileMode: mode,
	})
	if err != nil {
		return nil, err
	}
	verb := "Wrote"
	switch {
	case res.Created:
		verb = "Created"
	case a.Mode == editguard.WriteAppend:
		verb = "Appended to"
	}
	return changeOutput(verb, res), nil
}
