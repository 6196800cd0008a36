package editguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/editguard/editguard"
)

// TestGitLookalikesProtected checks that the default deny protects every
// name that is ".git" on some file system: any case, trailing dots and
// spaces (dropped by Windows-style file systems) and the 8.3 short names
// GIT~1 to GIT~9, at any depth, for writes, edits, deletes and moves.
func TestGitLookalikesProtected(t *testing.T) {
	w, dir := newWorkspace(t)
	existing := []string{
		".GIT/config",
		".Git/config",
		"vendor/lib/.gIt/hooks/pre-commit",
		".git./config",
		".git /config",
		".git. . /config",
		"GIT~1/config",
		"sub/git~3/HEAD",
		"wt/.GIT",    // a worktree's .git file
		"mod/.Git .", // a submodule's .git file, with a trailing space and dot
	}
	for _, p := range existing {
		writeFile(t, dir, p, "original\n")
	}
	writeFile(t, dir, "src.txt", "[core]\n\tfsmonitor = touch /tmp/pwned\n")
	s := w.NewSession("s")
	if _, err := s.Read(ctx, "src.txt", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range existing {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatalf("Read(%q): %v", p, err)
		}
		if _, err := s.Write(ctx, p, "[core]\n\tfsmonitor = touch /tmp/pwned\n", nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Write(%q) error = %v, want PROTECTED_PATH", p, err)
		}
		if _, err := s.Edit(ctx, p, []editguard.Edit{{OldString: "original", NewString: "changed"}}, nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Edit(%q) error = %v, want PROTECTED_PATH", p, err)
		}
		if _, err := s.Delete(ctx, p, nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Delete(%q) error = %v, want PROTECTED_PATH", p, err)
		}
		if _, err := s.Move(ctx, p, "moved.txt", nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Move(%q, moved.txt) error = %v, want PROTECTED_PATH", p, err)
		}
		if _, err := s.Move(ctx, "src.txt", p, &editguard.MoveOptions{Overwrite: true}); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Move(src.txt, %q) error = %v, want PROTECTED_PATH", p, err)
		}
		if got := readFile(t, dir, p); got != "original\n" {
			t.Errorf("%s = %q, want it unchanged", p, got)
		}
	}
	for _, p := range []string{".GIT/hooks/post-checkout", ".git./hooks/pre-commit", "Git~9/hooks/pre-commit", ".Git/info/attributes"} {
		if _, err := s.Write(ctx, p, "#!/bin/sh\ntouch /tmp/pwned\n", nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Write(new %q) error = %v, want PROTECTED_PATH", p, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
	if got := readFile(t, dir, "src.txt"); got != "[core]\n\tfsmonitor = touch /tmp/pwned\n" {
		t.Errorf("src.txt = %q, want it unchanged", got)
	}
}

// TestGitLookalikesOnlyGit checks that names merely resembling .git stay
// writable, and that patterns other than the element ".git" keep
// path.Match semantics (case-sensitive, no trimming).
func TestGitLookalikesOnlyGit(t *testing.T) {
	dir := t.TempDir()
	w, err := editguard.Open(dir, &editguard.Options{Deny: append([]string{"secret/*.key"}, editguard.DefaultDeny...)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("s")
	for _, p := range []string{".gitignore", ".github/workflows/ci.yml", "x.git/config", ".gitx/config", "git~1x/config", "git~0/config", "GIT~10/config", "agit~1/config", "secret/a.KEY", "secret/a.key."} {
		if _, err := s.Write(ctx, p, "ok\n", nil); err != nil {
			t.Errorf("Write(%q): %v, want it written", p, err)
		}
	}
	for _, p := range []string{"secret/a.key", "secret/.git", "secret/.GIT."} {
		if _, err := s.Write(ctx, p, "no\n", nil); !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Write(%q) error = %v, want PROTECTED_PATH", p, err)
		}
	}
}

// TestLongPathErrorsBounded checks that an error repeats at most a bounded
// prefix of a caller's path, however long the path: in details.path, in
// the message and hint, and in Error().
func TestLongPathErrorsBounded(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	s := w.NewSession("s")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{
		"one element":      strings.Repeat("a", 100000),
		"long last":        strings.Repeat("abcdefghij/", 20) + strings.Repeat("x", 100000),
		"multibyte":        strings.Repeat("é", 50000),
		"dot-dot":          strings.Repeat("../", 33334),
		"absolute":         "/" + strings.Repeat("x/", 50000),
		"NUL":              strings.Repeat("a", 100000) + "\x00",
		"not UTF-8":        strings.Repeat("a", 100000) + "\xff",
		"replacement rune": strings.Repeat("b/", 100) + strings.Repeat("\ufffd", 30000),
	}
	calls := map[string]func(p string) error{
		"Write": func(p string) error { _, err := s.Write(ctx, p, "x\n", nil); return err },
		"Read":  func(p string) error { _, err := s.Read(ctx, p, nil); return err },
		"Edit": func(p string) error {
			_, err := s.Edit(ctx, p, []editguard.Edit{{OldString: "a", NewString: "b"}}, nil)
			return err
		},
		"Delete": func(p string) error { _, err := s.Delete(ctx, p, nil); return err },
		"Move":   func(p string) error { _, err := s.Move(ctx, p, "b.txt", nil); return err },
		"MoveTo": func(p string) error { _, err := s.Move(ctx, "a.txt", p, nil); return err },
	}
	for name, p := range paths {
		for call, f := range calls {
			err := f(p)
			var e *editguard.Error
			if !errors.As(err, &e) {
				t.Fatalf("%s(%s) error = %v, want an *Error", call, name, err)
			}
			b, jerr := json.Marshal(e)
			if jerr != nil {
				t.Fatal(jerr)
			}
			if len(b) > 2048 || len(e.Error()) > 2048 {
				t.Errorf("%s(%s): %s is %d bytes of JSON, %d of Error(), want under 2 KB", call, name, e.Code, len(b), len(e.Error()))
			}
			got, _ := e.Details["path"].(string)
			if call == "MoveTo" && got == "a.txt" {
				continue
			}
			want := fmt.Sprintf("…(%d bytes)", len(p))
			if !strings.HasSuffix(got, want) || !strings.HasPrefix(p, strings.TrimSuffix(got, want)) || !utf8.ValidString(got) {
				t.Errorf("%s(%s): details.path = %.300q, want a prefix of the path cut on a UTF-8 boundary, then %q", call, name, got, want)
			}
		}
	}
	if got := readFile(t, dir, "a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q, want it unchanged", got)
	}
	// A long argument other than the path is cut in the message too.
	_, err := s.Write(ctx, "a.txt", "x\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: strings.Repeat("f", 100000)}})
	if !errors.Is(err, editguard.ErrInvalidArgument) {
		t.Fatalf("Write with a 100,000-byte expected_sha256: %v, want INVALID_ARGUMENT", err)
	}
	if b, _ := json.Marshal(err); len(b) > 4096 {
		t.Errorf("Write with a 100,000-byte expected_sha256: %d bytes of JSON, want at most 4 KB", len(b))
	}
}

// TestStateLookalikesProtected: the names that are .editguard on some file
// system are off limits like .editguard itself, and a path too long to
// resolve in reasonable time is refused at once.
func TestStateLookalikesProtected(t *testing.T) {
	w, _ := newWorkspace(t)
	s := w.NewSession("s")
	for _, p := range []string{".EditGuard/ledger.jsonl", ".editguard./x", ".editguard /x", "EDITGU~1/x", "sub/editgu~2/x"} {
		_, err := s.Write(ctx, p, "x\n", nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeProtectedPath {
			t.Errorf("Write(%q) error = %v, want PROTECTED_PATH", p, err)
		}
	}
	deep := strings.Repeat("a/", 5000) + "f.txt"
	_, err := s.Write(ctx, deep, "x\n", nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeInvalidArgument {
		t.Errorf("Write of a 10,005-byte path: error = %v, want INVALID_ARGUMENT", err)
	}
}
