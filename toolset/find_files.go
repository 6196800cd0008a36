package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/rawpath"
)

var findFilesTool = &toolDef{
	name: "find_files", title: "Find files",
	description: findFilesDescription,
	input: `{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "description": "Glob: * ? [..] within a name, ** across directories, {a,b} either. Without a /, matches file names at any depth (\"*.go\"); with one, whole paths relative to path (\"cmd/**/main.go\")."},
    "path": {"type": "string", "description": "Directory to search, relative to the workspace root. Default: the root."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).findFiles,
}

const findFilesDescription = `Find files by name with a glob pattern ("*.go", "**/testdata/*.json"). Files that .gitignore excludes (at any level), .git directories and editguard's state are skipped; symlinks are not followed. The result is text: matching paths relative to the workspace root, one per line, sorted, at most 1,000 (a last line says if there were more).`

const maxFound = 1000

func (t *Toolset) findFiles(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Pattern *string `json:"pattern"`
		Path    *string `json:"path"`
	}
	if err := decodeArgs("find_files", raw, &a); err != nil {
		return nil, err
	}
	if a.Pattern == nil || *a.Pattern == "" {
		return nil, missing("find_files", "pattern")
	}
	if !validGlob(*a.Pattern) {
		return nil, invalidArgument("find_files", fmt.Sprintf("bad glob pattern %q", *a.Pattern), map[string]any{"argument": "pattern"})
	}
	display, err := t.startDir("find_files", a.Path)
	if err != nil {
		return nil, err
	}
	var found []string
	more := false
	err = t.ws.Walk(ctx, display, func(f *editguard.WalkFile) bool {
		if !matchGlob(*a.Pattern, f.Rel) {
			return true
		}
		if len(found) == maxFound {
			more = true
			return false
		}
		found = append(found, f.Path)
		return true
	})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if len(found) == 0 {
		fmt.Fprintf(&b, "No files %s match %s.\n", under(display), *a.Pattern)
	}
	for _, f := range found {
		b.WriteString(f + "\n")
	}
	if more {
		fmt.Fprintf(&b, "(more than %d files match; narrow the pattern or the path)\n", maxFound)
	}
	meta := map[string]any{"files": len(found), "truncated": more}
	// JSON shows each byte of a name that is not UTF-8 as U+FFFD; the
	// exact bytes of such names go beside the list.
	var exact []map[string]string
	for _, f := range found {
		if display, hexName := rawpath.Split(f); hexName != "" {
			exact = append(exact, map[string]string{"path": display, "path_hex": hexName})
		}
	}
	if exact != nil {
		meta["non_utf8"] = exact
	}
	return &Output{Structured: found, Text: b.String(), Meta: meta}, nil
}
