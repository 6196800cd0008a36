//go:build linux

package editguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// storeObjects counts the contents the checkpoint store holds.
func storeObjects(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".editguard", "checkpoints", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// gitWorkspace makes a workspace that is a git repository whose files are
// committed; packed packs the objects (with deltas) first.
func gitWorkspace(t *testing.T, files map[string]string, packed bool) (*editguard.Workspace, string) {
	t.Helper()
	testutil.RequireGit(t)
	w, dir := newWorkspace(t)
	testutil.GitIn(t, dir, "init", "-q")
	for p, c := range files {
		writeFile(t, dir, p, c)
	}
	testutil.GitIn(t, dir, "add", "-A")
	testutil.GitIn(t, dir, "commit", "-qm", "files")
	if packed {
		testutil.GitIn(t, dir, "gc", "-q", "--aggressive")
	}
	return w, dir
}

// stagedWorkspace makes a workspace that is a git repository with one
// file, staged.txt, added to the index and never committed.
func stagedWorkspace(t *testing.T) (*editguard.Workspace, string) {
	t.Helper()
	testutil.RequireGit(t)
	w, dir := newWorkspace(t)
	testutil.GitIn(t, dir, "init", "-q")
	writeFile(t, dir, "staged.txt", "only in the index\n")
	testutil.GitIn(t, dir, "add", "staged.txt")
	return w, dir
}

// TestCommandGitBackedCheckpoint: in a clean git working copy the first
// checkpoint copies nothing, since git holds every file's bytes, and what
// a command then changes, deletes or replaces is read back from git's
// objects, loose or packed with deltas, into history byte for byte. Only
// the contents git does not hold (modified, untracked) are stored.
func TestCommandGitBackedCheckpoint(t *testing.T) {
	for _, packed := range []bool{false, true} {
		t.Run(fmt.Sprintf("packed=%v", packed), func(t *testing.T) {
			files := map[string]string{}
			big := strings.Repeat("a line that deltas well against its neighbours\n", 400)
			for i := range 40 {
				files[fmt.Sprintf("src/f%02d.txt", i)] = fmt.Sprintf("%sfile %d\n", big, i)
			}
			files["bin.dat"] = "\x00\x01\x02\xff binary\r\n"
			files["crlf.txt"] = "one\r\ntwo\r\n"
			w, dir := gitWorkspace(t, files, packed)
			writeFile(t, dir, "untracked.txt", "not in git\n")
			writeFile(t, dir, "src/f00.txt", "modified, not in git\n")
			s := w.NewSession("s")
			c, err := s.BeginCommand(ctx, "rewrite", nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := storeObjects(t, dir); n != 2 {
				t.Fatalf("the first checkpoint of a git working copy stored %d contents, want the 2 git does not hold", n)
			}
			runShell(t, dir, "for f in src/f01.txt src/f02.txt bin.dat crlf.txt src/f00.txt; do echo new > $f; done; rm src/f03.txt; mv src/f04.txt moved.txt")
			res, err := c.End(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.Totals.NotInHistory != 0 || res.Totals.Recorded != 8 {
				t.Fatalf("result %+v, want 8 changes recorded, all displaced contents in history", res.Totals)
			}
			for _, p := range []string{"src/f01.txt", "src/f02.txt", "bin.dat", "crlf.txt", "src/f03.txt", "src/f04.txt"} {
				assertInHistory(t, w, p, []byte(files[p]))
			}
			assertInHistory(t, w, "src/f00.txt", []byte("modified, not in git\n"))
			// Rewind puts the tree back exactly.
			if _, err := w.NewSession("undo").Rewind(ctx, "s", nil); err != nil {
				t.Fatal(err)
			}
			for p, want := range files {
				if p == "src/f00.txt" {
					want = "modified, not in git\n"
				}
				if got := readFile(t, dir, p); got != want {
					t.Errorf("%s after rewind = %q, want %q", p, cut([]byte(got)), cut([]byte(want)))
				}
			}
		})
	}
}

// TestCommandGitFiltersAreCopied: with git converting line endings on the
// way in, a CRLF file git calls clean is not its blob's bytes; it is
// copied, and what a command displaces comes back with its CRLFs.
func TestCommandGitFiltersAreCopied(t *testing.T) {
	testutil.RequireGit(t)
	w, dir := newWorkspace(t)
	testutil.GitIn(t, dir, "init", "-q")
	writeFile(t, dir, ".gitattributes", "*.txt text eol=crlf\n")
	writeFile(t, dir, "a.txt", "one\r\ntwo\r\n")
	testutil.GitIn(t, dir, "add", "-A")
	testutil.GitIn(t, dir, "commit", "-qm", "crlf")
	if st := testutil.GitIn(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status: %q, want a clean copy", st)
	}
	s := w.NewSession("s")
	c, err := s.BeginCommand(ctx, "sed", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := storeObjects(t, dir); n != 1 {
		t.Fatalf("%d contents stored, want a.txt's, which git holds with LF", n)
	}
	runShell(t, dir, "echo x > a.txt")
	if _, err := c.End(ctx); err != nil {
		t.Fatal(err)
	}
	assertInHistory(t, w, "a.txt", []byte("one\r\ntwo\r\n"))
}

// TestCommandGitIndexMovesOn: a file git held only in the index (added,
// never committed) is copied into the store once the index stops listing
// it, before git may prune its blob, so a later command's change of it is
// still kept.
func TestCommandGitIndexMovesOn(t *testing.T) {
	w, dir := stagedWorkspace(t)
	s := w.NewSession("s")
	runCommand(t, s, dir, "true")
	if n := storeObjects(t, dir); n != 0 {
		t.Fatalf("%d contents stored, want none: git's index holds staged.txt", n)
	}
	testutil.GitIn(t, dir, "rm", "-q", "--cached", "staged.txt")
	testutil.GitIn(t, dir, "gc", "-q", "--prune=now")
	res := runCommand(t, s, dir, "echo changed > staged.txt")
	if res.Totals.NotInHistory != 0 {
		t.Fatalf("result %+v: the content git pruned was not kept", res)
	}
	assertInHistory(t, w, "staged.txt", []byte("only in the index\n"))
}

// TestCommandGitBlobPrunedByTheCommand: a command that moves the index on
// and prunes the blob that held a file's content before it changed the
// file leaves that content out of history; the result says so, naming
// git, rather than recording a content it does not have.
func TestCommandGitBlobPrunedByTheCommand(t *testing.T) {
	w, dir := stagedWorkspace(t)
	res := runCommand(t, w.NewSession("s"), dir, "echo v2 > staged.txt && git add staged.txt && git -c gc.reflogExpire=now gc -q --prune=now")
	ch := changesOf(res, "staged.txt")
	if len(ch) != 1 || !ch[0].NotInHistory || !strings.Contains(ch[0].Note, "git") {
		t.Fatalf("changes %+v, want the change said not to be in history because git pruned it", res.Changes)
	}
}
