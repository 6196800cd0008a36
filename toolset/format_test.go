package toolset_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// TestErrorTextFileStates checks how ErrorText renders the file states an
// error carries (details.actual, details.expected): as one readable line
// each, never as JSON, and without repeating a hash another line states.
func TestErrorTextFileStates(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"b.txt": "not read\n", "gone.txt": "one\n", "c.txt": "three\n"})
	ts := newToolset(ws, nil)

	noJSON := func(name, text string) {
		t.Helper()
		if strings.ContainsAny(text, "{}") {
			t.Errorf("%s: the text carries JSON:\n%s", name, text)
		}
	}

	// NOT_READ: the file as it is now.
	e := wantCode(t, ts, "edit_file", `{"path":"b.txt","old_string":"not","new_string":"now"}`, editguard.CodeNotRead)
	text := toolset.ErrorText(e)
	want := "NOT_READ b.txt: file exists but has not been read in this session\n" +
		"actual: exists, 9 bytes, sha256 " + sha256hex("not read\n") + "\n" +
		"hint: call read_file on b.txt first, then redo the change\n"
	if text != want {
		t.Errorf("NOT_READ text:\n%s\nwant:\n%s", text, want)
	}
	noJSON("NOT_READ", text)

	// STALE_FILE of a deleted file: no empty current hash.
	mustCall(t, ts, "read_file", `{"path":"gone.txt"}`)
	if err := os.Remove(filepath.Join(ws.Dir(), "gone.txt")); err != nil {
		t.Fatal(err)
	}
	e = wantCode(t, ts, "edit_file", `{"path":"gone.txt","old_string":"one","new_string":"1"}`, editguard.CodeStaleFile)
	text = toolset.ErrorText(e)
	if !strings.Contains(text, "\nactual: does not exist\n") || strings.Contains(text, "current_sha256") || strings.Contains(text, "current_size_bytes") {
		t.Errorf("STALE_FILE (deleted) text:\n%s\nwant \"actual: does not exist\" and no current hash or size", text)
	}
	noJSON("STALE_FILE deleted", text)

	// STALE_FILE of an explicit precondition: what was expected against
	// what is there, the modification time only when it was expected.
	zero := strings.Repeat("0", 64)
	e = wantCode(t, ts, "write_file", fmt.Sprintf(`{"path":"c.txt","content":"x\n","precondition":{"expected_sha256":%q,"expected_size_bytes":4}}`, zero), editguard.CodeStaleFile)
	text = toolset.ErrorText(e)
	for _, line := range []string{
		"\nactual: exists, 6 bytes, sha256 " + sha256hex("three\n") + "\n",
		"\nexpected: 4 bytes, sha256 " + zero + "\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("STALE_FILE (precondition) text lacks %q:\n%s", line[1:], text)
		}
	}
	if strings.Contains(text, "current_sha256") || strings.Contains(text, "mtime") {
		t.Errorf("STALE_FILE (precondition) text repeats the current hash or shows a time nobody expected:\n%s", text)
	}
	noJSON("STALE_FILE precondition", text)
	info := mustCall(t, ts, "file_info", `{"path":"c.txt"}`).Structured.(*toolset.FileInfo)
	e = wantCode(t, ts, "write_file", fmt.Sprintf(`{"path":"c.txt","content":"x\n","precondition":{"expected_mtime_ms":%d}}`, info.MtimeMS+1), editguard.CodeStaleFile)
	text = toolset.ErrorText(e)
	if !strings.Contains(text, fmt.Sprintf(", mtime_ms %d\n", info.MtimeMS)) || !strings.Contains(text, fmt.Sprintf("\nexpected: mtime_ms %d\n", info.MtimeMS+1)) {
		t.Errorf("STALE_FILE (mtime precondition) text does not set the times side by side:\n%s", text)
	}
	noJSON("STALE_FILE mtime precondition", text)
}

// TestDeleteSummary checks that delete_file's text summarises the deletion
// (what was removed, the history version, how to restore it) without
// repeating the content, which the model read before deleting; the
// structured result keeps the diff for programs.
func TestDeleteSummary(t *testing.T) {
	t.Parallel()
	var content strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&content, "line %03d of the file to delete\n", i)
	}
	ws := newWorkspace(t, map[string]string{"doomed.txt": content.String()})
	ts := newToolset(ws, nil)
	mustCall(t, ts, "read_file", `{"path":"doomed.txt"}`)

	dry := mustCall(t, ts, "delete_file", `{"path":"doomed.txt","dry_run":true}`)
	if strings.Contains(dry.Text, "line 050") || !strings.HasPrefix(dry.Text, "Dry run, nothing was written. Would have: Deleted doomed.txt:") {
		t.Errorf("dry run text:\n%s", dry.Text)
	}

	out := mustCall(t, ts, "delete_file", `{"path":"doomed.txt"}`)
	res := out.Structured.(*editguard.Result)
	want := fmt.Sprintf("Deleted doomed.txt: the file was removed (-100 lines).\n"+
		"Its content is kept as version %s: restore_file with path doomed.txt and version %s brings the file back.\n", res.BackupVersion, res.BackupVersion)
	if res.BackupVersion == "" || out.Text != want {
		t.Errorf("delete_file text:\n%s\nwant:\n%s", out.Text, want)
	}
	if !res.Deleted || !strings.Contains(res.Diff, "-line 050 of the file to delete\n") {
		t.Errorf("structured result = %+v, want the deletion with its diff", res)
	}
	if m, ok := out.Meta.(map[string]any); !ok || m["backup_version"] != res.BackupVersion || m["diff"] != nil {
		t.Errorf("Meta = %v, want the result without its diff", out.Meta)
	}

	// The restore the text names brings the file back.
	mustCall(t, ts, "restore_file", fmt.Sprintf(`{"path":"doomed.txt","version":%q}`, res.BackupVersion))
	if got, _ := os.ReadFile(filepath.Join(ws.Dir(), "doomed.txt")); string(got) != content.String() {
		t.Errorf("after restore_file doomed.txt = %q", got)
	}
}
