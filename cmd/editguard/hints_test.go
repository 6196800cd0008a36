package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// toolWords are the MCP tool and argument names no CLI hint may use.
var toolWords = regexp.MustCompile(`read_file|write_file|edit_file|file_history|restore_file|list_directory|replace_all|old_string|new_string|allow_placeholders|require_all|\bedits array`)

func TestCLIHint(t *testing.T) {
	tests := []struct {
		code editguard.Code
		path string
		hint string
		want string
	}{
		{editguard.CodeNotRead, "a.go", "call read_file on a.go first, then redo the change",
			"run editguard read a.go first, then redo the change"},
		{editguard.CodeNotRead, "a.go", "call read_file on a.go without offset/limit, or use edit_file",
			"run editguard read a.go without --offset/--limit, or use editguard edit"},
		{editguard.CodeStaleFile, "a.go", "call read_file on a.go, then redo the change on top of what it holds now",
			"run editguard read a.go, then redo the change on top of what it holds now"},
		{editguard.CodeStaleFile, "a.go", "the change is too large to show here: call read_file on a.go (at least the changed lines), then redo your change on top of what it holds now",
			"the change is too large to show here: run editguard read a.go, then redo your change on top of what it holds now"},
		{editguard.CodeStaleFile, "a.go", "look at the changes, then redo your edit on top of the file as it is now (your read now covers them, so edit_file needs no new read)",
			"look at the changes, then redo your edit on top of the file as it is now (your read now covers them, so editguard edit needs no new read)"},
		{editguard.CodeStaleFile, "a.go", "look at the changes: to keep them, redo your change with edit_file (no new read needed), or call read_file on a.go before writing the whole file again",
			"look at the changes: to keep them, redo your change with editguard edit (no new read needed), or run editguard read a.go before writing the whole file again"},
		{editguard.CodeAmbiguousMatch, "a.go", "include more surrounding lines in old_string to make it unique, or set replace_all",
			"include more surrounding lines in --old to make it unique, or pass --all"},
		{editguard.CodeNoMatch, "my file.go", "read the file again and copy old_string exactly, including whitespace",
			"run editguard read 'my file.go' again and copy --old exactly, including whitespace"},
		{editguard.CodeInvalidArgument, "a.go", "list versions with file_history",
			"list the versions with editguard history a.go"},
		{editguard.CodeInvalidArgument, "a.go", "use one of the versions listed (newest first; file_history, or editguard history, lists them all)",
			"use one of the versions listed (newest first; editguard history a.go lists them all)"},
		{editguard.CodeInvalidArgument, "a.go", "supply all three values from read_file, or drop require_all",
			"pass --expect-sha256, --expect-mtime-ms and --expect-size (editguard read --json prints them), or drop --require-all"},
		{editguard.CodeInvalidArgument, "a.go", "pass the sha256 that read_file returned",
			"pass the sha256 that editguard read --json prints"},
		{editguard.CodeInvalidArgument, "a.go", "read a.go and pass the exact text to replace as old_string",
			"run editguard read a.go and pass the exact text to replace as --old"},
		{editguard.CodeInvalidArgument, "a.go", "an empty old_string only creates a new file, as the single edit",
			"an empty --old only creates a new file"},
		{editguard.CodeNotFound, "a.go", "check the path with list_directory",
			"check the path: it is relative to --root (default: the current directory)"},
		{editguard.CodeNotFound, "a.go", "to create a file, use write_file or an empty old_string",
			"to create a file, use editguard write, or editguard edit with an empty --old"},
		{editguard.CodePlaceholder, "a.go", "write out the full code instead of a placeholder, or set allow_placeholders if the text is meant literally",
			"write out the full code instead of a placeholder, or pass --allow-placeholders if the text is meant literally"},
		{editguard.CodeEncoding, "a.go", "pass the file's encoding with the encoding argument",
			"pass the file's encoding with --encoding"},
		{editguard.CodeEncoding, "a.go", "the file is not valid utf-8; it may be gbk or big5: pass encoding",
			"the file is not valid utf-8; it may be gbk or big5: pass --encoding"},
		{editguard.CodeRejected, "a.go", "ask the user what to change instead", "nothing was written"},
		{editguard.CodeBusy, "a.go", "retry shortly; if it persists, look for a stopped editguard process",
			"run the command again shortly; if it persists, look for a stopped editguard process"},
		{editguard.CodeNoSpace, "a.go", "free disk space (or quota), then retry; nothing was changed",
			"free disk space (or quota), then run the command again; nothing was changed"},
		{editguard.CodePermission, "my a.go", "ask the user to change the file's permissions, or leave the file as it is",
			"change the file's permissions (ls -l 'my a.go' shows them), or leave the file as it is"},
	}
	for _, tt := range tests {
		e := &editguard.Error{Code: tt.code, RecoveryHint: tt.hint, Details: map[string]any{"path": tt.path}}
		got := cliHint(e)
		if got != tt.want {
			t.Errorf("%s %q:\n got %q\nwant %q", tt.code, tt.hint, got, tt.want)
		}
		if toolWords.MatchString(got) {
			t.Errorf("%s: hint %q still speaks of MCP tools", tt.code, got)
		}
		if e.RecoveryHint != tt.hint {
			t.Errorf("cliHint changed the error's own hint to %q", e.RecoveryHint)
		}
	}
}

// TestPermissionDeniedHint checks how a PERMISSION_DENIED is told at the
// terminal: a read is told it may not read the file, and what to do, in
// shell words; a change keeps the library's message, its hint in the
// command line's words.
func TestPermissionDeniedHint(t *testing.T) {
	denied := func() *editguard.Error {
		return &editguard.Error{Code: editguard.CodePermission, Message: "permission denied: the file (or its directory) is not writable by this user",
			Details: map[string]any{"path": "np.txt"}, RecoveryHint: "ask the user to change the file's permissions, or leave the file as it is"}
	}
	var errb bytes.Buffer
	e := &env{stdout: io.Discard, stderr: &errb, root: t.TempDir(), command: "read"}
	if code := report(e, denied()); code != exitError {
		t.Errorf("report: exit %d, want %d", code, exitError)
	}
	want := "editguard: PERMISSION_DENIED: np.txt: permission denied: this user may not read the file\n" +
		"hint: this user may not read np.txt: ls -l np.txt shows its permissions; change them with chmod, or run editguard as a user who may read it\n"
	if errb.String() != want {
		t.Errorf("read denied:\n%s\nwant\n%s", errb.String(), want)
	}
	errb.Reset()
	e.command = "write"
	report(e, denied())
	want = "editguard: PERMISSION_DENIED: np.txt: permission denied: the file (or its directory) is not writable by this user\n" +
		"hint: change the file's permissions (ls -l np.txt shows them), or leave the file as it is\n"
	if errb.String() != want {
		t.Errorf("write denied:\n%s\nwant\n%s", errb.String(), want)
	}
}

// TestReadUnreadableFile reads a file this user may not read, which only
// a user other than root can be denied.
func TestReadUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may read any file")
	}
	root := t.TempDir()
	writeFile(t, root, "np.txt", "secret\n")
	if err := os.Chmod(filepath.Join(root, "np.txt"), 0); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--root", root, "read", "np.txt"}, strings.NewReader(""), &out, &errb)
	if code != exitError || !strings.Contains(errb.String(), "PERMISSION_DENIED") || !strings.Contains(errb.String(), "hint: this user may not read np.txt") {
		t.Errorf("read of an unreadable file: exit %d\n%s", code, errb.String())
	}
}

// TestSizeText checks the sizes a TOO_LARGE hint gives --max-file-size.
func TestSizeText(t *testing.T) {
	for n, want := range map[int64]string{1000: "1000", 1024: "1KiB", 2048: "2KiB", 64 << 20: "64MiB", 3 << 30: "3GiB"} {
		if got := sizeText(n); got != want {
			t.Errorf("sizeText(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]int64{1: 1024, 1025: 2048, 1<<20 + 1: 2 << 20, 5 << 30: 5 << 30} {
		if got := roundUp(n); got != want {
			t.Errorf("roundUp(%d) = %d, want %d", n, got, want)
		}
		var z size
		if err := z.Set(sizeText(roundUp(n))); err != nil || int64(z) != want {
			t.Errorf("--max-file-size %s reads as %d, %v; want %d", sizeText(roundUp(n)), z, err, want)
		}
	}
}
