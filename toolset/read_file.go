package toolset

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/editguard/editguard"
)

var readFileTool = &toolDef{
	name: "read_file", title: "Read file",
	description: readFileDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root (or absolute inside it)."},
    "offset": {"type": "integer", "minimum": 0, "description": "1-based number of the first line to return; 0 or omitted means 1. Past the last line is an error."},
    "limit": {"type": "integer", "minimum": 0, "description": "Most lines to return; 0 or omitted means as many as fit in about 25,000 characters."},
    "max_chars": {"type": "integer", "minimum": 4000, "maximum": 50000, "description": "Most characters this read returns, header included; default 25000, at most 50000. Raise it only to read a large file in fewer calls."},
    "encoding": {"type": "string", "description": "Legacy encoding of the file, e.g. gbk, shift_jis, windows-1252. Omit for UTF-8 and UTF-16 with a BOM."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).readFile,
}

const readFileDescription = `Read a text file in the workspace. The result is text: a header line with the path, the lines shown and the total, the size and the file's SHA-256 ("sha256 being computed" when a page of a large file is shown before the file is hashed; a change after it waits for the hash), its encoding, byte order mark or CRLF line endings when it has them, then the lines numbered as "     N\tline". The number and the TAB are not part of the file: never copy them into old_string or content.

Always read a file before you change it: edit_file, write_file and restore_file refuse to change an existing file you have not read in this session (NOT_READ) and refuse if it changed after your last read (STALE_FILE). The read records the file's SHA-256 as your baseline; the latest read wins.

Without limit, a read returns as many whole lines as fit in about 25,000 characters; a last line in parentheses then says which lines were not shown and the offset to read on with. offset is the 1-based first line; limit asks for that many lines (up to 256 KiB of text). max_chars (up to 50,000) sets the size of a page instead of 25,000. Lines longer than 2,000 bytes are cut, marked "… [line cut: N bytes, M shown]". A partial read is enough for edit_file, but write_file over an existing file needs a full read.
Files that are not UTF-8 (or UTF-16 with a BOM) fail with ENCODING: pass encoding (for example "gbk", "shift_jis", "windows-1252") to read them; later edits keep that encoding.`

type readArgs struct {
	Path     *string `json:"path"`
	Offset   int     `json:"offset"`
	Limit    int     `json:"limit"`
	MaxChars int     `json:"max_chars"`
	Encoding string  `json:"encoding"`
}

func (t *Toolset) readFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a readArgs
	if err := decodeArgs("read_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("read_file", "path")
	}
	if a.Offset < 0 || a.Limit < 0 {
		return nil, invalidArgument("read_file", "offset and limit must not be negative", nil)
	}
	if err := checkMaxChars("read_file", a.MaxChars); err != nil {
		return nil, err
	}
	// Without a limit the read keeps within ReadBudget, or the max_chars
	// asked for: the header and the notes take what is left of it after
	// the numbered lines, each of which costs its bytes and
	// lineNumberWidth.
	o := &editguard.ReadOptions{Offset: a.Offset, Limit: a.Limit, Encoding: a.Encoding,
		MaxBytes: ReadBudget - readOverhead, MaxLineBytes: MaxLineBytes, LineCost: lineNumberWidth}
	switch {
	case a.MaxChars > 0:
		// max_chars holds whatever the lines are: the last line may start
		// just under the cap and run to MaxLineBytes, and the header
		// repeats the path. Bytes are never fewer than characters.
		o.MaxBytes = max(a.MaxChars-readOverhead-len(*a.Path)-lastLineRoom, 1)
	case a.Limit > 0:
		o.MaxBytes = MaxReadBytes
	}
	res, err := t.s.Read(ctx, *a.Path, o)
	if err != nil {
		return nil, err
	}
	return &Output{Structured: res, Text: numberLines(res, max(a.Offset, 1)), Meta: readMeta(res)}, nil
}

// readMeta is res without its content, which is the bulk of it and would
// otherwise be encoded and decoded again only to be dropped.
func readMeta(res *editguard.ReadResult) map[string]any {
	c := *res
	c.Content = ""
	return without(&c, "content")
}

// readOverhead is kept free of lines in ReadBudget, for the header (with a
// long path) and the notes.
const readOverhead = 1000

// lastLineRoom is what the last line of a read may take past the byte cap
// on the lines: its number, MaxLineBytes and the marker of a cut line.
const lastLineRoom = lineNumberWidth + MaxLineBytes + 64

// checkMaxChars refuses a max_chars (0: not given) outside [MinReadBudget,
// MaxReadBudget].
func checkMaxChars(tool string, n int) error {
	if n == 0 || n >= MinReadBudget && n <= MaxReadBudget {
		return nil
	}
	e := invalidArgument(tool, fmt.Sprintf("max_chars is %d: it must be between %d and %d", n, MinReadBudget, MaxReadBudget),
		map[string]any{"max_chars": n, "max": MaxReadBudget, "min": MinReadBudget})
	e.RecoveryHint = fmt.Sprintf("call again with max_chars at most %d (or without it, for %d), and read the rest with offset", MaxReadBudget, ReadBudget)
	return e
}
