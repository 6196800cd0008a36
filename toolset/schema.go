package toolset

// Each tool's description, written for a model, says when to use it, what
// its result shows and how to recover from each refusal; it lives in the
// tool's file with its schemas. preconditionSchema is shared by the tools
// that change files.

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
