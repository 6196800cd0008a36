package toolset

import "encoding/json"

// The descriptions below are written for a model: they say when to use a
// tool, what its result means, and how to recover from each refusal.

const preconditionSchema = `{
  "type": "object",
  "description": "Optional. What you expect on disk before the change, usually copied from read_file's result. When given, it replaces the check against your last read. Omit it in normal use.",
  "properties": {
    "expected_sha256": {"type": "string", "description": "SHA-256 (hex) of the file's bytes as returned by read_file."},
    "expected_mtime_ms": {"type": "integer", "description": "Modification time in milliseconds since the epoch."},
    "expected_size_bytes": {"type": "integer", "minimum": 0, "description": "Size of the file in bytes."},
    "require_all": {"type": "boolean", "description": "If true, all three expected_* values must be given and match."},
    "must_not_exist": {"type": "boolean", "description": "If true, the change only creates a new file and fails with STALE_FILE if the path exists."}
  },
  "additionalProperties": false
}`

const readFileDescription = `Read a text file in the workspace. The result is text: a header line with the path, the lines shown and the total, the size and the file's SHA-256 (and its encoding, byte order mark or CRLF line endings when it has them), then the lines numbered as "     N\tline". The number and the TAB are not part of the file: never copy them into old_string or content.

Always read a file before you change it: edit_file, write_file and restore_file refuse to change an existing file you have not read in this session (NOT_READ) and refuse if it changed after your last read (STALE_FILE). The read records the file's SHA-256 as your baseline; the latest read wins.

Without limit, a read returns as many whole lines as fit in about 25,000 characters; a last line in parentheses then says which lines were not shown and the offset to read on with. offset is the 1-based first line; limit asks for that many lines (up to 256 KiB of text). Lines longer than 2,000 bytes are cut, marked "… [line cut: N bytes, M shown]". A partial read is enough for edit_file, but write_file over an existing file needs a full read.
Files that are not UTF-8 (or UTF-16 with a BOM) fail with ENCODING: pass encoding (for example "gbk", "shift_jis", "windows-1252") to read them; later edits keep that encoding.`

const writeFileDescription = `Create a new file, or replace the whole content of an existing one.

Prefer edit_file for changing an existing file: it is shorter, and it cannot drop lines you did not mean to touch. Use write_file to create files or to rewrite a file completely. Write the complete content; placeholders like "// ... rest of code unchanged" are refused (PLACEHOLDER).

With mode "append" the content is added at the end and no read is needed. Otherwise an existing file must have been read in full (read_file without offset/limit) in this session, and must not have changed since:
- NOT_READ: you have not read the file (or read only part of it). Call read_file on it, then redo the write.
- STALE_FILE: the file changed after your last read (someone else edited it). The error shows the changes since your read when they are small: keep them, with edit_file (no new read needed), or call read_file before writing the whole file again. Do not retry blindly.
Missing parent directories are created. The file keeps its encoding and line endings (CRLF stays CRLF); write with LF newlines. Every replaced version is kept in history (file_history, restore_file). The result is text: what was done ("+N -M lines in K hunks"), the new size and SHA-256, the history version that keeps the old content, then the unified diff, cut after about 4,000 characters. dry_run returns the same without writing.`

const editFileDescription = `Change an existing file by exact string replacement. Preferred over write_file for existing files.

Each edit replaces old_string with new_string. old_string must match the file's text exactly, including whitespace and indentation, and must occur exactly once unless replace_all is true: copy it from read_file's output without the line-number prefix, with enough surrounding lines to be unique. Give one edit with old_string/new_string at the top level, or several in edits; they apply in order, each to the result of the previous, and either all apply or none.
To create a new file, use a single edit with an empty old_string.

Refusals and how to recover:
- NOT_READ: the file has not been read in this session. Call read_file on it, then redo the edit.
- STALE_FILE: the file changed after your last read. When the change is small the error shows it as a diff and your read is moved to the current content: redo the edit against it, without reading again. Otherwise call read_file and redo the edit.
- NO_MATCH: old_string is not in the file (details may list the closest lines). Read the file again and copy the text exactly.
- AMBIGUOUS_MATCH: old_string occurs several times (details list the lines). Add surrounding lines, or set replace_all.
- NO_CHANGE: old_string equals new_string.
The result is text: what was done ("+N -M lines in K hunks"), the new size and SHA-256, the history version that keeps the old content, then the unified diff, cut after about 4,000 characters. dry_run returns the same without writing.`

const listDirectoryDescription = `List the entries of a directory in the workspace: name, type (file, dir, symlink or other) and size in bytes for files. Entries are sorted by name. editguard's own state directory (.editguard) is not shown. path defaults to the workspace root.`

const fileInfoDescription = `Report whether a path exists and, for a regular file, its SHA-256, size and modification time, without reading its text. It does not count as a read: before changing a file, call read_file.`

const fileHistoryDescription = `List the earlier versions of a file that editguard kept when it replaced, edited or restored it, newest first: version id, time, sha256, size and the operation that displaced it. A version marked absent records that the file did not exist. Use restore_file with a version id to put one back.`

const deleteFileDescription = `Delete a file. Guarded like write_file: read the file in full first (NOT_READ otherwise); it fails with STALE_FILE if the file changed since your read. The deleted content is kept in history: the result names the version, and restore_file with it brings the file back. Use this instead of rm in a shell, which keeps nothing. dry_run shows what would be removed without deleting. The result is text: what was removed and the history version, then the diff, cut after about 4,000 characters.`

const moveFileDescription = `Move or rename a file, guarded. You must have read the source in this session (a partial read is enough), and it must not have changed since (NOT_READ, STALE_FILE). An existing destination is refused (STALE_FILE, reason created) unless overwrite is true, and then you must have read the destination in full. Missing directories of the destination are created. The move is atomic: the file is never lost or half-moved, even in a crash. History keeps what left the source and what the destination held, so restore_file can undo either side; your read follows the file to its new name. Use this instead of mv in a shell. The result is text: what moved where and the history versions (and, when overwriting, the diff of the destination, cut after about 4,000 characters).`

const restoreFileDescription = `Put an earlier version of a file (from file_history) back. This is a guarded write like write_file: read the file in full first (NOT_READ otherwise), and it fails with STALE_FILE if the file changed since your read; over a file that does not exist (deleted) no read is needed. The content it replaces is kept in history, so a restore can itself be undone. Restoring a version marked absent deletes the file. dry_run returns the diff without writing.`

const beginTurnDescription = `Forget every file read so far in this session. After it, each existing file must be read again before it is changed. Call it at the start of a new task when files may have changed while you were not looking.`

var schemas = map[string]json.RawMessage{
	"read_file": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root (or absolute inside it)."},
    "offset": {"type": "integer", "minimum": 0, "description": "1-based number of the first line to return; 0 or omitted means 1. Past the last line is an error."},
    "limit": {"type": "integer", "minimum": 0, "description": "Most lines to return; 0 or omitted means as many as fit in about 25,000 characters."},
    "encoding": {"type": "string", "description": "Legacy encoding of the file, e.g. gbk, shift_jis, windows-1252. Omit for UTF-8 and UTF-16 with a BOM."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	"write_file": json.RawMessage(`{
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
    "allow_placeholders": {"type": "boolean", "description": "Set only if the content really contains text like '... existing code ...' on purpose."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	"edit_file": json.RawMessage(`{
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
    "allow_placeholders": {"type": "boolean", "description": "Set only if new_string really contains text like '... existing code ...' on purpose."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	"list_directory": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory path, relative to the workspace root. Default: the root."}
  },
  "additionalProperties": false
}`),
	"file_info": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	"file_history": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	"delete_file": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return what would be removed without deleting."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	"move_file": json.RawMessage(`{
  "type": "object",
  "properties": {
    "source": {"type": "string", "description": "File to move, relative to the workspace root."},
    "destination": {"type": "string", "description": "New path, relative to the workspace root."},
    "overwrite": {"type": "boolean", "description": "Replace an existing destination (which you must have read in full). Default false."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and report without moving."}
  },
  "required": ["source", "destination"],
  "additionalProperties": false
}`),
	"restore_file": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path, relative to the workspace root."},
    "version": {"type": "string", "description": "Version id from file_history."},
    "precondition": ` + preconditionSchema + `,
    "dry_run": {"type": "boolean", "description": "If true, check and return the diff without writing."}
  },
  "required": ["path", "version"],
  "additionalProperties": false
}`),
	"begin_turn": json.RawMessage(`{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`),
}

// outputSchemas describe the structured results a model is shown (see
// Output): only the tools whose result is a small record have one.
var outputSchemas = map[string]json.RawMessage{
	"list_directory": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "entries": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
        "size_bytes": {"type": "integer"},
        "non_utf8": {"type": "boolean"},
        "name_hex": {"type": "string"}
      },
      "required": ["name", "type", "size_bytes"]
    }},
    "truncated": {"type": "boolean"}
  },
  "required": ["path", "entries"]
}`),
	"file_info": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "exists": {"type": "boolean"},
    "type": {"type": "string", "enum": ["file", "dir", "symlink", "other"]},
    "symlink": {"type": "boolean"},
    "sha256": {"type": "string"},
    "size_bytes": {"type": "integer"},
    "mtime_ms": {"type": "integer"}
  },
  "required": ["path", "exists", "size_bytes"]
}`),
	"file_history": json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "versions": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "version": {"type": "string"},
        "time": {"type": "string", "format": "date-time"},
        "sha256": {"type": "string"},
        "size_bytes": {"type": "integer"},
        "absent": {"type": "boolean"},
        "op": {"type": "string"}
      },
      "required": ["version", "time", "op"]
    }}
  },
  "required": ["path", "versions"]
}`),
	"begin_turn": json.RawMessage(`{
  "type": "object",
  "properties": {"cleared": {"type": "boolean"}},
  "required": ["cleared"]
}`),
}
