//go:build unix

package gitsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/testutil/gittest"
)

// setup makes a bare repository with one commit on main (files), and a
// clone of it; it returns the bare repository's path and the clone's.
func setup(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	gittest.RequireGit(t)
	dir := t.TempDir()
	bare := filepath.Join(dir, "remote.git")
	gittest.GitIn(t, dir, "init", "-q", "--bare", bare)
	clone := filepath.Join(dir, "clone")
	gittest.GitIn(t, dir, "clone", "-q", bare, clone)
	for name, content := range files {
		p := filepath.Join(clone, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.GitIn(t, clone, "add", "-A")
	gittest.GitIn(t, clone, "commit", "-q", "-m", "initial")
	gittest.GitIn(t, clone, "push", "-q", "origin", "main")
	return bare, clone
}

func open(t *testing.T, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open(%s) = %v", dir, err)
	}
	return r
}

func TestCommitChangesExactlyThePaths(t *testing.T) {
	_, clone := setup(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "d/c.txt": "c\n", "run.sh": "#!/bin/sh\n"})
	ctx := context.Background()
	r := open(t, clone)
	head, err := r.Fetch(ctx, "origin", "main")
	if err != nil {
		t.Fatal(err)
	}
	oidA, err := r.HashObject(ctx, "a.txt", []byte("A\n"))
	if err != nil {
		t.Fatal(err)
	}
	oidN, _ := r.HashObject(ctx, "new/n.txt", []byte("n\n"))
	commit, err := r.Commit(ctx, head, []Change{
		{Path: "a.txt", OID: oidA, Mode: ModeFile},
		{Path: "new/n.txt", OID: oidN, Mode: ModeExecutable},
		{Path: "d/c.txt", Delete: true},
	}, "test\n", Ident{Name: "n", Email: "e@x", When: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	got := gittest.GitIn(t, clone, "ls-tree", "-r", "--format=%(objectmode) %(path)", commit)
	want := "100644 a.txt\n100644 b.txt\n100755 new/n.txt\n100644 run.sh"
	if got != want {
		t.Fatalf("tree of the commit:\n%s\nwant:\n%s", got, want)
	}
	if got := gittest.GitIn(t, clone, "show", commit+":a.txt"); got != "A" {
		t.Fatalf("a.txt = %q, want %q", got, "A")
	}
	if got := gittest.GitIn(t, clone, "rev-parse", commit+"^"); got != head {
		t.Fatalf("parent = %s, want %s", got, head)
	}
	// The repository's own index and HEAD are untouched.
	if got := gittest.GitIn(t, clone, "status", "--porcelain"); got != "" {
		t.Fatalf("git status after Commit = %q, want clean", got)
	}
	if got := gittest.GitIn(t, clone, "rev-parse", "HEAD"); got != head {
		t.Fatalf("HEAD = %s, want %s", got, head)
	}
	entries, err := r.Entries(ctx, commit, []string{"new/n.txt", "a.txt", "d/c.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if e := entries["new/n.txt"]; e.Mode != ModeExecutable || e.OID != oidN {
		t.Fatalf("Entries[new/n.txt] = %+v", e)
	}
	if e := entries["new"]; e.Type != "tree" {
		t.Fatalf("Entries[new] = %+v, want a tree", e)
	}
	if _, ok := entries["d/c.txt"]; ok {
		t.Fatalf("Entries lists the deleted d/c.txt")
	}
	paths, err := r.DiffPaths(ctx, head, commit)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(paths, " "); got != "a.txt d/c.txt new/n.txt" {
		t.Fatalf("DiffPaths = %q", got)
	}
}

func TestPushLease(t *testing.T) {
	bare, clone := setup(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	r := open(t, clone)
	head, _ := r.Fetch(ctx, "origin", "main")
	oid, _ := r.HashObject(ctx, "a.txt", []byte("1\n"))
	c1, err := r.Commit(ctx, head, []Change{{Path: "a.txt", OID: oid, Mode: ModeFile}}, "one\n", Ident{Name: "n", Email: "e@x", When: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, "origin", "main", c1, head); err != nil {
		t.Fatalf("Push = %v", err)
	}
	// A second commit on the old head: the lease names head, which the
	// branch has left.
	oid2, _ := r.HashObject(ctx, "a.txt", []byte("2\n"))
	c2, _ := r.Commit(ctx, head, []Change{{Path: "a.txt", OID: oid2, Mode: ModeFile}}, "two\n", Ident{Name: "n", Email: "e@x", When: time.Now()})
	err = r.Push(ctx, "origin", "main", c2, head)
	if !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("Push on a moved branch = %v, want ErrLeaseLost", err)
	}
	if got := gittest.GitIn(t, bare, "rev-parse", "main"); got != c1 {
		t.Fatalf("remote main = %s, want %s", got, c1)
	}
}

func TestPushRejectedByHook(t *testing.T) {
	bare, clone := setup(t, map[string]string{"a.txt": "a\n"})
	hook := filepath.Join(bare, "hooks", "pre-receive")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\necho no pushes today >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := open(t, clone)
	head, _ := r.Fetch(ctx, "origin", "main")
	oid, _ := r.HashObject(ctx, "a.txt", []byte("1\n"))
	c, _ := r.Commit(ctx, head, []Change{{Path: "a.txt", OID: oid, Mode: ModeFile}}, "one\n", Ident{Name: "n", Email: "e@x", When: time.Now()})
	err := r.Push(ctx, "origin", "main", c, head)
	var re *RemoteError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || !strings.Contains(re.Reason, "no pushes today") {
		t.Fatalf("Push = %v, want ErrRejected with the hook's message", err)
	}
	if got := gittest.GitIn(t, bare, "rev-parse", "main"); got != head {
		t.Fatalf("remote main = %s, want %s", got, head)
	}
}

func TestFetchFailures(t *testing.T) {
	_, clone := setup(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	r := open(t, clone)
	if _, err := r.Fetch(ctx, "origin", "nope"); !errors.Is(err, ErrNoBranch) {
		t.Fatalf("Fetch of a missing branch = %v, want ErrNoBranch", err)
	}
	if _, err := r.Fetch(ctx, filepath.Join(t.TempDir(), "gone.git"), "main"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Fetch from a missing repository = %v, want ErrUnreachable", err)
	}
	for _, bad := range [][2]string{{"--upload-pack=touch x", "main"}, {"origin", "-f"}, {"origin", "a..b"}, {"", "main"}} {
		if err := r.CheckNames(ctx, bad[0], bad[1]); err == nil {
			t.Errorf("CheckNames(%q, %q) = nil, want an error", bad[0], bad[1])
		}
	}
}

func TestReadBlobsAppliesCheckoutConversion(t *testing.T) {
	_, clone := setup(t, map[string]string{".gitattributes": "*.crlf eol=crlf\n", "x.crlf": "a\nb\n", "plain.txt": "a\nb\n"})
	ctx := context.Background()
	r := open(t, clone)
	head, _ := r.Fetch(ctx, "origin", "main")
	entries, err := r.Entries(ctx, head, []string{"x.crlf", "plain.txt"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadBlobs(ctx, map[string]string{"x.crlf": entries["x.crlf"].OID, "plain.txt": entries["plain.txt"].OID})
	if err != nil {
		t.Fatal(err)
	}
	if string(got["x.crlf"].Data) != "a\r\nb\r\n" || string(got["plain.txt"].Data) != "a\nb\n" {
		t.Fatalf("ReadBlobs = %+v", got)
	}
	// And the way back: the working tree's bytes hash to the blob.
	oid, _ := r.HashObject(ctx, "x.crlf", []byte("a\r\nb\r\n"))
	if oid != entries["x.crlf"].OID {
		t.Fatalf("HashObject(CRLF content) = %s, want the blob %s", oid, entries["x.crlf"].OID)
	}
}

func TestOpenWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Open(context.Background(), t.TempDir())
	if !errors.Is(err, ErrGitNotFound) {
		t.Fatalf("Open without git in PATH = %v, want ErrGitNotFound", err)
	}
}

func TestOpenIgnoresCallersGitEnvironment(t *testing.T) {
	_, clone := setup(t, map[string]string{"a.txt": "a\n"})
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	t.Setenv("GIT_INDEX_FILE", filepath.Join(t.TempDir(), "index"))
	sub := filepath.Join(clone, "sub")
	os.Mkdir(sub, 0o755)
	r := open(t, sub)
	if r.Prefix() != "sub/" {
		t.Fatalf("Prefix() = %q, want %q", r.Prefix(), "sub/")
	}
	if _, err := r.Fetch(context.Background(), "origin", "main"); err != nil {
		t.Fatalf("Fetch = %v", err)
	}
	if _, err := Open(context.Background(), t.TempDir()); !errors.Is(err, ErrNotRepository) {
		t.Fatalf("Open outside a working tree = %v, want ErrNotRepository", err)
	}
}
