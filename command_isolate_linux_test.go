package editguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/editguard/editguard"
	"golang.org/x/sys/unix"
)

// TestEndIsolated builds an overlay's upper layer by hand, as overlayfs
// leaves it (a changed file, a new one in a new directory, whiteouts, an
// opaque directory, a symbolic link), while someone else changes files in
// the tree, and ends the command with it: the command's changes are in the
// tree and recorded as its own; someone else's stay and are not recorded;
// a change of the command's to a file someone else changed meanwhile is
// not made, is a conflict, and its version stays in the upper layer; so is
// a deletion of such a file.
func TestEndIsolated(t *testing.T) {
	w, dir := newWorkspace(t)
	for p, text := range map[string]string{"f.txt": "f1\n", "g.txt": "g1\n", "other.txt": "o1\n",
		"del.txt": "del\n", "kept.txt": "kept\n", "od/old": "old\n", "od/same": "same\n"} {
		writeFile(t, dir, p, text)
	}
	s := w.NewSession("agent")
	for _, p := range []string{"f.txt", "g.txt", "other.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.BeginCommand(ctx, "make", nil)
	if err != nil {
		t.Fatal(err)
	}
	upper := t.TempDir()
	up := func(p, text string) { writeFile(t, upper, p, text) }
	up("f.txt", "f-cmd\n")
	up("g.txt", "g-cmd\n")
	up("new/sub/n.txt", "n\n")
	up("od/same", "same, rewritten\n")
	whiteout := func(p string) {
		if err := unix.Mknod(filepath.Join(upper, p), unix.S_IFCHR, 0); err != nil {
			t.Skipf("cannot make a whiteout here: %v", err)
		}
	}
	whiteout("del.txt")
	whiteout("kept.txt")
	if err := unix.Setxattr(filepath.Join(upper, "od"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Skipf("cannot mark a directory opaque here: %v", err)
	}
	if err := os.Symlink("f.txt", filepath.Join(upper, "link")); err != nil {
		t.Fatal(err)
	}
	// Someone else, while the command runs.
	writeFile(t, dir, "g.txt", "g-person\n")
	writeFile(t, dir, "other.txt", "o-person\n")
	writeFile(t, dir, "kept.txt", "kept, changed\n")

	res, err := c.EndIsolated(ctx, upper)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"f.txt": "f-cmd\n", "g.txt": "g-person\n", "other.txt": "o-person\n",
		"kept.txt": "kept, changed\n", "new/sub/n.txt": "n\n", "od/same": "same, rewritten\n"} {
		if got := readFile(t, dir, p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	for _, p := range []string{"del.txt", "od/old"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: still there (%v)", p, err)
		}
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "f.txt" {
		t.Errorf("link: %q, %v", target, err)
	}

	var conflicts []string
	for _, cf := range res.Conflicts {
		conflicts = append(conflicts, cf.Op+" "+cf.Path)
		switch cf.Path {
		case "g.txt":
			if cf.Kept == "" || readFile(t, cf.Kept, "") != "g-cmd\n" {
				t.Errorf("g.txt's conflict keeps the command's version at %q", cf.Kept)
			}
		case "kept.txt":
			if cf.Kept != "" {
				t.Errorf("a deletion's conflict names a kept file: %q", cf.Kept)
			}
		}
	}
	slices.Sort(conflicts)
	if want := []string{"changed g.txt", "deleted kept.txt"}; !slices.Equal(conflicts, want) {
		t.Errorf("conflicts %q, want %q", conflicts, want)
	}

	recorded := map[string]bool{}
	for _, r := range ledgerRecords(t, w) {
		recorded[r.Path] = true
	}
	for _, p := range []string{"f.txt", "new/sub/n.txt", "od/same", "od/old", "del.txt"} {
		if !recorded[p] {
			t.Errorf("the command's change of %s is not in the ledger", p)
		}
	}
	for _, p := range []string{"g.txt", "other.txt", "kept.txt"} {
		if recorded[p] {
			t.Errorf("someone else's change of %s is in the ledger", p)
		}
	}
	outside := map[string]bool{}
	for _, ch := range res.Changes {
		if ch.ChangedBy == editguard.OutsideChange {
			outside[ch.Path] = true
		}
	}
	if !outside["g.txt"] || !outside["other.txt"] || !outside["kept.txt"] || len(outside) != 3 {
		t.Errorf("the changes named as someone else's: %v", outside)
	}
	// The session's read follows the command's change, not the others'.
	if _, err := s.Write(ctx, "f.txt", "f-agent\n", nil); err != nil {
		t.Errorf("write of f.txt after the command changed it: %v", err)
	}
	if _, err := s.Write(ctx, "other.txt", "o-agent\n", nil); err == nil {
		t.Error("write of other.txt over someone else's change succeeded")
	}
}
