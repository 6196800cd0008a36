package editguard

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkFixture opens a workspace holding:
//
//	a.txt             "A\n"
//	c.txt             "C\n"
//	sub/b.txt         "B\n"
//	link.txt   -> a.txt
//	sub/up.txt -> ../a.txt
//	dirlink    -> sub
//	gone.txt   -> missing.txt
//	out.txt    -> a file outside the root
func linkFixture(t *testing.T) (*Workspace, string, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	for name, content := range map[string]string{"a.txt": "A\n", "c.txt": "C\n", "sub/b.txt": "B\n"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("S\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"link.txt": "a.txt", "sub/up.txt": "../a.txt", "dirlink": "sub", "gone.txt": "missing.txt", "out.txt": outside,
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir, outside
}

// wantLinkRefused checks that err is NOT_A_FILE saying that name is a
// symbolic link, and naming target as what it points to if target is set.
func wantLinkRefused(t *testing.T, what string, err error, target string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotAFile {
		t.Fatalf("%s error = %v, want NOT_A_FILE", what, err)
	}
	if !strings.Contains(e.Message, "symbolic link") {
		t.Errorf("%s message = %q, want it to say the path is a symbolic link", what, e.Message)
	}
	if target != "" && (!strings.Contains(e.Message, `"`+target+`"`) || e.Details["link_target"] != target) {
		t.Errorf("%s message = %q, link_target = %v, want them to name %q", what, e.Message, e.Details["link_target"], target)
	}
	if !strings.Contains(e.RecoveryHint, "shell command") {
		t.Errorf("%s hint = %q, want it to say how to remove the link", what, e.RecoveryHint)
	}
	if target == "a.txt" && !strings.Contains(e.RecoveryHint, "by its own path (a.txt)") {
		t.Errorf("%s hint = %q, want it to name the file by its own path", what, e.RecoveryHint)
	}
}

// wantFile checks that name is a regular file holding content.
func wantFile(t *testing.T, dir, name, content string) {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s: %v, %v; want a regular file", name, fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); string(b) != content {
		t.Errorf("%s = %q, want %q", name, b, content)
	}
}

// wantLink checks that name is still a symlink to target.
func wantLink(t *testing.T, dir, name, target string) {
	t.Helper()
	got, err := os.Readlink(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil || got != target {
		t.Errorf("%s: Readlink = %q, %v; want a link to %q", name, got, err, target)
	}
}

// wantAbsent checks that nothing is at name.
func wantAbsent(t *testing.T, dir, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (%v), want nothing there", name, err)
	}
}

// TestDeleteSymlinkToFileRefused: deleting a link to a file inside the root
// removes neither the file (whose content a restore could bring back, but
// under the link's name it would be gone) nor the link, read or not, and
// the refusal is in the ledger.
func TestDeleteSymlinkToFileRefused(t *testing.T) {
	w, dir, _ := linkFixture(t)
	s := w.NewSession("s")
	ctx := context.Background()
	_, err := s.Delete(ctx, "link.txt", nil)
	wantLinkRefused(t, "Delete(link.txt) unread", err, "a.txt")
	if _, err := s.Read(ctx, "link.txt", nil); err != nil {
		t.Fatal(err)
	}
	_, err = s.Delete(ctx, "link.txt", nil)
	wantLinkRefused(t, "Delete(link.txt)", err, "a.txt")
	_, err = s.Delete(ctx, "link.txt/", nil)
	wantLinkRefused(t, "Delete(link.txt/)", err, "a.txt")
	_, err = s.Delete(ctx, filepath.Join(dir, "sub", "up.txt"), nil)
	wantLinkRefused(t, "Delete(/abs/sub/up.txt)", err, "a.txt")
	_, err = s.Delete(ctx, "out.txt", nil)
	wantLinkRefused(t, "Delete(out.txt)", err, "")
	if e := err.(*Error); strings.Contains(e.Message+e.RecoveryHint, string(filepath.Separator)+"secret.txt") {
		t.Errorf("Delete(out.txt) error = %v, want the host path outside the root left out", err)
	}
	wantFile(t, dir, "a.txt", "A\n")
	wantLink(t, dir, "link.txt", "a.txt")
	wantLink(t, dir, "sub/up.txt", "../a.txt")

	// The refusal is recorded.
	var refused int
	if err := w.Log(LogFilter{}, func(r *LedgerRecord) error {
		if r.Tool == "delete_file" && r.Outcome == "error" && r.ErrorCode == string(CodeNotAFile) {
			refused++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if refused != 5 {
		t.Errorf("ledger holds %d refused deletes, want 5", refused)
	}
	// The file itself, by its own path, is deleted as before.
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "a.txt", nil); err != nil {
		t.Fatalf("Delete(a.txt) = %v", err)
	}
	wantAbsent(t, dir, "a.txt")
	wantLink(t, dir, "link.txt", "a.txt")
}

// TestMoveSymlinkToFileRefused: a link is neither the source nor the
// destination of a move; the file it points to stays where it is and keeps
// its bytes.
func TestMoveSymlinkToFileRefused(t *testing.T) {
	w, dir, _ := linkFixture(t)
	s := w.NewSession("s")
	ctx := context.Background()
	for _, p := range []string{"link.txt", "c.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Move(ctx, "link.txt", "moved.txt", nil)
	wantLinkRefused(t, "Move(link.txt, moved.txt)", err, "a.txt")
	_, err = s.Move(ctx, "sub/up.txt", "sub/moved.txt", nil)
	wantLinkRefused(t, "Move(sub/up.txt, sub/moved.txt)", err, "a.txt")
	_, err = s.Move(ctx, "c.txt", "link.txt", &MoveOptions{Overwrite: true})
	wantLinkRefused(t, "Move(c.txt, link.txt)", err, "a.txt")
	wantFile(t, dir, "a.txt", "A\n")
	wantFile(t, dir, "c.txt", "C\n")
	wantLink(t, dir, "link.txt", "a.txt")
	wantLink(t, dir, "sub/up.txt", "../a.txt")
	wantAbsent(t, dir, "moved.txt")
	wantAbsent(t, dir, "sub/moved.txt")
}

// TestSymlinkToDirectoryRefused: a link to a directory is refused by name
// too, and the directory and its files stay.
func TestSymlinkToDirectoryRefused(t *testing.T) {
	w, dir, _ := linkFixture(t)
	s := w.NewSession("s")
	ctx := context.Background()
	_, err := s.Delete(ctx, "dirlink", nil)
	wantLinkRefused(t, "Delete(dirlink)", err, "sub")
	if e := err.(*Error); !strings.Contains(e.Message, "a directory") {
		t.Errorf("Delete(dirlink) message = %q, want it to say the target is a directory", e.Message)
	}
	_, err = s.Move(ctx, "dirlink", "elsewhere", nil)
	wantLinkRefused(t, "Move(dirlink, elsewhere)", err, "sub")
	wantLink(t, dir, "dirlink", "sub")
	wantFile(t, dir, "sub/b.txt", "B\n")
	wantAbsent(t, dir, "elsewhere")
}

// TestDanglingSymlinkRefused: a link to nothing is refused, and neither is a
// file created where it points when it is a move's destination.
func TestDanglingSymlinkRefused(t *testing.T) {
	w, dir, _ := linkFixture(t)
	s := w.NewSession("s")
	ctx := context.Background()
	_, err := s.Delete(ctx, "gone.txt", nil)
	wantLinkRefused(t, "Delete(gone.txt)", err, "missing.txt")
	if e := err.(*Error); !strings.Contains(e.Message, "does not exist") {
		t.Errorf("Delete(gone.txt) message = %q, want it to say the target does not exist", e.Message)
	}
	_, err = s.Move(ctx, "gone.txt", "moved.txt", nil)
	wantLinkRefused(t, "Move(gone.txt, moved.txt)", err, "missing.txt")
	if _, err := s.Read(ctx, "c.txt", nil); err != nil {
		t.Fatal(err)
	}
	_, err = s.Move(ctx, "c.txt", "gone.txt", nil)
	wantLinkRefused(t, "Move(c.txt, gone.txt)", err, "missing.txt")
	wantLink(t, dir, "gone.txt", "missing.txt")
	wantFile(t, dir, "c.txt", "C\n")
	wantAbsent(t, dir, "missing.txt")
	wantAbsent(t, dir, "moved.txt")
}

// TestPathThroughSymlinkedDirectory: a symlink before the last element is
// followed as before, for delete and for both names of a move.
func TestPathThroughSymlinkedDirectory(t *testing.T) {
	w, dir, _ := linkFixture(t)
	s := w.NewSession("s")
	ctx := context.Background()
	if _, err := s.Read(ctx, "dirlink/b.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(ctx, "dirlink/b.txt", "dirlink/c.txt", nil); err != nil {
		t.Fatalf("Move(dirlink/b.txt, dirlink/c.txt) = %v", err)
	}
	wantAbsent(t, dir, "sub/b.txt")
	wantFile(t, dir, "sub/c.txt", "B\n")
	if _, err := s.Delete(ctx, "dirlink/c.txt", nil); err != nil {
		t.Fatalf("Delete(dirlink/c.txt) = %v", err)
	}
	wantAbsent(t, dir, "sub/c.txt")
	wantLink(t, dir, "dirlink", "sub")
	// A link inside a linked directory is still a link.
	_, err := s.Delete(ctx, "dirlink/up.txt", nil)
	wantLinkRefused(t, "Delete(dirlink/up.txt)", err, "a.txt")
	wantFile(t, dir, "a.txt", "A\n")
}

// TestCheckNotLink pins the contract of checkNotLink: NOT_A_FILE for a
// symlink as last element, nil for anything else, including paths it
// cannot look at (openTarget reports those).
func TestCheckNotLink(t *testing.T) {
	w, dir, _ := linkFixture(t)
	long := strings.Repeat("x", 300)
	if err := os.Symlink(long, filepath.Join(dir, "longlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(dir, "loop")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"link.txt", "link.txt/", "./sub/../link.txt", "sub/up.txt", "dirlink", "dirlink/", "dirlink/up.txt", "gone.txt", "out.txt", "longlink", "loop", filepath.Join(dir, "link.txt")} {
		if err := w.checkNotLink(p); !errors.Is(err, ErrNotAFile) {
			t.Errorf("checkNotLink(%q) = %v, want NOT_A_FILE", p, err)
		} else if len(err.Error()) > 600 {
			t.Errorf("checkNotLink(%q) = %d bytes of message, want it short", p, len(err.Error()))
		}
	}
	for _, p := range []string{"a.txt", "sub", "dirlink/b.txt", "dirlink/.", "link.txt/..", "missing.txt", "nodir/x.txt", "a.txt/x", "../x", "/etc/passwd", ".editguard/key", "", "."} {
		if err := w.checkNotLink(p); err != nil {
			t.Errorf("checkNotLink(%q) = %v, want nil", p, err)
		}
	}
}
