package toolset_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// searchTree is a workspace with ignore rules at several levels.
func searchTree(t *testing.T) *editguard.Workspace {
	t.Helper()
	ws := newWorkspace(t, map[string]string{
		".gitignore":             "*.log\nbuild/\n!keep.log\n",
		"main.go":                "package main\n\nfunc main() { Hello() }\n",
		"keep.log":               "needle kept by negation\n",
		"drop.log":               "needle in an ignored log\n",
		"build/out.go":           "package build // needle\n",
		"pkg/a.go":               "package pkg\n\n// Hello says needle.\nfunc Hello() {}\n",
		"pkg/.gitignore":         "gen_*.go\n",
		"pkg/gen_x.go":           "package pkg // needle generated\n",
		"pkg/sub/b.go":           "package sub\n\nvar Needle = \"NEEDLE\"\n",
		"pkg/sub/data.bin":       "needle\x00binary\n",
		"vendor/x/.git/config":   "needle in git\n",
		"docs/guide.md":          "the needle, in docs\n",
		"pkg/sub/.gitignore":     "!gen_keep.go\n",
		"pkg/sub/gen_keep.go":    "package sub // needle\n",
		"pkg/sub/deep/gen_y.go":  "package deep // needle\n",
		"pkg/sub/deep/z_test.go": "package deep\n",
	})
	if err := os.Symlink(t.TempDir(), filepath.Join(ws.Dir(), "outside")); err != nil {
		t.Fatal(err)
	}
	return ws
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func TestFindFiles(t *testing.T) {
	t.Parallel()
	ts := newToolset(searchTree(t), nil)
	tests := []struct {
		args string
		want []string
	}{
		{`{"pattern":"*.go"}`, []string{"main.go", "pkg/a.go", "pkg/sub/b.go", "pkg/sub/gen_keep.go", "pkg/sub/deep/z_test.go"}},
		{`{"pattern":"*.log"}`, []string{"keep.log"}},
		{`{"pattern":"pkg/**/*_test.go"}`, []string{"pkg/sub/deep/z_test.go"}},
		{`{"pattern":"**/b.go"}`, []string{"pkg/sub/b.go"}},
		{`{"pattern":"*.go","path":"pkg/sub"}`, []string{"pkg/sub/b.go", "pkg/sub/gen_keep.go", "pkg/sub/deep/z_test.go"}},
		{`{"pattern":"config"}`, []string{"No files in the workspace match config."}},
	}
	for _, tt := range tests {
		out := mustCall(t, ts, "find_files", tt.args)
		got := lines(out.Text)
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("find_files %s = %q, want %q", tt.args, got, want)
		}
	}
	wantCode(t, ts, "find_files", `{"pattern":"[x"}`, editguard.CodeInvalidArgument)
	wantCode(t, ts, "find_files", `{"pattern":"*","path":"../"}`, editguard.CodeOutsideRoot)
}

func TestSearchText(t *testing.T) {
	t.Parallel()
	ts := newToolset(searchTree(t), nil)
	out := mustCall(t, ts, "search_text", `{"pattern":"needle"}`)
	want := []string{
		"5 matching lines in 5 files:",
		"docs/guide.md:1: the needle, in docs",
		"keep.log:1: needle kept by negation",
		"pkg/a.go:3: // Hello says needle.",
		"pkg/sub/deep/gen_y.go:1: package deep // needle",
		"pkg/sub/gen_keep.go:1: package sub // needle",
	}
	// pkg/.gitignore ignores gen_*.go below pkg, pkg/sub/.gitignore
	// takes gen_keep.go back; deep/gen_y.go stays ignored.
	want = slices.DeleteFunc(want, func(s string) bool { return strings.HasPrefix(s, "pkg/sub/deep/gen_y.go") })
	want[0] = "4 matching lines in 4 files:"
	if got := lines(out.Text); !slices.Equal(got, want) {
		t.Errorf("search_text needle =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	out = mustCall(t, ts, "search_text", `{"pattern":"needle","case_insensitive":true,"glob":"*.go"}`)
	if got := lines(out.Text); len(got) != 4 || !slices.Contains(got, `pkg/sub/b.go:3: var Needle = "NEEDLE"`) {
		t.Errorf("case-insensitive search in *.go = %q", got)
	}
	out = mustCall(t, ts, "search_text", `{"pattern":"Hello()","literal":true}`)
	if got := lines(out.Text); len(got) != 3 || got[1] != "main.go:3: func main() { Hello() }" || got[2] != "pkg/a.go:4: func Hello() {}" {
		t.Errorf("literal search = %q", got)
	}
	out = mustCall(t, ts, "search_text", `{"pattern":"needle","max_results":2}`)
	if got := lines(out.Text); len(got) != 3 || !strings.HasPrefix(got[0], "First 2 matching lines") {
		t.Errorf("max_results 2 = %q", got)
	}
	wantCode(t, ts, "search_text", `{"pattern":"(unclosed"}`, editguard.CodeInvalidArgument)
	wantCode(t, ts, "search_text", `{"pattern":"x","max_results":5000}`, editguard.CodeInvalidArgument)
}

// TestSearchTextSaysWhatItSkipped: a file too large to search, which holds
// the text, makes "no matches" say that it was not searched and how to
// read it; binary files are named when nothing matched.
func TestSearchTextSaysWhatItSkipped(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("filler line\n", 800000) + "the needle at the end\n"
	ws := newWorkspace(t, map[string]string{"big.log": big, "small.txt": "nothing here\n", "data.bin": "needle\x00\n"})
	ts := newToolset(ws, nil)
	out := mustCall(t, ts, "search_text", `{"pattern":"needle"}`)
	if !strings.Contains(out.Text, "No matches") || !strings.Contains(out.Text, "Not searched: 1 over 8 MiB (big.log; read_file reads them by pages); 1 binary.") {
		t.Fatalf("search text:\n%s", out.Text)
	}
	sk, _ := out.Structured.(map[string]any)["skipped"].(map[string]any)
	if sk["over_size"] != 1 || sk["binary"] != int64(1) {
		t.Errorf("structured skipped = %v", sk)
	}
	// With a match, the binary file goes unmentioned in the text.
	out = mustCall(t, ts, "search_text", `{"pattern":"nothing"}`)
	if strings.Contains(out.Text, "binary") || !strings.Contains(out.Text, "over 8 MiB") {
		t.Errorf("search text with a match:\n%s", out.Text)
	}
}
