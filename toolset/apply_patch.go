package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/udiff"
)

func init() {
	register(&toolDef{
		order: 75, name: "apply_patch", title: "Apply patch",
		description: applyPatchDescription,
		input: `{
  "type": "object",
  "properties": {
    "patch": {"type": "string", "description": "The patch: the apply_patch format (*** Begin Patch ... *** End Patch) or a unified diff (git diff, diff -u)."},
    "dry_run": {"type": "boolean", "description": "If true, check every file and return the diffs without writing."}
  },
  "required": ["patch"],
  "additionalProperties": false
}`,
		annotations: Annotations{Destructive: true},
		run:         (*Toolset).applyPatch,
	})
}

const applyPatchDescription = `Change several files at once, entirely or not at all (even if the machine crashes midway). Give a patch in the apply_patch format or as a unified diff:

*** Begin Patch
*** Update File: src/app.py
@@ def greet():
-    print("hi")
+    print("hello")
*** Add File: docs/new.md
+# New
*** Delete File: old.txt
*** Update File: a.py
*** Move to: pkg/a.py
@@
 context line
-old line
+new line
*** End Patch

Each hunk must match exactly one place in its file (give context lines, or an @@ line naming the function or class); lines match exactly, or else ignoring trailing whitespace, curly quotes or line-number prefixes (reported). You must have read every existing file the patch changes (a partial read is enough, except to delete); a file changed since your read fails with STALE_FILE. Adding or moving onto an existing path is refused. Any refusal changes nothing and names the file and hunk. Files keep their encoding and line endings. Everything replaced is kept in history, and undo_patch with the transaction id the result names undoes the whole patch. The result is text: one line per file, then the diffs, cut after about 4,000 characters.`

func (t *Toolset) applyPatch(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Patch  *string `json:"patch"`
		DryRun bool    `json:"dry_run"`
	}
	if err := decodeArgs("apply_patch", raw, &a); err != nil {
		return nil, err
	}
	if a.Patch == nil || *a.Patch == "" {
		return nil, missing("apply_patch", "patch")
	}
	res, err := t.s.ApplyPatch(ctx, *a.Patch, &editguard.PatchOptions{DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	meta := *res
	meta.Files = nil
	for _, f := range res.Files {
		f.Diff = ""
		meta.Files = append(meta.Files, f)
	}
	return &Output{Structured: res, Text: patchText(res), Meta: &meta}, nil
}

// patchText summarises a patch for a model: a line per file, then the
// diffs within DiffBudget.
func patchText(res *editguard.PatchResult) string {
	var b, diffs strings.Builder
	if res.DryRun {
		b.WriteString("Dry run, nothing was written. The patch would change:\n")
	} else {
		fmt.Fprintf(&b, "Applied the patch to %d files (transaction %s):\n", len(res.Files), res.TxID)
	}
	for _, f := range res.Files {
		stats := udiff.Count(f.Diff)
		switch f.Op {
		case "add":
			fmt.Fprintf(&b, "- added %s (%s)", f.Path, stats)
		case "delete":
			fmt.Fprintf(&b, "- deleted %s (-%d lines)", f.Path, stats.Removed)
		case "move":
			fmt.Fprintf(&b, "- moved %s to %s (%s)", f.Path, f.MovedTo, stats)
		case "undo":
			fmt.Fprintf(&b, "- put back %s (%s)", f.Path, stats)
		default:
			fmt.Fprintf(&b, "- updated %s (%s)", f.Path, stats)
		}
		if f.BackupVersion != "" {
			fmt.Fprintf(&b, "; history %s", f.BackupVersion)
		}
		var relaxed []string
		for i, m := range f.Matched {
			if m != "exact" {
				relaxed = append(relaxed, fmt.Sprintf("hunk %d: %s", i+1, m))
			}
		}
		if len(relaxed) > 0 {
			fmt.Fprintf(&b, "; matched only after relaxing (%s), check the diff", strings.Join(relaxed, ", "))
		}
		b.WriteString("\n")
		diffs.WriteString(f.Diff)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "Warning: %s\n", w)
	}
	if diffs.Len() > 0 {
		d, _ := udiff.Bound(diffs.String(), DiffBudget)
		b.WriteString("\n" + d)
	}
	return b.String()
}
