package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
)

// ApplyPatchText is the patch the apply_patch tests apply: two updates, an
// add, a delete and a move.
const ApplyPatchText = `*** Begin Patch
*** Update File: src/a.go
@@ func A() {
-	return 1
+	return 2
*** Update File: crlf.txt
@@
 one
-two
+TWO
*** Add File: docs/new.md
+# New
*** Delete File: old.txt
*** Update File: b.txt
*** Move to: moved/b.txt
@@
-beta
+BETA
*** End Patch
`

// ApplyAfter is the tree ApplyPatchText leaves.
var ApplyAfter = map[string]string{
	"src/a.go":    "package a\n\nfunc A() {\n\treturn 2\n}\n",
	"crlf.txt":    "one\r\nTWO\r\n",
	"docs/new.md": "# New\n",
	"moved/b.txt": "BETA\n",
}

// ApplyWorkspace opens a workspace holding the files ApplyPatchText
// changes and a session that has read them all.
func ApplyWorkspace(t *testing.T) (*editguard.Workspace, string, *editguard.Session) {
	t.Helper()
	w, dir := NewWorkspace(t)
	WriteFile(t, dir, "src/a.go", "package a\n\nfunc A() {\n\treturn 1\n}\n")
	WriteFile(t, dir, "crlf.txt", "one\r\ntwo\r\n")
	WriteFile(t, dir, "old.txt", "old\n")
	WriteFile(t, dir, "b.txt", "beta\n")
	s := w.NewSession("agent")
	for _, p := range []string{"src/a.go", "crlf.txt", "old.txt", "b.txt"} {
		if _, err := s.Read(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
	}
	return w, dir, s
}

// Tree returns every file under dir but editguard's state, with content.
// A temporary file a commit left after its swap (the displaced content,
// already in history, swept by the next commit) is not part of the tree.
func Tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == editguard.StateDir {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && !atomicfile.IsTemp(d.Name()) {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// Journals lists what .editguard/tx holds but its lock file.
func Journals(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, ".editguard", "tx"))
	var out []string
	for _, e := range ents {
		if e.Name() != "journal.lock" {
			out = append(out, e.Name())
		}
	}
	return out
}

// BulkPatch is a workspace, a session that has read its files, and a
// patch of n files (n > 8: the bulk commit that makes them durable with
// syncfs): updates in two directories, one file added and one deleted;
// with the tree the patch leaves.
func BulkPatch(t *testing.T, n int) (w *editguard.Workspace, dir string, s *editguard.Session, patch string, after map[string]string) {
	t.Helper()
	w, dir = NewWorkspace(t)
	s = w.NewSession("agent")
	after = map[string]string{}
	var p strings.Builder
	p.WriteString("*** Begin Patch\n")
	for i := range n - 2 {
		name := fmt.Sprintf("d%d/f%02d.txt", i%2, i)
		WriteFile(t, dir, name, fmt.Sprintf("line\nfile %d\n", i))
		if _, err := s.Read(context.Background(), name, nil); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&p, "*** Update File: %s\n@@\n line\n-file %d\n+FILE %d\n", name, i, i)
		after[name] = fmt.Sprintf("line\nFILE %d\n", i)
	}
	WriteFile(t, dir, "d0/gone.txt", "gone\n")
	if _, err := s.Read(context.Background(), "d0/gone.txt", nil); err != nil {
		t.Fatal(err)
	}
	p.WriteString("*** Delete File: d0/gone.txt\n*** Add File: d1/new.txt\n+new\n*** End Patch\n")
	after["d1/new.txt"] = "new\n"
	return w, dir, s, p.String(), after
}
