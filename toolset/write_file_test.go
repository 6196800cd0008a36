package toolset_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestWriteFileOptions: create_parents, file_mode and what the result
// says of the file, in its text and in Meta.
func TestWriteFileOptions(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"crlf.txt": "a\r\nb\r\n"})
	ts := newToolset(ws, nil)

	e := wantCode(t, ts, "write_file", `{"path":"no/such/f.txt","content":"x\n","create_parents":false}`, editguard.CodeNotFound)
	if e.Details["directory"] != "no" {
		t.Errorf("NOT_FOUND details %v, want the directory no", e.Details)
	}
	out := mustCall(t, ts, "write_file", `{"path":"sub/secret.txt","content":"x\n","file_mode":"0600"}`)
	st, err := os.Stat(filepath.Join(ws.Dir(), "sub/secret.txt"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("sub/secret.txt: %v, %v; want mode 0600", st, err)
	}
	m, ok := out.Meta.(map[string]any)
	if !ok || m["mode"] != "0600" || m["encoding_used"] != "utf-8" || m["line_ending"] != "lf" {
		t.Errorf("Meta = %v, want mode 0600, encoding_used utf-8, line_ending lf", out.Meta)
	}
	if !strings.Contains(out.Text, "File: mode 0600, encoding utf-8, line endings lf.") {
		t.Errorf("text does not describe the file:\n%s", out.Text)
	}
	for _, bad := range []string{`"0o4755"`, `"4755"`, `"1777"`, `"rw-r--r--"`, `"0999"`, `""`} {
		wantCode(t, ts, "write_file", `{"path":"bad.txt","content":"x\n","file_mode":`+bad+`}`, editguard.CodeInvalidArgument)
	}
	mustCall(t, ts, "read_file", `{"path":"crlf.txt"}`)
	out = mustCall(t, ts, "write_file", `{"path":"crlf.txt","content":"c\n","file_mode":"0600"}`)
	if m := out.Meta.(map[string]any); m["mode"] != "0644" || m["line_ending"] != "crlf" {
		t.Errorf("an existing file's Meta = %v, want its own mode 0644 and crlf", m)
	}
}

// TestWriteFileNotPortable: a name that is not portable is written with a
// warning in the text and in Meta, or refused if the workspace says so.
func TestWriteFileNotPortable(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"README.md": "r\n"})
	ts := newToolset(ws, nil)
	out := mustCall(t, ts, "write_file", `{"path":"Readme.md","content":"x\n"}`)
	m := out.Meta.(map[string]any)
	if w, _ := m["warnings"].([]any); len(w) != 1 || !strings.Contains(out.Text, "Warning: the name \"Readme.md\"") {
		t.Errorf("Meta warnings %v, text:\n%s", m["warnings"], out.Text)
	}

	strict, err := editguard.Open(t.TempDir(), &editguard.Options{Names: editguard.NamesRefuse})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { strict.Close() })
	ts = newToolset(strict, nil)
	e := wantCode(t, ts, "write_file", `{"path":"con.txt","content":"x\n"}`, editguard.CodeInvalidArgument)
	if e.Details["suggestion"] != "con_.txt" {
		t.Errorf("refusal %v, want the suggestion con_.txt", e)
	}
	mustCall(t, ts, "write_file", `{"path":"con_.txt","content":"x\n"}`)
	wantCode(t, ts, "move_file", `{"source":"con_.txt","destination":"a|b"}`, editguard.CodeInvalidArgument)
	wantCode(t, ts, "create_directory", `{"path":"trailing."}`, editguard.CodeInvalidArgument)
	wantCode(t, ts, "apply_patch", `{"patch":"*** Begin Patch\n*** Add File: lpt3\n+x\n*** End Patch\n"}`, editguard.CodeInvalidArgument)
}
