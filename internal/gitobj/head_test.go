package gitobj

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// headBlob returns what HEAD's tree lists at path in the repository of the
// work tree dir, read by this package.
func headBlob(t *testing.T, dir, path string) (TreeEntry, bool) {
	t.Helper()
	r := openRepo(t, filepath.Join(dir, ".git"))
	commit, ok, err := r.Head()
	if err != nil || !ok {
		t.Fatalf("Head = %v, %v, %v", commit, ok, err)
	}
	tree, err := r.CommitTree(commit)
	if err != nil {
		t.Fatal(err)
	}
	e, found, err := r.Trees().Lookup(tree, path)
	if err != nil {
		t.Fatal(err)
	}
	return e, found
}

// TestHeadLookup checks HEAD's blobs against git's own answer: loose and
// packed objects and refs, a detached HEAD, nested paths, a name that is
// not UTF-8, a symbolic link and missing paths.
func TestHeadLookup(t *testing.T) {
	dir := newWorkTree(t)
	files := map[string]string{"a.txt": "one\n", "d/e/f.go": "package f\n", "d/g": "g\n", "caf\xe9": "latin-1 name\n"}
	writeFiles(t, dir, files)
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "first")
	writeFiles(t, dir, map[string]string{"a.txt": "two\n"}) // uncommitted: HEAD keeps "one"

	check := func(stage string) {
		t.Helper()
		for p := range files {
			want := strings.TrimSpace(git(t, dir, "rev-parse", "HEAD:"+p))
			e, ok := headBlob(t, dir, p)
			if !ok || e.ID.String() != want || !e.IsFile() {
				t.Errorf("%s: %q = %v %v, want blob %s", stage, p, e, ok, want)
			}
		}
		if e, ok := headBlob(t, dir, "link"); !ok || e.Mode != ModeSymlink {
			t.Errorf("%s: link = %v %v, want a symbolic link", stage, e, ok)
		}
		for _, p := range []string{"nope", "d/nope", "a.txt/x", "d/e", "d/e/f.go/g"} {
			if e, ok := headBlob(t, dir, p); ok && e.IsFile() {
				t.Errorf("%s: %q = %v, want no file", stage, p, e)
			}
		}
	}
	check("loose")
	if e, _ := headBlob(t, dir, "a.txt"); e.ID != BlobID([]byte("one\n")) {
		t.Errorf("a.txt in HEAD is %v, want the committed content", e)
	}
	git(t, dir, "gc", "-q") // packs the objects and the refs
	if _, err := os.Stat(filepath.Join(dir, ".git", "packed-refs")); err != nil {
		t.Fatalf("gc left no packed-refs: %v", err)
	}
	check("packed")
	git(t, dir, "checkout", "-q", "--detach")
	check("detached")
}

// TestHeadUnborn: a repository without a commit has no HEAD commit, and
// that is no error.
func TestHeadUnborn(t *testing.T) {
	dir := newWorkTree(t)
	r := openRepo(t, filepath.Join(dir, ".git"))
	if _, ok, err := r.Head(); ok || err != nil {
		t.Errorf("Head of an unborn branch = %v, %v; want not ok, no error", ok, err)
	}
}

// TestHeadRefused: a symbolic ref out of refs/, and a reftable
// repository, are errors, not an unborn branch.
func TestHeadRefused(t *testing.T) {
	dir := newGitDir(t)
	for _, head := range []string{"ref: ../../etc/passwd\n", "ref: refs/../../x\n", "0123\n"} {
		if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte(head), 0o644); err != nil {
			t.Fatal(err)
		}
		r := openRepo(t, dir)
		if _, ok, err := r.Head(); err == nil || ok {
			t.Errorf("HEAD %q: ok %v err %v, want an error", head, ok, err)
		}
	}
	os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "config"), []byte("[core]\n\trepositoryformatversion = 1\n[extensions]\n\trefStorage = reftable\n"), 0o644)
	r := openRepo(t, dir)
	if _, _, err := r.Head(); err == nil {
		t.Error("a reftable repository's HEAD: no error")
	}
}
