package editguard_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestGuard: a change by another program's tool needs a read of the file,
// unless Unread is set; either way a file that changed since the
// session's read is refused, and what Guard lets through is in history.
func TestGuard(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("hook")

	if _, err := s.Guard(ctx, "a.txt", "Edit", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Fatalf("Guard() of an unread file = %v, want NOT_READ", err)
	}
	if _, err := s.Guard(ctx, "a.txt", "apply_patch", &editguard.GuardOptions{WholeFile: true, Unread: true}); err != nil {
		t.Fatalf("Guard(Unread) of an unread file = %v, want nil", err)
	}
	if vs, err := w.History("a.txt"); err != nil || len(vs) != 1 || vs[0].SHA256 != sha256hex([]byte("one\n")) {
		t.Fatalf("History() after Guard = %+v, %v; want the content Guard found", vs, err)
	}

	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	for i, o := range []*editguard.GuardOptions{nil, {Unread: true}} {
		// A refusal that shows the change moves the read to it, so each
		// round changes the file again.
		writeFile(t, dir, "a.txt", fmt.Sprintf("changed %d\n", i))
		if _, err := s.Guard(ctx, "a.txt", "apply_patch", o); !errors.Is(err, editguard.ErrStaleFile) {
			t.Errorf("Guard(%+v) of a file changed since its read = %v, want STALE_FILE", o, err)
		}
	}
}

// TestSessionName: OpenSession takes the names the regular expression
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ describes, and refuses the others.
func TestSessionName(t *testing.T) {
	w, _ := newWorkspace(t)
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	for _, name := range []string{"", "a", "cli-uid1000", "claude-3f2a.x_y", "-a", ".a", "_a", "a b", "a/b", "a\n", "é", strings.Repeat("a", 64), strings.Repeat("a", 65), "0" + strings.Repeat("-", 63)} {
		_, err := w.OpenSession(name)
		if got, want := err == nil, re.MatchString(name); got != want {
			t.Errorf("OpenSession(%q) = %v, want accepted %v", name, err, want)
		}
	}
}
