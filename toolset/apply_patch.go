package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/udiff"
)

var applyPatchTool = &toolDef{
	name: "apply_patch", title: "Apply patch",
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

Each hunk must match exactly one place in its file (give context lines, or an @@ line naming the function or class); lines match exactly, or else ignoring trailing whitespace, curly quotes or line-number prefixes (reported). You must have read every existing file the patch changes (a partial read is enough, except to delete); a file changed since your read fails with STALE_FILE, unless every hunk of it replaces lines that change left alone: then the hunks are applied on top of it, and the result says so and shows the change. Adding or moving onto an existing path is refused. A name an added or moved file creates that is not portable (Windows-reserved, a character among <>:"|?*, a trailing dot or space, a case twin of a name beside it) gets a warning, or INVALID_ARGUMENT if the workspace refuses such names. Any refusal changes nothing and names the file and hunk. Files keep their encoding and line endings. Everything replaced is kept in history, and undo_patch with the transaction id the result names undoes the whole patch. The result is text: one line per file (after about 4,000 characters of them, the others are counted), then the diffs, cut after about 4,000 characters.`

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
	text, meta := patchSummary(res, "")
	return &Output{Structured: res, Text: text, Meta: meta}, nil
}

// patchMeta is a patch's result without the diffs, listing the files and
// warnings that its text lists; FilesOmitted and WarningsOmitted count the
// others (Output.Structured has them all).
type patchMeta struct {
	editguard.PatchResult
	FilesTotal      int `json:"files_total,omitempty"`
	FilesOmitted    int `json:"files_omitted,omitempty"`
	WarningsOmitted int `json:"warnings_omitted,omitempty"`
}

// Limits of a patch's text besides DiffBudget.
const (
	// maxRelaxedHunks is how many of a file's hunks that matched only
	// after relaxing its line names; the others are counted.
	maxRelaxedHunks = 5
	// warningBudget is about the most characters of warnings listed.
	warningBudget = 2000
)

// patchSummary renders a patch (undone "") or the undoing of transaction
// undone for a model, and returns its meta: a line per file within
// ListBudget, then how many more files there are, of each kind, and where
// to see them; the warnings within warningBudget; then the diffs within
// DiffBudget. When the files do not all fit, those whose hunks matched
// only after relaxing are listed before any other, and when the diffs do
// not, theirs come first.
func patchSummary(res *editguard.PatchResult, undone string) (string, *patchMeta) {
	var b strings.Builder
	b.WriteString(patchHeading(res, undone))
	lines := make([]string, len(res.Files))
	relaxed := make([]bool, len(res.Files))
	for i, f := range res.Files {
		lines[i], relaxed[i] = patchFileLine(f)
	}
	meta := &patchMeta{PatchResult: editguard.PatchResult{TxID: res.TxID, DryRun: res.DryRun}}
	listPatchFiles(&b, meta, res, undone, lines, shownFiles(lines, relaxed))
	listWarnings(&b, meta, res.Warnings)
	if diffs := patchDiffs(res.Files, relaxed); diffs != "" {
		d, _ := udiff.Bound(diffs, DiffBudget)
		b.WriteString("\n" + d)
	}
	if ext := externalDiffs(res.Files); ext != "" {
		d, _ := udiff.Bound(ext, DiffBudget/2)
		b.WriteString("\nThe other changes, since your last read, that the patch merged over:\n" + d)
	}
	return b.String(), meta
}

// patchHeading is the first line of a patch's text, saying whether it was
// written or only checked, and whether it undid a transaction.
func patchHeading(res *editguard.PatchResult, undone string) string {
	switch {
	case res.DryRun && undone != "":
		return fmt.Sprintf("Dry run, nothing was written. Undoing transaction %s would change:\n", undone)
	case res.DryRun:
		return "Dry run, nothing was written. The patch would change:\n"
	case undone != "":
		return fmt.Sprintf("Undid transaction %s on %d files (transaction %s):\n", undone, len(res.Files), res.TxID)
	default:
		return fmt.Sprintf("Applied the patch to %d files (transaction %s):\n", len(res.Files), res.TxID)
	}
}

// shownFiles chooses the files whose lines are listed: all of them if they
// fit in ListBudget, else, in order, those whose hunks matched only after
// relaxing and then the others, as long as they fit, so that the files a
// model must check are the last to be left out.
func shownFiles(lines []string, relaxed []bool) []bool {
	shown := make([]bool, len(lines))
	total := 0
	for _, l := range lines {
		total += len(l)
	}
	if total <= ListBudget {
		for i := range shown {
			shown[i] = true
		}
		return shown
	}
	used := 0
	for _, first := range []bool{true, false} {
		for i := range lines {
			if relaxed[i] == first && !shown[i] && used+len(lines[i]) <= ListBudget {
				shown[i] = true
				used += len(lines[i])
			}
		}
	}
	return shown
}

// listPatchFiles writes the lines of the shown files and adds them, without
// their diffs, to meta; then, if some are not shown, how many of each kind
// and where to see them, so that a long patch's result stays bounded
// without hiding that it changed more.
func listPatchFiles(b *strings.Builder, meta *patchMeta, res *editguard.PatchResult, undone string, lines []string, shown []bool) {
	omitted := map[string]int{}
	for i, f := range res.Files {
		if !shown[i] {
			omitted[f.Op]++
			continue
		}
		b.WriteString(lines[i])
		f.Diff, f.ExternalDiff = "", ""
		meta.Files = append(meta.Files, f)
	}
	n := len(res.Files) - len(meta.Files)
	if n <= 0 {
		return
	}
	meta.FilesTotal, meta.FilesOmitted = len(res.Files), n
	var kinds []string
	for _, op := range []string{"update", "add", "delete", "move", "undo"} {
		if c := omitted[op]; c > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", c, opWords[op]))
		}
	}
	fmt.Fprintf(b, "... and %d more files, not listed here (%s).", n, strings.Join(kinds, ", "))
	if !res.DryRun {
		tool := "apply_patch"
		if undone != "" {
			tool = "undo_patch"
		}
		fmt.Fprintf(b, " file_history on a path shows its version from this transaction; `editguard log --tool %s --json` lists every file (the records with \"strategy\": \"transaction %s\").", tool, res.TxID)
	}
	b.WriteString("\n")
}

// listWarnings writes the warnings within warningBudget (the first always,
// cut if it alone is over it) and adds them to meta, then counts the
// others, so that many warnings do not crowd out the diffs.
func listWarnings(b *strings.Builder, meta *patchMeta, warnings []string) {
	used := 0
	for i, w := range warnings {
		line := "Warning: " + w + "\n"
		if used+len(line) > warningBudget && i > 0 {
			meta.WarningsOmitted = len(warnings) - i
			fmt.Fprintf(b, "... and %d more warnings.\n", meta.WarningsOmitted)
			return
		}
		if len(line) > warningBudget {
			line = "Warning: " + cutText(w, warningBudget) + "\n"
		}
		b.WriteString(line)
		meta.Warnings = append(meta.Warnings, w)
		used += len(line)
	}
}

// externalDiffs joins the changes merged files had since the session's
// read.
func externalDiffs(files []editguard.PatchFile) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.ExternalDiff)
	}
	return b.String()
}

// patchDiffs joins the files' diffs, before they are cut to DiffBudget:
// when they are over it, the diffs of the files whose hunks matched only
// after relaxing come first, so that the ones to check are kept.
func patchDiffs(files []editguard.PatchFile, relaxed []bool) string {
	size := 0
	for _, f := range files {
		size += len(f.Diff)
	}
	var diffs strings.Builder
	for i, f := range files {
		if relaxed[i] && size > DiffBudget {
			diffs.WriteString(f.Diff)
		}
	}
	for i, f := range files {
		if !relaxed[i] || size <= DiffBudget {
			diffs.WriteString(f.Diff)
		}
	}
	return diffs.String()
}

// opWords name the kinds of change of a patch's files, as counted.
var opWords = map[string]string{"update": "updated", "add": "added", "delete": "deleted", "move": "moved", "undo": "put back"}

// patchFileLine is the line of one file of a patch, and whether some of
// its hunks matched only after relaxing.
func patchFileLine(f editguard.PatchFile) (string, bool) {
	var b strings.Builder
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
	if f.Merged {
		b.WriteString("; merged: the file had changed since your last read, and the hunks were applied on top of that change, which is kept (shown after the diffs)")
	}
	var relaxed []string
	n := 0
	for i, m := range f.Matched {
		if m == "exact" {
			continue
		}
		if n++; n <= maxRelaxedHunks {
			relaxed = append(relaxed, fmt.Sprintf("hunk %d: %s", i+1, m))
		}
	}
	if n > maxRelaxedHunks {
		relaxed = append(relaxed, fmt.Sprintf("%d more hunks", n-maxRelaxedHunks))
	}
	if len(relaxed) > 0 {
		fmt.Fprintf(&b, "; matched only after relaxing (%s), check the diff", strings.Join(relaxed, ", "))
	}
	b.WriteString("\n")
	return b.String(), n > 0
}

// cutText returns s cut to at most about max bytes, at a character
// boundary, with a note of how much was left out.
func cutText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s [cut: %d more bytes]", s[:i], len(s)-i)
}
