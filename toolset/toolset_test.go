package toolset_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

func newWorkspace(t *testing.T, files map[string]string) *editguard.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func newToolset(ws *editguard.Workspace, opts *toolset.Options) *toolset.Toolset {
	o := toolset.Options{}
	if opts != nil {
		o.ReadOnly = opts.ReadOnly
	}
	return toolset.New(ws.NewSession("test"), &o)
}

func call(t *testing.T, ts *toolset.Toolset, name, args string) (*toolset.Output, *editguard.Error) {
	t.Helper()
	out, err := ts.Execute(context.Background(), name, json.RawMessage(args))
	if err == nil {
		return out, nil
	}
	var e *editguard.Error
	if !errors.As(err, &e) {
		t.Fatalf("Execute(%s) error %T %v, want *editguard.Error", name, err, err)
	}
	return nil, e
}

func mustCall(t *testing.T, ts *toolset.Toolset, name, args string) *toolset.Output {
	t.Helper()
	out, e := call(t, ts, name, args)
	if e != nil {
		t.Fatalf("Execute(%s, %s) = %v", name, args, e)
	}
	return out
}

func wantCode(t *testing.T, ts *toolset.Toolset, name, args string, want editguard.Code) *editguard.Error {
	t.Helper()
	_, e := call(t, ts, name, args)
	if e == nil {
		t.Fatalf("Execute(%s, %s) succeeded, want %s", name, args, want)
	}
	if e.Code != want {
		t.Fatalf("Execute(%s, %s) = %v, want code %s", name, args, e, want)
	}
	return e
}

func sha256hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestReadNumberedText(t *testing.T) {
	t.Parallel()
	sumA, sumCRLF := sha256hex("one\ntwo\r\nthree"), sha256hex("x\r\ny\r\n")
	ws := newWorkspace(t, map[string]string{"a.txt": "one\ntwo\r\nthree", "crlf.txt": "x\r\ny\r\n", "empty.txt": ""})
	ts := newToolset(ws, nil)
	tests := []struct {
		args string
		want string
	}{
		{`{"path":"a.txt"}`, "a.txt: all 3 lines, 14 bytes, sha256 " + sumA + " (mixed LF and CRLF line endings, shown as LF)\n     1\tone\n     2\ttwo\n     3\tthree\n"},
		{`{"path":"crlf.txt"}`, "crlf.txt: all 2 lines, 6 bytes, sha256 " + sumCRLF + " (CRLF line endings, shown as LF; edits keep CRLF)\n     1\tx\n     2\ty\n"},
		{`{"path":"a.txt","offset":2,"limit":1}`, "a.txt: line 2 of 3, 14 bytes, sha256 " + sumA + " (mixed LF and CRLF line endings, shown as LF)\n     2\ttwo\n(line 3 is not shown: call read_file with offset=3 to read on)\n"},
		{`{"path":"a.txt","offset":3}`, "a.txt: line 3 of 3, 14 bytes, sha256 " + sumA + " (mixed LF and CRLF line endings, shown as LF)\n     3\tthree\n"},
		{`{"path":"empty.txt"}`, "empty.txt: empty file, 0 bytes, sha256 " + sha256hex("") + "\n"},
	}
	for _, tt := range tests {
		out := mustCall(t, ts, "read_file", tt.args)
		if out.Text != tt.want {
			t.Errorf("read_file %s text = %q, want %q", tt.args, out.Text, tt.want)
		}
	}
	out := mustCall(t, ts, "read_file", `{"path":"crlf.txt"}`)
	res, ok := out.Structured.(*editguard.ReadResult)
	if !ok {
		t.Fatalf("Structured is %T, want *editguard.ReadResult", out.Structured)
	}
	if res.Content != "x\ny\n" || res.LineEnding != "crlf" || res.TotalLines != 2 || res.Truncated {
		t.Errorf("read_file crlf.txt = %+v, want LF content, crlf, 2 lines, not truncated", res)
	}
}

func TestReadDefaultLimitAndLongLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 2500; i++ {
		if i == 7 {
			b.WriteString(strings.Repeat("é", 2100) + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	ws := newWorkspace(t, map[string]string{"big.txt": b.String()})
	ts := newToolset(ws, nil)
	out := mustCall(t, ts, "read_file", `{"path":"big.txt"}`)
	if n := utf8.RuneCountInString(out.Text); n > toolset.ReadBudget {
		t.Fatalf("read_file big.txt text is %d characters, over the budget of %d", n, toolset.ReadBudget)
	}
	lines := strings.Split(strings.TrimSuffix(out.Text, "\n"), "\n")
	res := out.Structured.(*editguard.ReadResult)
	last := res.NextOffset - 1
	if !res.Truncated || res.TotalLines != 2500 || last < 1000 {
		t.Fatalf("structured = truncated %v, total %d, next offset %d; want a partial read of over 1000 lines", res.Truncated, res.TotalLines, res.NextOffset)
	}
	if got, want := lines[0], fmt.Sprintf("big.txt: lines 1-%d of 2500, %d bytes, sha256 %s", last, res.SizeBytes, res.SHA256); got != want {
		t.Errorf("header = %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-1], fmt.Sprintf("(lines %d-2500 are not shown: call read_file with offset=%d to read on)", last+1, last+1); got != want {
		t.Errorf("last line = %q, want %q", got, want)
	}
	if got, want := lines[len(lines)-3], fmt.Sprintf("%6d\tline %d", last, last); got != want {
		t.Errorf("last numbered line = %q, want %q", got, want)
	}
	// 2000 bytes of "é" are 1000 characters.
	if got, want := lines[7], "     7\t"+strings.Repeat("é", 1000)+"… [line cut: 4200 bytes, 2000 shown]"; got != want {
		t.Errorf("long line = %q, want it cut at 2000 bytes", got[len(got)-60:])
	}
	// Reading on from the offset given continues where the text stopped.
	next := mustCall(t, ts, "read_file", fmt.Sprintf(`{"path":"big.txt","offset":%d}`, last+1))
	if !strings.Contains(next.Text, fmt.Sprintf("\n%6d\tline %d\n", last+1, last+1)) {
		t.Errorf("read on from offset %d: %q...", last+1, next.Text[:200])
	}
	// An explicit limit asks for more than the budget.
	all := mustCall(t, ts, "read_file", `{"path":"big.txt","limit":2500}`)
	if r := all.Structured.(*editguard.ReadResult); r.Truncated && !r.LinesCut || r.NextOffset != 0 {
		t.Errorf("read with limit 2500: next offset %d, want every line", r.NextOffset)
	}
	// Past the end is an error, not an empty read.
	wantCode(t, ts, "read_file", `{"path":"big.txt","offset":2501}`, editguard.CodeInvalidArgument)
	// A default-limited read is a partial read: a whole-file write needs more.
	e := wantCode(t, ts, "write_file", `{"path":"big.txt","content":"x\n"}`, editguard.CodeNotRead)
	if e.Details["reason"] != "partial_read" {
		t.Errorf("write after partial read: details %v, want reason partial_read", e.Details)
	}
	out = mustCall(t, ts, "read_file", `{"path":"big.txt","offset":2001}`)
	if !strings.HasPrefix(out.Text, "big.txt: lines 2001-2500 of 2500,") || !strings.Contains(out.Text, "\n  2001\tline 2001\n") || !strings.HasSuffix(out.Text, "  2500\tline 2500\n") {
		t.Errorf("read_file offset=2001 text starts %q, want lines 2001-2500", out.Text[:40])
	}
}

// TestReadMaxChars reads a file of long lines (some cut) by pages of the
// largest max_chars: each page's text, header and notes included, keeps
// within it as a client counts characters (UTF-16 code units) but comes
// near it, and the pages hold the file's lines
// in order. A max_chars over the bound or under the least is refused with
// an error that names the bound, and reads nothing.
func TestReadMaxChars(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; b.Len() < 400<<10; i++ {
		switch {
		case i%97 == 0:
			b.WriteString(strings.Repeat("😀", 700) + "\n") // 2,800 bytes, cut
		case i%13 == 0:
			fmt.Fprintf(&b, "%d %s\n", i, strings.Repeat("中", 600)) // under the line cap
		default:
			fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", i%150))
		}
	}
	content := b.String()
	wantLines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	ws := newWorkspace(t, map[string]string{"long.txt": content})
	ts := newToolset(ws, nil)
	def := mustCall(t, ts, "read_file", `{"path":"long.txt"}`)
	calls, offset := 0, 1
	for offset != 0 {
		out := mustCall(t, ts, "read_file", fmt.Sprintf(`{"path":"long.txt","offset":%d,"max_chars":%d}`, offset, toolset.MaxReadBudget))
		calls++
		if n := utf16Len(out.Text); n > toolset.MaxReadBudget {
			t.Fatalf("page at line %d is %d characters, over max_chars %d", offset, n, toolset.MaxReadBudget)
		}
		res := out.Structured.(*editguard.ReadResult)
		if res.NextOffset != 0 && (len(out.Text) < toolset.MaxReadBudget*9/10 || len(out.Text) < len(def.Text)*3/2) {
			t.Errorf("page at line %d is %d bytes, a default page %d: not near max_chars %d", offset, len(out.Text), len(def.Text), toolset.MaxReadBudget)
		}
		got := strings.Split(strings.TrimSuffix(res.Content, "\n"), "\n")
		for i, line := range got {
			want := wantLines[offset-1+i]
			if len(want) > toolset.MaxLineBytes {
				if !strings.Contains(line, "… [line cut: ") {
					t.Fatalf("line %d is not marked cut", offset+i)
				}
				continue
			}
			if line != want {
				t.Fatalf("line %d = %.40q, want %.40q", offset+i, line, want)
			}
		}
		if res.NextOffset != 0 && res.NextOffset != offset+len(got) {
			t.Fatalf("page at line %d has %d lines and says to read on at %d", offset, len(got), res.NextOffset)
		}
		if res.NextOffset == 0 && offset+len(got)-1 != len(wantLines) {
			t.Fatalf("the last page ends at line %d of %d", offset+len(got)-1, len(wantLines))
		}
		offset = res.NextOffset
	}
	if max := len(content)/(toolset.MaxReadBudget/2) + 1; calls > max {
		t.Errorf("%d calls of max_chars %d for %d bytes, want at most %d", calls, toolset.MaxReadBudget, len(content), max)
	}
	for _, bad := range []int{toolset.MaxReadBudget + 1, 4 * toolset.ReadBudget, toolset.MinReadBudget - 1, -5} {
		e := wantCode(t, ts, "read_file", fmt.Sprintf(`{"path":"long.txt","max_chars":%d}`, bad), editguard.CodeInvalidArgument)
		if !strings.Contains(e.Message, fmt.Sprint(toolset.MaxReadBudget)) || e.Details["max_chars"] != bad {
			t.Errorf("max_chars %d refused with %q, details %v; want the bound named", bad, e.Message, e.Details)
		}
	}
}

// utf16Len is the length of s as a JavaScript client counts it.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "a\n"})
	ts := newToolset(ws, nil)
	tests := []struct {
		tool, args string
		argument   string // Details["argument"], if any
	}{
		{"read_file", `{"path":"a.txt","bogus":1}`, "bogus"},
		{"read_file", `{"path":7}`, "path"},
		{"read_file", `{"path":"a.txt","limit":"10"}`, "limit"},
		{"read_file", `{"path":"a.txt","offset":1.5}`, "offset"},
		{"read_file", `{}`, "path"},
		{"read_file", `["a.txt"]`, ""},
		{"read_file", `{"path":"a.txt"} {}`, ""},
		{"write_file", `{"path":"a.txt"}`, "content"},
		{"write_file", `{"path":"a.txt","content":"x","precondition":{"expected_sha":"x"}}`, "expected_sha"},
		{"edit_file", `{"path":"a.txt","old_string":"a"}`, "new_string"},
		{"edit_file", `{"path":"a.txt","old_string":"a","new_string":"b","edits":[{"old_string":"a","new_string":"b"}]}`, ""},
		{"edit_file", `{"path":"a.txt","edits":[{"old_string":"a"}]}`, "edits[0].new_string"},
		{"edit_file", `{"path":"a.txt","edits":"a"}`, "edits"},
		{"edit_file", `{"path":"a.txt"}`, ""},
		{"begin_turn", `{"x":true}`, "x"},
		{"no_such_tool", `{}`, ""},
	}
	for _, tt := range tests {
		e := wantCode(t, ts, tt.tool, tt.args, editguard.CodeInvalidArgument)
		if !errors.Is(e, editguard.ErrInvalidArgument) {
			t.Errorf("%s %s: errors.Is(ErrInvalidArgument) = false", tt.tool, tt.args)
		}
		if tt.argument != "" && e.Details["argument"] != tt.argument {
			t.Errorf("%s %s: details %v, want argument %q", tt.tool, tt.args, e.Details, tt.argument)
		}
	}
	if got, err := os.ReadFile(filepath.Join(ws.Dir(), "a.txt")); err != nil || string(got) != "a\n" {
		t.Errorf("a.txt = %q, %v after refused calls; want it untouched", got, err)
	}
}

func TestEditForms(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.go": "alpha\nbeta\ngamma\nbeta\n"})
	ts := newToolset(ws, nil)
	wantCode(t, ts, "edit_file", `{"path":"a.go","old_string":"alpha","new_string":"ALPHA"}`, editguard.CodeNotRead)
	mustCall(t, ts, "read_file", `{"path":"a.go","limit":1}`) // a partial read is enough to edit
	out := mustCall(t, ts, "edit_file", `{"path":"a.go","old_string":"alpha","new_string":"ALPHA"}`)
	res := out.Structured.(*editguard.Result)
	if !strings.Contains(res.Diff, "-alpha\n+ALPHA\n") || !strings.Contains(out.Text, res.Diff) {
		t.Errorf("edit diff = %q, text %q; want -alpha +ALPHA in both", res.Diff, out.Text)
	}
	wantCode(t, ts, "edit_file", `{"path":"a.go","old_string":"beta","new_string":"B"}`, editguard.CodeAmbiguousMatch)
	mustCall(t, ts, "edit_file", `{"path":"a.go","edits":[{"old_string":"beta","new_string":"B","replace_all":true},{"old_string":"gamma","new_string":"G"}]}`)
	out = mustCall(t, ts, "edit_file", `{"path":"a.go","old_string":"G","new_string":"g","dry_run":true}`)
	if res := out.Structured.(*editguard.Result); !res.DryRun || !strings.HasPrefix(out.Text, "Dry run") {
		t.Errorf("dry run result %+v text %q; want DryRun and a dry-run note", res, out.Text)
	}
	got, _ := os.ReadFile(filepath.Join(ws.Dir(), "a.go"))
	if want := "ALPHA\nB\nG\nB\n"; string(got) != want {
		t.Errorf("a.go = %q, want %q", got, want)
	}
	// Another writer changes the line the next edit replaces: it must be
	// refused.
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.go"), []byte("ALPHA\nB\nG changed\nB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := wantCode(t, ts, "edit_file", `{"path":"a.go","old_string":"G","new_string":"g"}`, editguard.CodeStaleFile)
	if e.RecoveryHint == "" || e.Details["reason"] != editguard.ReasonModified || e.Details["not_merged"] == nil {
		t.Errorf("stale error = %+v, want reason modified, a recovery hint and why it did not merge", e)
	}
	mustCall(t, ts, "read_file", `{"path":"a.go"}`)
	mustCall(t, ts, "edit_file", `{"path":"a.go","old_string":"G","new_string":"g"}`)
	// Another writer changes another line: the edit merges over it, and
	// the text says so and shows that change.
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.go"), []byte("ALPHA\nB\ng changed\nB\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustCall(t, ts, "edit_file", `{"path":"a.go","old_string":"ALPHA","new_string":"alpha"}`)
	if !strings.Contains(out.Text, "Merged: ") || !strings.Contains(out.Text, "+more\n") {
		t.Errorf("merged edit text:\n%s", out.Text)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Dir(), "a.go")); string(got) != "alpha\nB\ng changed\nB\nmore\n" {
		t.Errorf("a.go after the merge = %q", got)
	}
	// apply_patch merges the same way, and its text says so per file and
	// shows the other change after the diffs.
	if err := os.WriteFile(filepath.Join(ws.Dir(), "a.go"), []byte("ALPHA again\nB\ng changed\nB\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = mustCall(t, ts, "apply_patch", `{"patch":"*** Begin Patch\n*** Update File: a.go\n@@\n-more\n+MORE\n*** End Patch\n"}`)
	if !strings.Contains(out.Text, "; merged: ") || !strings.Contains(out.Text, "merged over:\n") || !strings.Contains(out.Text, "+ALPHA again\n") {
		t.Errorf("merged patch text:\n%s", out.Text)
	}
	if got, _ := os.ReadFile(filepath.Join(ws.Dir(), "a.go")); string(got) != "ALPHA again\nB\ng changed\nB\nMORE\n" {
		t.Errorf("a.go after the merged patch = %q", got)
	}
}

func TestWriteCreateAndPrecondition(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"old.txt": "v1\n"})
	ts := newToolset(ws, nil)
	out := mustCall(t, ts, "write_file", `{"path":"new/dir/n.txt","content":"hello\n"}`)
	if res := out.Structured.(*editguard.Result); !res.Created || res.SizeBytes != 6 {
		t.Errorf("create result = %+v, want created, 6 bytes", res)
	}
	wantCode(t, ts, "write_file", `{"path":"old.txt","content":"v2\n"}`, editguard.CodeNotRead)
	wantCode(t, ts, "write_file", `{"path":"old.txt","content":"v2\n","precondition":{"expected_sha256":"0000000000000000000000000000000000000000000000000000000000000000"}}`, editguard.CodeStaleFile)
	info := mustCall(t, ts, "file_info", `{"path":"old.txt"}`).Structured.(*toolset.FileInfo)
	// file_info does not count as a read ...
	wantCode(t, ts, "write_file", `{"path":"old.txt","content":"v2\n"}`, editguard.CodeNotRead)
	// ... but its hash makes an explicit precondition.
	mustCall(t, ts, "write_file", fmt.Sprintf(`{"path":"old.txt","content":"v2\n","precondition":{"expected_sha256":%q}}`, info.SHA256))
	if got, _ := os.ReadFile(filepath.Join(ws.Dir(), "old.txt")); string(got) != "v2\n" {
		t.Errorf("old.txt = %q, want v2", got)
	}
}

func TestFileInfo(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "abc", "d/x": ""})
	if err := os.Symlink("a.txt", filepath.Join(ws.Dir(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws.Dir(), "out")); err != nil {
		t.Fatal(err)
	}
	ts := newToolset(ws, nil)
	tests := []struct {
		path string
		want toolset.FileInfo
	}{
		{"a.txt", toolset.FileInfo{Path: "a.txt", Exists: true, Type: "file", SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", SizeBytes: 3}},
		{"link", toolset.FileInfo{Path: "link", Exists: true, Type: "file", Symlink: true, SHA256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", SizeBytes: 3}},
		{"d", toolset.FileInfo{Path: "d", Exists: true, Type: "dir"}},
		{"nope", toolset.FileInfo{Path: "nope"}},
		{"a.txt/x", toolset.FileInfo{Path: "a.txt/x"}},
	}
	for _, tt := range tests {
		got := *mustCall(t, ts, "file_info", fmt.Sprintf(`{"path":%q}`, tt.path)).Structured.(*toolset.FileInfo)
		got.MtimeMS = 0
		if got != tt.want {
			t.Errorf("file_info %s = %+v, want %+v", tt.path, got, tt.want)
		}
	}
	wantCode(t, ts, "file_info", `{"path":"out"}`, editguard.CodeOutsideRoot)
	wantCode(t, ts, "file_info", `{"path":"../x"}`, editguard.CodeOutsideRoot)
	wantCode(t, ts, "file_info", `{"path":".editguard/ledger.jsonl"}`, editguard.CodeProtectedPath)
}

func TestListDirectory(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"b.txt": "12345", "a/x.go": "x", "a/sub/y": ""})
	if err := os.Symlink("b.txt", filepath.Join(ws.Dir(), "l")); err != nil {
		t.Fatal(err)
	}
	ts := newToolset(ws, nil)
	for _, args := range []string{`{}`, `{"path":"."}`, `{"path":"a/.."}`, `{"path":""}`} {
		l := mustCall(t, ts, "list_directory", args).Structured.(*toolset.Listing)
		want := []toolset.DirEntry{{Name: "a", Type: "dir"}, {Name: "b.txt", Type: "file", SizeBytes: 5}, {Name: "l", Type: "symlink"}}
		if fmt.Sprint(l.Entries) != fmt.Sprint(want) {
			t.Errorf("list_directory %s = %v, want %v (no .editguard)", args, l.Entries, want)
		}
	}
	out := mustCall(t, ts, "list_directory", `{"path":"a"}`)
	if want := "sub/\nx.go\t1 bytes\n"; out.Text != want {
		t.Errorf("list_directory a text = %q, want %q", out.Text, want)
	}
	wantCode(t, ts, "list_directory", `{"path":".."}`, editguard.CodeOutsideRoot)
	wantCode(t, ts, "list_directory", `{"path":".editguard"}`, editguard.CodeProtectedPath)
	wantCode(t, ts, "list_directory", `{"path":"missing"}`, editguard.CodeNotFound)
	wantCode(t, ts, "list_directory", `{"path":"b.txt"}`, editguard.CodeInvalidArgument)
	wantCode(t, ts, "list_directory", `{"limit":-1}`, editguard.CodeInvalidArgument)
}

// TestListDirectoryPages lists a directory larger than a page: the first
// page says how many entries there are and where the next page starts,
// and the pages together are the whole directory, in name order.
func TestListDirectoryPages(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 2500 {
		files[fmt.Sprintf("d/f%04d", i)] = "x"
	}
	ts := newToolset(newWorkspace(t, files), nil)
	out := mustCall(t, ts, "list_directory", `{"path":"d"}`)
	l := out.Structured.(*toolset.Listing)
	if len(l.Entries) != 1000 || !l.Truncated || l.Total != 2500 || l.NextOffset != 1001 {
		t.Fatalf("first page: %d entries, truncated %v, total %d, next %d; want 1000, true, 2500, 1001", len(l.Entries), l.Truncated, l.Total, l.NextOffset)
	}
	if !strings.Contains(out.Text, "entries 1-1000 of 2500 are listed: list_directory with offset 1001") {
		t.Errorf("first page's text ends %q", out.Text[len(out.Text)-120:])
	}
	var names []string
	for off := 1; off != 0; {
		l := mustCall(t, ts, "list_directory", fmt.Sprintf(`{"path":"d","offset":%d,"limit":700}`, off)).Structured.(*toolset.Listing)
		for _, e := range l.Entries {
			names = append(names, e.Name)
			if e.Type != "file" || e.SizeBytes != 1 {
				t.Fatalf("entry %+v, want a 1-byte file", e)
			}
		}
		off = l.NextOffset
	}
	if len(names) != 2500 || names[0] != "f0000" || names[2499] != "f2499" || !slices.IsSorted(names) {
		t.Errorf("pages hold %d names, %v ... %v, sorted %v", len(names), names[:1], names[len(names)-1:], slices.IsSorted(names))
	}
	past := mustCall(t, ts, "list_directory", `{"path":"d","offset":3000}`)
	if want := "d has 2500 entries: none from offset 3000\n"; past.Text != want {
		t.Errorf("past the end: %q, want %q", past.Text, want)
	}
}

// TestListDirectoryChangedBetweenPages changes a directory between two
// pages of it: an entry added before the second page moves the ones after
// it, so the second page would show again the last entry of the first;
// an entry removed would move one past the second page's start unseen.
// Either way the later page says that the directory changed since the
// page before, and a page of an unchanged directory does not.
func TestListDirectoryChangedBetweenPages(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d/f%02d", i)] = "x"
	}
	ws := newWorkspace(t, files)
	ts := newToolset(ws, nil)
	page := func(off int) *toolset.Output {
		return mustCall(t, ts, "list_directory", fmt.Sprintf(`{"path":"d","offset":%d,"limit":10}`, off))
	}
	const note = "the directory changed since the previous page was listed"
	first := page(1)
	second := page(11)
	if l := second.Structured.(*toolset.Listing); l.Changed || strings.Contains(second.Text, note) || l.Entries[0].Name != "f10" {
		t.Fatalf("second page of an unchanged directory: changed %v, first %s, text %q", l.Changed, l.Entries[0].Name, second.Text)
	}
	if first.Structured.(*toolset.Listing).Changed {
		t.Fatal("a first page says the directory changed")
	}
	// Added: "f00a" sorts after f00, so f09 moves onto the next page.
	if err := os.WriteFile(filepath.Join(ws.Dir(), "d", "f00a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	third := page(21)
	l := third.Structured.(*toolset.Listing)
	if !l.Changed || !strings.Contains(third.Text, note) || l.Entries[0].Name != "f19" {
		t.Errorf("page after an entry was added: changed %v, first %s, text %q", l.Changed, l.Entries[0].Name, third.Text)
	}
	// The next page after it is of the same listing: no note.
	if l := page(31).Structured.(*toolset.Listing); l.Changed || len(l.Entries) != 1 || l.Entries[0].Name != "f29" {
		t.Errorf("page of the listing the page before showed: changed %v, entries %v", l.Changed, l.Entries)
	}
	// Removed, through the tools' own session.
	mustCall(t, ts, "read_file", `{"path":"d/f05"}`)
	mustCall(t, ts, "delete_file", `{"path":"d/f05"}`)
	if l := page(11).Structured.(*toolset.Listing); !l.Changed || l.Entries[0].Name != "f10" {
		t.Errorf("page after an entry was removed: changed %v, first %s", l.Changed, l.Entries[0].Name)
	}
	// Starting over from offset 1 shows the directory whole: no note, and
	// the same path written otherwise is the same directory.
	if l := page(1).Structured.(*toolset.Listing); l.Changed || l.Total != 30 {
		t.Errorf("first page again: changed %v, total %d; want false, 30", l.Changed, l.Total)
	}
	if l := mustCall(t, ts, "list_directory", `{"path":"./d/","offset":11,"limit":10}`).Structured.(*toolset.Listing); l.Changed {
		t.Error("the same listing under another spelling of its path says it changed")
	}
	// Another session has its own pages.
	other := newToolset(ws, nil)
	if l := mustCall(t, other, "list_directory", `{"path":"d","offset":11,"limit":10}`).Structured.(*toolset.Listing); l.Changed {
		t.Error("a session's first look at a later page says the directory changed")
	}
}

func TestHistoryAndRestore(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"h.txt": "first\n"})
	ts := newToolset(ws, nil)
	mustCall(t, ts, "read_file", `{"path":"h.txt"}`)
	mustCall(t, ts, "write_file", `{"path":"h.txt","content":"second\n"}`)
	h := mustCall(t, ts, "file_history", `{"path":"h.txt"}`).Structured.(*toolset.History)
	if len(h.Versions) == 0 {
		t.Fatalf("file_history after a write = no versions, want the displaced one")
	}
	v := h.Versions[0]
	if v.SizeBytes != int64(len("first\n")) {
		t.Errorf("newest version = %+v, want the 6-byte first content", v)
	}
	mustCall(t, ts, "restore_file", fmt.Sprintf(`{"path":"h.txt","version":%q}`, v.ID))
	if got, _ := os.ReadFile(filepath.Join(ws.Dir(), "h.txt")); string(got) != "first\n" {
		t.Errorf("h.txt after restore = %q, want first", got)
	}
	wantCode(t, ts, "restore_file", `{"path":"h.txt"}`, editguard.CodeInvalidArgument)
}

func TestReadOnlyAndBeginTurn(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.txt": "a\n"})
	var names []string
	ro := newToolset(ws, &toolset.Options{ReadOnly: true})
	for _, tool := range ro.Tools() {
		names = append(names, tool.Name)
		if !tool.Annotations.ReadOnly {
			t.Errorf("read-only toolset offers %s, which is not read-only", tool.Name)
		}
	}
	if got, want := strings.Join(names, ","), "list_allowed_directories,read_file,read_multiple_files,list_directory,directory_tree,find_files,search_text,file_info,file_history,file_diff"; got != want {
		t.Errorf("read-only tools = %s, want %s", got, want)
	}
	mustCall(t, ro, "read_file", `{"path":"a.txt"}`)
	wantCode(t, ro, "write_file", `{"path":"a.txt","content":"b"}`, editguard.CodeInvalidArgument)

	ts := newToolset(ws, nil)
	for _, tool := range ts.Tools() {
		var schema map[string]any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil || schema["type"] != "object" || schema["additionalProperties"] != false {
			t.Errorf("%s schema = %v, %v; want a closed object schema", tool.Name, schema, err)
		}
		if tool.OutputSchema != nil {
			var out map[string]any
			if err := json.Unmarshal(tool.OutputSchema, &out); err != nil || out["type"] != "object" {
				t.Errorf("%s output schema = %v, %v; want an object schema", tool.Name, out, err)
			}
		}
	}
	mustCall(t, ts, "read_file", `{"path":"a.txt"}`)
	mustCall(t, ts, "begin_turn", ``)
	wantCode(t, ts, "edit_file", `{"path":"a.txt","old_string":"a","new_string":"b"}`, editguard.CodeNotRead)
}

// TestListNonUTF8Name checks that a name that is not UTF-8 is listed
// escaped and flagged, and that the listed name cannot create a look-alike.
func TestListNonUTF8Name(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a\xffb\\c.txt"), []byte("x\n"), 0o644); err != nil {
		t.Skip("file system refuses non-UTF-8 names:", err)
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ts := toolset.New(w.NewSession("s"), nil)
	out, err := ts.Execute(context.Background(), "list_directory", json.RawMessage(`{"path":"."}`))
	if err != nil {
		t.Fatal(err)
	}
	l := out.Structured.(*toolset.Listing)
	e := l.Entries
	if len(e) != 1 || e[0].Name != "a\ufffdb\\c.txt" || !e[0].NonUTF8 || e[0].NameHex != hex.EncodeToString([]byte("a\xffb\\c.txt")) {
		t.Fatalf("entries = %+v, want U+FFFD for the bad byte, flagged, with the exact bytes in hex", e)
	}
	for _, name := range []string{e[0].Name, "a\xffb\\c.txt"} {
		args, _ := json.Marshal(map[string]string{"path": name, "content": "look-alike\n"})
		if _, err := ts.Execute(context.Background(), "write_file", args); err == nil {
			t.Errorf("write_file(%q) succeeded", name)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("directory has %d entries, want the file and .editguard", len(ents))
	}
}

// TestEditNoMerge: an edit over another session's change to another line
// merges; with no_merge it is refused with STALE_FILE and nothing changes.
func TestEditNoMerge(t *testing.T) {
	ws := newWorkspace(t, map[string]string{"a.txt": "one\ntwo\nthree\nfour\nfive\n"})
	ts := newToolset(ws, nil)
	other := newToolset(ws, nil)
	mustCall(t, ts, "read_file", `{"path": "a.txt"}`)
	mustCall(t, other, "read_file", `{"path": "a.txt"}`)
	mustCall(t, other, "edit_file", `{"path": "a.txt", "old_string": "five", "new_string": "FIVE"}`)
	wantCode(t, ts, "edit_file", `{"path": "a.txt", "old_string": "one", "new_string": "ONE", "no_merge": true}`, editguard.CodeStaleFile)
	if got := readWS(t, ws, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Fatalf("a.txt after a refused no_merge edit = %q", got)
	}
	// The refusal moved the read to the current content: the same edit now
	// applies. Another change made after it merges, without no_merge.
	mustCall(t, other, "read_file", `{"path": "a.txt"}`)
	mustCall(t, other, "edit_file", `{"path": "a.txt", "old_string": "four", "new_string": "FOUR"}`)
	out := mustCall(t, ts, "edit_file", `{"path": "a.txt", "old_string": "one", "new_string": "ONE"}`)
	if !strings.Contains(out.Text, "erged") {
		t.Errorf("edit over another change: %q, want it merged", out.Text)
	}
	if got := readWS(t, ws, "a.txt"); got != "ONE\ntwo\nthree\nFOUR\nFIVE\n" {
		t.Errorf("a.txt = %q, want both changes", got)
	}
}

// readWS returns the file name in ws as it is on disk.
func readWS(t *testing.T, ws *editguard.Workspace, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ws.Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNonUTF8NamesInResults checks that directory_tree, find_files and
// search_text give the exact bytes of a name that is not UTF-8 beside the
// readable form with U+FFFD.
func TestNonUTF8NamesInResults(t *testing.T) {
	dir := t.TempDir()
	name := "caf\xe9.txt"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("needle\n"), 0o644); err != nil {
		t.Skip("file system refuses non-UTF-8 names:", err)
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ts := toolset.New(w.NewSession("s"), nil)
	wantHex := hex.EncodeToString([]byte(name))

	tree := mustCall(t, ts, "directory_tree", `{"path":"."}`)
	b, _ := json.Marshal(tree.Structured)
	if !bytes.Contains(b, []byte(`"name":"caf`+"\ufffd"+`.txt"`)) || !bytes.Contains(b, []byte(`"name_hex":"`+wantHex+`"`)) {
		t.Errorf("directory_tree = %s, want the name with U+FFFD and its hex", b)
	}

	found := mustCall(t, ts, "find_files", `{"pattern":"*.txt"}`)
	b, _ = json.Marshal(found.Meta)
	if !bytes.Contains(b, []byte(`"path_hex":"`+wantHex+`"`)) {
		t.Errorf("find_files meta = %s, want the name's hex", b)
	}

	search := mustCall(t, ts, "search_text", `{"pattern":"needle"}`)
	b, _ = json.Marshal(search.Structured)
	if !bytes.Contains(b, []byte(`"path_hex":"`+wantHex+`"`)) {
		t.Errorf("search_text = %s, want the name's hex", b)
	}
}

// TestChangeMetaHasTiming: a change's meta (an MCP result's _meta) says how
// long it took; the text the model reads does not.
func TestChangeMetaHasTiming(t *testing.T) {
	w := newWorkspace(t, nil)
	ts := toolset.New(w.NewSession("s"), nil)
	out := mustCall(t, ts, "write_file", `{"path":"t.txt","content":"x\n"}`)
	m, _ := out.Meta.(map[string]any)
	tm, _ := m["timing"].(map[string]any)
	if total, _ := tm["total_ms"].(float64); total <= 0 {
		t.Fatalf("meta %v: want timing.total_ms", out.Meta)
	}
	if strings.Contains(out.Text, "total_ms") {
		t.Errorf("the model's text shows the timing: %s", out.Text)
	}
}
