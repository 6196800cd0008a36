package toolset_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// TestPatchResultWithinBudget applies a patch of 3,000 files: its text
// lists files within ListBudget, counts the others and says where to see
// them, and keeps its diffs within DiffBudget, so the whole text stays far
// under ReadBudget. The one file whose hunk matched only after relaxing is
// listed, and its diff shown, although it comes last. The structured result keeps every file;
// the meta lists those the text lists.
func TestPatchResultWithinBudget(t *testing.T) {
	const n = 3000
	last := "pkg/last.txt"
	ws := newWorkspace(t, map[string]string{last: "first line\nvalue   \nlast line\n"})
	ts := newToolset(ws, nil)
	mustCall(t, ts, "read_file", `{"path":"pkg/last.txt"}`)
	out := mustCall(t, ts, "apply_patch", patchArgs(t, addPatch("pkg", n-1)+
		"*** Update File: pkg/last.txt\n@@\n first line\n-value\n+value changed\n"))
	res := out.Structured.(*editguard.PatchResult)
	if len(res.Files) != n {
		t.Fatalf("the structured result has %d files, want %d", len(res.Files), n)
	}
	checkPatchText(t, "apply_patch", out, n, fmt.Sprintf("Applied the patch to %d files (transaction %s)", n, res.TxID))
	if !strings.Contains(out.Text, "\n- updated "+last+" (") || !strings.Contains(out.Text, "matched only after relaxing (hunk 1: trailing_whitespace)") {
		t.Errorf("apply_patch text does not list %s, whose hunk matched only after relaxing:\n%.3000s", last, out.Text)
	}
	if !strings.Contains(out.Text, "+++ b/"+last+"\n") {
		t.Errorf("apply_patch text does not show the diff of %s, whose hunk matched only after relaxing:\n%.3000s", last, out.Text)
	}
}

// TestUndoPatchResultWithinBudget undoes a patch of 300 files, in a dry run
// and then for real: each text keeps within the budgets as apply_patch's
// does, and names the transaction undone.
func TestUndoPatchResultWithinBudget(t *testing.T) {
	const n = 300
	ws := newWorkspace(t, nil)
	ts := newToolset(ws, nil)
	tx := mustCall(t, ts, "apply_patch", patchArgs(t, addPatch("new", n))).Structured.(*editguard.PatchResult).TxID
	dry := mustCall(t, ts, "undo_patch", fmt.Sprintf(`{"tx":%q,"dry_run":true}`, tx))
	checkPatchText(t, "undo_patch", dry, n, fmt.Sprintf("Dry run, nothing was written. Undoing transaction %s would change:", tx))
	undo := mustCall(t, ts, "undo_patch", fmt.Sprintf(`{"tx":%q}`, tx))
	checkPatchText(t, "undo_patch", undo, n, fmt.Sprintf("Undid transaction %s on %d files", tx, n))
}

// addPatch returns the lines of a patch that add n files to dir.
func addPatch(dir string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "*** Add File: %s/file%04d.txt\n+file %d\n", dir, i, i)
	}
	return b.String()
}

// patchArgs returns apply_patch's arguments for a patch of body.
func patchArgs(t *testing.T, body string) string {
	t.Helper()
	args, err := json.Marshal(map[string]any{"patch": "*** Begin Patch\n" + body + "*** End Patch\n"})
	if err != nil {
		t.Fatal(err)
	}
	return string(args)
}

// checkPatchText checks the text and meta of a patch's result of n files.
func checkPatchText(t *testing.T, tool string, out *toolset.Output, n int, head string) {
	t.Helper()
	const budget = 10000 // ListBudget and DiffBudget, with the header and the notes
	chars := utf8.RuneCountInString(out.Text)
	listed := strings.Count(out.Text, "\n- ")
	t.Logf("%s of %d files: %d characters, %d files listed", tool, n, chars, listed)
	if chars > budget {
		t.Errorf("%s text has %d characters, over %d", tool, chars, budget)
	}
	if !strings.HasPrefix(out.Text, head) {
		t.Errorf("%s text does not start with %q:\n%.300s", tool, head, out.Text)
	}
	more := fmt.Sprintf("... and %d more files, not listed here (%d ", n-listed, n-listed)
	if listed == 0 || !strings.Contains(out.Text, more) {
		t.Errorf("%s text does not list some files and say %q:\n%.3000s", tool, more, out.Text)
	}
	if where := "editguard log --tool " + tool + " --json"; !strings.Contains(out.Text, where) && !strings.HasPrefix(out.Text, "Dry run") {
		t.Errorf("%s text does not say where to see the files not listed (%s):\n%.3000s", tool, where, out.Text)
	}
	if !strings.Contains(out.Text, "[diff cut here: ") {
		t.Errorf("%s text does not cut its diffs", tool)
	}
	meta, err := json.Marshal(out.Meta)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Files        []map[string]any `json:"files"`
		FilesTotal   int              `json:"files_total"`
		FilesOmitted int              `json:"files_omitted"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != listed || m.FilesTotal != n || m.FilesOmitted != n-listed {
		t.Errorf("%s meta lists %d files of %d, %d omitted; want %d of %d, %d omitted", tool, len(m.Files), m.FilesTotal, m.FilesOmitted, listed, n, n-listed)
	}
	if len(meta) > toolset.ReadBudget {
		t.Errorf("%s meta has %d bytes, over %d", tool, len(meta), toolset.ReadBudget)
	}
}
