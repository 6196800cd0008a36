//go:build linux

package editguard_test

import (
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
)

// gitCommand runs git args in dir between two checkpoints of s, as an
// agent's shell tool would run it, and returns what End recorded.
func gitCommand(t *testing.T, s *editguard.Session, dir string, args ...string) *editguard.CommandResult {
	t.Helper()
	c, err := s.BeginCommand(ctx, "git", nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.GitIn(t, dir, args...)
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// change returns res's change of p, failing the test if there is none.
func change(t *testing.T, res *editguard.CommandResult, p string) editguard.CommandChange {
	t.Helper()
	for _, c := range res.Changes {
		if c.Path == p {
			return c
		}
	}
	t.Fatalf("no change of %s in %+v", p, res.Changes)
	return editguard.CommandChange{}
}

// wantUncommitted checks which of res's changes are marked as uncommitted
// work: exactly the paths in want, each with its history version.
func wantUncommitted(t *testing.T, res *editguard.CommandResult, want ...string) {
	t.Helper()
	got := map[string]bool{}
	for _, c := range res.UncommittedWork() {
		got[c.Path] = true
		if c.BackupVersion == "" || c.NotInHistory {
			t.Errorf("%s: uncommitted work without a history version: %+v", c.Path, c)
		}
		if c.Overwrote {
			t.Errorf("%s: marked both an overwrite and uncommitted work", c.Path)
		}
	}
	for _, p := range want {
		if !got[p] {
			t.Errorf("%s is not marked uncommitted work: %+v", p, res.Changes)
		}
		delete(got, p)
	}
	for p := range got {
		t.Errorf("%s is marked uncommitted work, want not: %+v", p, change(t, res, p))
	}
	if res.Totals.Uncommitted != len(want) {
		t.Errorf("Totals.Uncommitted = %d, want %d", res.Totals.Uncommitted, len(want))
	}
}

// TestCommandCheckoutDiscardsUncommittedWork: git checkout -- f over a
// person's uncommitted change to a file the session never read is marked,
// with the history version that holds the change, and restoring that
// version brings the work back. A file the command put back that was
// equal to HEAD, and one the session itself wrote, are not marked.
func TestCommandCheckoutDiscardsUncommittedWork(t *testing.T) {
	w, dir := gitWorkspace(t, map[string]string{"f.txt": "committed\n", "g.txt": "g committed\n", "mine.txt": "mine committed\n"}, false)
	s := w.NewSession("agent")
	writeFile(t, dir, "f.txt", "a person's uncommitted work\n")
	if _, err := s.Read(ctx, "mine.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "mine.txt", "the session's own change\n", nil); err != nil {
		t.Fatal(err)
	}
	res := gitCommand(t, s, dir, "checkout", "--", ".")
	if got := readFile(t, dir, "f.txt"); got != "committed\n" {
		t.Fatalf("f.txt after the checkout = %q", got)
	}
	wantUncommitted(t, res, "f.txt")
	if c := change(t, res, "mine.txt"); c.Uncommitted || c.Overwrote {
		t.Errorf("the session's own change is marked: %+v", c)
	}
	c := change(t, res, "f.txt")
	if _, err := s.Restore(ctx, "f.txt", c.BackupVersion, nil); err != nil {
		t.Fatalf("restoring %s: %v", c.BackupVersion, err)
	}
	if got := readFile(t, dir, "f.txt"); got != "a person's uncommitted work\n" {
		t.Errorf("f.txt restored = %q, want the person's work", got)
	}

	// A command that changes files equal to HEAD discards nothing.
	res = runCommand(t, s, dir, "echo new >> g.txt")
	wantUncommitted(t, res)
}

// TestCommandStashDiscardsUncommittedWork: git stash takes a person's
// unstaged and staged changes from the work tree; both are marked, as the
// index does not count as committed.
func TestCommandStashDiscardsUncommittedWork(t *testing.T) {
	w, dir := gitWorkspace(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"}, true)
	writeFile(t, dir, "a.txt", "a, changed\n")
	writeFile(t, dir, "b.txt", "b, changed and staged\n")
	testutil.GitIn(t, dir, "add", "b.txt")
	s := w.NewSession("agent")
	res := gitCommand(t, s, dir, "stash")
	wantUncommitted(t, res, "a.txt", "b.txt")
	if n := res.Totals.Changed; n != 2 {
		t.Errorf("stash changed %d files, want 2: %+v", n, res.Changes)
	}
}

// TestCommandRmDiscardsUncommittedWork: rm of a person's untracked file,
// and of a tracked file they changed, is marked; rm of a file equal to
// HEAD, of an untracked file the session created, and of one an earlier
// command of the session created, is not.
func TestCommandRmDiscardsUncommittedWork(t *testing.T) {
	w, dir := gitWorkspace(t, map[string]string{"clean.txt": "clean\n", "dirty.txt": "dirty\n"}, false)
	writeFile(t, dir, "notes.txt", "a person's notes, never committed\n")
	writeFile(t, dir, "dirty.txt", "dirty, changed\n")
	s := w.NewSession("agent")
	if _, err := s.Write(ctx, "scratch.txt", "the session's scratch file\n", nil); err != nil {
		t.Fatal(err)
	}
	runCommand(t, s, dir, "echo generated > gen.txt")
	res := runCommand(t, s, dir, "rm notes.txt dirty.txt clean.txt scratch.txt gen.txt")
	if res.Totals.Deleted != 5 {
		t.Fatalf("rm deleted %d files, want 5: %+v", res.Totals.Deleted, res.Changes)
	}
	wantUncommitted(t, res, "notes.txt", "dirty.txt")
	c := change(t, res, "notes.txt")
	if _, err := s.Restore(ctx, "notes.txt", c.BackupVersion, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "notes.txt"); got != "a person's notes, never committed\n" {
		t.Errorf("notes.txt restored = %q", got)
	}
}

// TestCommandResetHardToAnEarlierCommit: git reset --hard HEAD~1 replaces
// files that were committed (at HEAD when it began) without a mark, and
// marks only the uncommitted change it discards. An overwrite of a file
// the session read is told as an overwrite, not again as uncommitted.
func TestCommandResetHardToAnEarlierCommit(t *testing.T) {
	w, dir := gitWorkspace(t, map[string]string{"a.txt": "a1\n", "b.txt": "b1\n", "read.txt": "r1\n"}, false)
	writeFile(t, dir, "a.txt", "a2\n")
	testutil.GitIn(t, dir, "commit", "-qam", "second")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "read.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "b.txt", "b, uncommitted\n")
	writeFile(t, dir, "read.txt", "r, changed after the session read it\n")
	res := gitCommand(t, s, dir, "reset", "-q", "--hard", "HEAD~1")
	if got := readFile(t, dir, "a.txt"); got != "a1\n" {
		t.Fatalf("a.txt after the reset = %q", got)
	}
	wantUncommitted(t, res, "b.txt")
	if c := change(t, res, "read.txt"); !c.Overwrote {
		t.Errorf("read.txt: %+v, want an overwrite", c)
	}
}

// TestCommandUncommittedNeedsARepository: without a git repository there is
// no HEAD to tell committed work from uncommitted, and nothing is marked.
func TestCommandUncommittedNeedsARepository(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "notes.txt", "notes\n")
	s := w.NewSession("agent")
	res := runCommand(t, s, dir, "rm notes.txt")
	if res.Totals.Deleted != 1 {
		t.Fatalf("%+v", res)
	}
	wantUncommitted(t, res)
}

// TestCommandUncommittedUnbornBranch: in a repository without a commit,
// every content is uncommitted; a staged file deleted is marked.
func TestCommandUncommittedUnbornBranch(t *testing.T) {
	w, dir := stagedWorkspace(t)
	s := w.NewSession("agent")
	res := runCommand(t, s, dir, "rm staged.txt")
	wantUncommitted(t, res, "staged.txt")
}
