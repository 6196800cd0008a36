package editguard_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func ptr[T any](v T) *T { return &v }

// TestPreconditionMatrix runs every combination of the session's baseline,
// an explicit precondition, must_not_exist and a missing file through Write
// and Edit, and checks the outcome against the rules of precondition.go: an explicit
// precondition replaces the baseline entirely; with none, the baseline
// decides; a whole-file write needs a full read; a new file needs nothing.
func TestPreconditionMatrix(t *testing.T) {
	const (
		seen    = "alpha\nbeta\n"        // what a stale baseline read
		current = "alpha\nBETA\ngamma\n" // what is on disk when the change runs
	)
	mtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	mtimeMS := mtime.UnixMilli()

	baselines := []string{"none", "full", "partial", "stale"}
	type explicit struct {
		name string
		pre  *editguard.Precondition // nil: none
	}
	explicits := []explicit{
		{"none", nil},
		{"sha-match", &editguard.Precondition{ExpectedSHA256: sha(current)}},
		{"sha-mismatch", &editguard.Precondition{ExpectedSHA256: sha(seen)}},
		{"mtime-only", &editguard.Precondition{ExpectedMtimeMS: ptr(mtimeMS)}},
		{"mtime-mismatch", &editguard.Precondition{ExpectedMtimeMS: ptr(mtimeMS + 1000)}},
		{"size-only", &editguard.Precondition{ExpectedSizeBytes: ptr(int64(len(current)))}},
		{"size-mismatch", &editguard.Precondition{ExpectedSizeBytes: ptr(int64(len(seen)))}},
		{"require-all", &editguard.Precondition{ExpectedSHA256: sha(current), ExpectedMtimeMS: ptr(mtimeMS),
			ExpectedSizeBytes: ptr(int64(len(current))), RequireAll: true}},
		{"require-all-one-wrong", &editguard.Precondition{ExpectedSHA256: sha(current), ExpectedMtimeMS: ptr(mtimeMS),
			ExpectedSizeBytes: ptr(int64(len(seen))), RequireAll: true}},
		{"require-all-missing", &editguard.Precondition{ExpectedSHA256: sha(current), RequireAll: true}},
	}

	// want states the contract: the code and reason expected, or "" for
	// success.
	want := func(op, base string, ex explicit, mustNotExist, exists bool) (editguard.Code, string) {
		pre := ex.pre
		hasValues := pre != nil
		switch {
		case pre != nil && pre.RequireAll && (pre.ExpectedSHA256 == "" || pre.ExpectedMtimeMS == nil || pre.ExpectedSizeBytes == nil):
			return editguard.CodeInvalidArgument, ""
		case mustNotExist && hasValues:
			return editguard.CodeInvalidArgument, ""
		case mustNotExist && exists:
			return editguard.CodeStaleFile, editguard.ReasonCreated
		case mustNotExist:
			// The precondition holds; an edit of a missing file has
			// nothing to replace.
			if op == "edit" {
				return editguard.CodeNotFound, ""
			}
			return "", ""
		case hasValues && !exists:
			return editguard.CodeStaleFile, editguard.ReasonDeleted
		case hasValues && strings.Contains(ex.name, "mismatch"), hasValues && strings.Contains(ex.name, "wrong"):
			return editguard.CodeStaleFile, editguard.ReasonModified
		case hasValues:
			return "", ""
		// No explicit precondition: the baseline decides.
		case base == "none" && exists:
			return editguard.CodeNotRead, ""
		case base == "none":
			if op == "edit" {
				return editguard.CodeNotFound, ""
			}
			return "", ""
		case !exists:
			return editguard.CodeStaleFile, editguard.ReasonDeleted
		case base == "stale":
			return editguard.CodeStaleFile, editguard.ReasonModified
		case base == "partial" && op == "write":
			return editguard.CodeNotRead, "partial_read"
		}
		return "", ""
	}

	w, root := newWorkspace(t)
	n := 0
	for _, op := range []string{"write", "edit"} {
		for _, base := range baselines {
			for _, ex := range explicits {
				for _, mustNotExist := range []bool{false, true} {
					for _, exists := range []bool{true, false} {
						name := fmt.Sprintf("%s/baseline=%s/explicit=%s/must_not_exist=%v/exists=%v", op, base, ex.name, mustNotExist, exists)
						n++
						rel := fmt.Sprintf("m%d/f.txt", n)
						t.Run(name, func(t *testing.T) {
							s := w.NewSession("t")
							dir := filepath.Join(root, filepath.Dir(rel))
							p := filepath.Join(dir, "f.txt")
							first := current
							if base == "stale" {
								first = seen
							}
							writeFile(t, dir, "f.txt", first)
							switch base {
							case "full", "stale":
								if _, err := s.Read(ctx, rel, nil); err != nil {
									t.Fatal(err)
								}
							case "partial":
								if _, err := s.Read(ctx, rel, &editguard.ReadOptions{Limit: 1}); err != nil {
									t.Fatal(err)
								}
							}
							writeFile(t, dir, "f.txt", current)
							if err := os.Chtimes(p, mtime, mtime); err != nil {
								t.Fatal(err)
							}
							if !exists {
								if err := os.Remove(p); err != nil {
									t.Fatal(err)
								}
							}
							var pre *editguard.Precondition
							if ex.pre != nil {
								c := *ex.pre
								pre = &c
							}
							if mustNotExist {
								if pre == nil {
									pre = &editguard.Precondition{}
								}
								pre.MustNotExist = true
							}

							var err error
							var wantContent string
							if op == "write" {
								wantContent = "written\n"
								_, err = s.Write(ctx, rel, wantContent, &editguard.WriteOptions{Precondition: pre})
							} else {
								wantContent = "ALPHA\nBETA\ngamma\n"
								// Not merged over a stale baseline: the
								// matrix is of the checks (merge_test.go
								// has the merges).
								_, err = s.Edit(ctx, rel, []editguard.Edit{{OldString: "alpha", NewString: "ALPHA"}},
									&editguard.EditOptions{Precondition: pre, NoMerge: true})
							}

							wantCode, wantReason := want(op, base, ex, mustNotExist, exists)
							if got := errorCode(err); got != wantCode {
								t.Fatalf("%s error = %v, want code %q", op, err, wantCode)
							}
							if got := reason(err); got != wantReason {
								t.Errorf("%s reason = %q, want %q (error %v)", op, got, wantReason, err)
							}
							if err != nil && !errors.Is(err, &editguard.Error{Code: wantCode}) {
								t.Errorf("errors.Is(%v, %s) = false", err, wantCode)
							}
							got, rerr := os.ReadFile(p)
							switch {
							case err == nil && string(got) != wantContent:
								t.Errorf("after success file = %q, %v; want %q", got, rerr, wantContent)
							case err != nil && exists && string(got) != current:
								t.Errorf("after refusal file = %q, want it untouched (%q)", got, current)
							case err != nil && !exists && !errors.Is(rerr, os.ErrNotExist):
								t.Errorf("after refusal a missing file exists: %q", got)
							}
							if err != nil && exists {
								fi, _ := os.Stat(p)
								if !fi.ModTime().Equal(mtime) {
									t.Errorf("after refusal mtime = %v, want untouched %v", fi.ModTime(), mtime)
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestNoFalseConflict checks that what changes a file's metadata, or rewrites
// the same bytes, is not a conflict: only the content decides.
func TestNoFalseConflict(t *testing.T) {
	tests := []struct {
		name    string
		disturb func(t *testing.T, p string)
	}{
		{"touch", func(t *testing.T, p string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(p, later, later); err != nil {
				t.Fatal(err)
			}
		}},
		{"mtime backwards", func(t *testing.T, p string) {
			earlier := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(p, earlier, earlier); err != nil {
				t.Fatal(err)
			}
		}},
		{"same bytes, new inode", func(t *testing.T, p string) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tmp := p + ".new"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"same bytes rewritten in place", func(t *testing.T, p string) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	w, root := newWorkspace(t)
	for i, tt := range tests {
		for _, op := range []string{"write", "edit"} {
			sub := fmt.Sprintf("%s%d", op, i)
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				dir := filepath.Join(root, sub)
				writeFile(t, dir, "f.txt", "one\ntwo\n")
				s := w.NewSession("t")
				if _, err := s.Read(ctx, sub+"/f.txt", nil); err != nil {
					t.Fatal(err)
				}
				tt.disturb(t, filepath.Join(dir, "f.txt"))
				var err error
				if op == "write" {
					_, err = s.Write(ctx, sub+"/f.txt", "one\n2\n", nil)
				} else {
					_, err = s.Edit(ctx, sub+"/f.txt", []editguard.Edit{{OldString: "two", NewString: "2"}}, nil)
				}
				if err != nil {
					t.Fatalf("%s after %s: %v, want success", op, tt.name, err)
				}
				if got := readFile(t, dir, "f.txt"); got != "one\n2\n" {
					t.Errorf("file = %q, want %q", got, "one\n2\n")
				}
			})
		}
	}
}

// TestStaleness checks that each way a file can change after it was read is
// refused with its reason, and that the refusal leaves the path as the other
// program left it.
func TestStaleness(t *testing.T) {
	tests := []struct {
		name       string
		pre        *editguard.Precondition
		read       bool
		change     func(t *testing.T, dir string)
		wantReason string
		// wantNotRead: the path now names another file, which this
		// session has not read.
		wantNotRead bool
		check       func(t *testing.T, dir string)
	}{
		{
			name: "modified", read: true,
			change:     func(t *testing.T, dir string) { writeFile(t, dir, "f.txt", "someone else's\n") },
			wantReason: editguard.ReasonModified,
			check:      wantContent("someone else's\n"),
		},
		{
			name: "modified, same size and mtime", read: true,
			change: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "f.txt")
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				writeFile(t, dir, "f.txt", "ONE\n")
				if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: editguard.ReasonModified,
			check:      wantContent("ONE\n"),
		},
		{
			name: "deleted", read: true,
			change: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "f.txt")); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: editguard.ReasonDeleted,
			check: func(t *testing.T, dir string) {
				if _, err := os.Lstat(filepath.Join(dir, "f.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Lstat after refusal: %v, want not exist", err)
				}
			},
		},
		{
			name: "replaced by a directory", read: true,
			change: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "f.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(p, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: editguard.ReasonTypeChanged,
			check: func(t *testing.T, dir string) {
				fi, err := os.Lstat(filepath.Join(dir, "f.txt"))
				if err != nil || !fi.IsDir() {
					t.Errorf("after refusal f.txt = %v, %v; want the directory", fi, err)
				}
			},
		},
		{
			name: "replaced by a symlink", read: true,
			change: func(t *testing.T, dir string) {
				writeFile(t, dir, "other.txt", "one\n")
				p := filepath.Join(dir, "f.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("other.txt", p); err != nil {
					t.Fatal(err)
				}
			},
			// Symlinks inside the root are followed, but the name was read
			// when it was a file of its own: the path now leads elsewhere.
			wantReason: editguard.ReasonTypeChanged,
			check: func(t *testing.T, dir string) {
				target, err := os.Readlink(filepath.Join(dir, "f.txt"))
				if err != nil || target != "other.txt" {
					t.Errorf("after refusal f.txt -> %q, %v; want the symlink to other.txt", target, err)
				}
				if got := readFile(t, dir, "other.txt"); got != "one\n" {
					t.Errorf("symlink target = %q, want untouched", got)
				}
			},
		},
		{
			name: "replaced by a symlink to a missing file", read: true,
			change: func(t *testing.T, dir string) {
				p := filepath.Join(dir, "f.txt")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("missing.txt", p); err != nil {
					t.Fatal(err)
				}
			},
			// Without the name's own baseline the write would create
			// missing.txt through a link the agent never saw.
			wantReason: editguard.ReasonTypeChanged,
			check: func(t *testing.T, dir string) {
				if _, err := os.Lstat(filepath.Join(dir, "missing.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("missing.txt was created through the symlink: %v", err)
				}
			},
		},
		{
			name: "created after must_not_exist", pre: &editguard.Precondition{MustNotExist: true},
			change:     func(t *testing.T, dir string) { writeFile(t, dir, "new.txt", "theirs\n") },
			wantReason: editguard.ReasonCreated,
			check: func(t *testing.T, dir string) {
				if got := readFile(t, dir, "new.txt"); got != "theirs\n" {
					t.Errorf("new.txt = %q, want %q", got, "theirs\n")
				}
			},
		},
	}
	w, root := newWorkspace(t)
	for i, tt := range tests {
		for _, op := range []string{"write", "edit"} {
			sub := fmt.Sprintf("%s%d", op, i)
			t.Run(tt.name+"/"+op, func(t *testing.T) {
				dir := filepath.Join(root, sub)
				writeFile(t, dir, "f.txt", "one\n")
				s := w.NewSession("t")
				name := sub + "/f.txt"
				if tt.pre != nil && tt.pre.MustNotExist {
					name = sub + "/new.txt"
				}
				if tt.read {
					if _, err := s.Read(ctx, name, nil); err != nil {
						t.Fatal(err)
					}
				}
				tt.change(t, dir)
				var err error
				if op == "write" {
					_, err = s.Write(ctx, name, "mine\n", &editguard.WriteOptions{Precondition: tt.pre})
				} else if tt.pre != nil && tt.pre.MustNotExist {
					_, err = s.Edit(ctx, name, []editguard.Edit{{OldString: "", NewString: "mine\n"}}, &editguard.EditOptions{Precondition: tt.pre})
				} else {
					_, err = s.Edit(ctx, name, []editguard.Edit{{OldString: "one", NewString: "mine"}}, nil)
				}
				wantCode := editguard.CodeStaleFile
				if tt.wantNotRead {
					wantCode = editguard.CodeNotRead
				}
				if got := errorCode(err); got != wantCode {
					t.Fatalf("%s error = %v, want %s", op, err, wantCode)
				}
				if got := reason(err); got != tt.wantReason {
					t.Errorf("reason = %q, want %q", got, tt.wantReason)
				}
				if !editguard.IsConflict(err) {
					t.Errorf("IsConflict(%v) = false", err)
				}
				tt.check(t, dir)
				assertNoTemp(t, dir)
			})
		}
	}
}

func wantContent(want string) func(t *testing.T, dir string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		if got := readFile(t, dir, "f.txt"); got != want {
			t.Errorf("after refusal f.txt = %q, want %q", got, want)
		}
	}
}

// TestSandbox checks that no path reaches outside the root or into the
// state directory, and that a symlink inside the root is written through.
func TestSandbox(t *testing.T) {
	w, dir := newWorkspace(t)
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", "secret\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "outdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+filepath.Base(outside), filepath.Join(dir, "rel-out")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "sub/in.txt", "in\n")

	tests := []struct {
		path string
		want editguard.Code
	}{
		{"../secret.txt", editguard.CodeOutsideRoot},
		{"sub/../../secret.txt", editguard.CodeOutsideRoot},
		{filepath.Join(outside, "secret.txt"), editguard.CodeOutsideRoot},
		{"out.txt", editguard.CodeOutsideRoot},
		{"outdir/secret.txt", editguard.CodeOutsideRoot},
		{"outdir/new.txt", editguard.CodeOutsideRoot},
		{"rel-out/secret.txt", editguard.CodeOutsideRoot},
		{"a\x00b", editguard.CodeInvalidArgument},
		{".editguard/sessions/x.json", editguard.CodeProtectedPath},
		{".editguard", editguard.CodeProtectedPath},
		{"sub/../.editguard/locks/x", editguard.CodeProtectedPath},
		{filepath.Join(dir, ".editguard", "x"), editguard.CodeProtectedPath},
		{".git/config", editguard.CodeProtectedPath}, // DefaultDeny: readable, never changed
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.path, "/", "|"), func(t *testing.T) {
			s := w.NewSession("t")
			if tt.path != ".git/config" {
				if _, err := s.Read(ctx, tt.path, nil); errorCode(err) != tt.want {
					t.Errorf("Read(%q) error = %v, want %s", tt.path, err, tt.want)
				}
			}
			_, err := s.Write(ctx, tt.path, "pwned\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: sha("secret\n")}})
			if errorCode(err) != tt.want {
				t.Errorf("Write(%q) error = %v, want %s", tt.path, err, tt.want)
			}
			_, err = s.Write(ctx, tt.path, "pwned\n", nil)
			if errorCode(err) != tt.want {
				t.Errorf("Write(%q) without precondition error = %v, want %s", tt.path, err, tt.want)
			}
			if got := readFile(t, outside, "secret.txt"); got != "secret\n" {
				t.Fatalf("outside file = %q after Write(%q)", got, tt.path)
			}
			if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
				t.Fatalf("Write(%q) created a file outside the root", tt.path)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".editguard", "x")); err == nil {
		t.Error("a write created a file in the state directory")
	}

	t.Run("symlink inside is written through", func(t *testing.T) {
		if err := os.Symlink("sub/in.txt", filepath.Join(dir, "link.txt")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("sub", filepath.Join(dir, "linkdir")); err != nil {
			t.Fatal(err)
		}
		s := w.NewSession("t")
		if _, err := s.Read(ctx, "link.txt", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Edit(ctx, "link.txt", []editguard.Edit{{OldString: "in", NewString: "IN"}}, nil); err != nil {
			t.Fatalf("Edit through symlink: %v", err)
		}
		if got := readFile(t, dir, "sub/in.txt"); got != "IN\n" {
			t.Errorf("symlink target = %q, want %q", got, "IN\n")
		}
		fi, err := os.Lstat(filepath.Join(dir, "link.txt"))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("link.txt after edit: %v, %v; want it still a symlink", fi, err)
		}
		// The baseline belongs to the resolved file: the same file through
		// another name needs no new read.
		if _, err := s.Edit(ctx, "linkdir/in.txt", []editguard.Edit{{OldString: "IN", NewString: "in!"}}, nil); err != nil {
			t.Fatalf("Edit through symlinked directory: %v", err)
		}
		if got := readFile(t, dir, "sub/in.txt"); got != "in!\n" {
			t.Errorf("file = %q, want %q", got, "in!\n")
		}
	})
}

// TestHardLinkDetached documents the behaviour for a target with other hard
// links: the commit replaces the directory entry atomically, so the edited
// name gets a new inode and the other names keep the old content.
func TestHardLinkDetached(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "shared\n")
	if err := os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("t")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "shared", NewString: "mine"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "a.txt"); got != "mine\n" {
		t.Errorf("a.txt = %q, want %q", got, "mine\n")
	}
	if got := readFile(t, dir, "b.txt"); got != "shared\n" {
		t.Errorf("b.txt (other hard link) = %q, want the old content %q", got, "shared\n")
	}
	fa, _ := os.Stat(filepath.Join(dir, "a.txt"))
	fb, _ := os.Stat(filepath.Join(dir, "b.txt"))
	if os.SameFile(fa, fb) {
		t.Error("a.txt and b.txt are still the same file, want a.txt detached")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "b.txt")); !bytes.Equal(data, []byte("shared\n")) {
		t.Errorf("b.txt = %q", data)
	}
}
