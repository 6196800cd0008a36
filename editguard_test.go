package editguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

var ctx = context.Background()

func errorCode(err error) editguard.Code {
	var e *editguard.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func reason(err error) string {
	var e *editguard.Error
	if errors.As(err, &e) {
		r, _ := e.Details["reason"].(string)
		return r
	}
	return ""
}

func TestReadEditWrite(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	s := w.NewSession("t")
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "2"}}, nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Fatalf("Edit before Read error = %v, want NOT_READ", err)
	}
	r, err := s.Read(ctx, "a.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Content != "one\ntwo\n" || r.TotalLines != 2 {
		t.Fatalf("Read() = %+v", r)
	}
	res, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "a.txt"); got != "one\n2\n" {
		t.Fatalf("file = %q, want %q", got, "one\n2\n")
	}
	if res.Diff == "" || res.Created {
		t.Errorf("Edit() result = %+v", res)
	}
	// Own write updated the baseline: a second edit needs no read.
	if _, err := s.Write(ctx, "a.txt", "fresh\n", nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "a.txt"); got != "fresh\n" {
		t.Fatalf("file = %q", got)
	}
}

// TestPathThroughAFile: a path whose parent is a regular file does not exist
// (reads) and cannot be created (writes); neither is an IO failure.
func TestPathThroughAFile(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "x\n")
	s := w.NewSession("t")
	if _, err := s.Read(ctx, "a.txt/b", nil); !errors.Is(err, editguard.ErrNotFound) {
		t.Errorf("Read(a.txt/b) error = %v, want NOT_FOUND", err)
	}
	if _, err := s.Write(ctx, "a.txt/b", "y", nil); !errors.Is(err, editguard.ErrNotAFile) {
		t.Errorf("Write(a.txt/b) error = %v, want NOT_A_FILE", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "x\n" {
		t.Errorf("a.txt = %q, want it untouched", got)
	}
}

// TestRepointedSymlinkIsStale: a symlink read while it led to a.txt and
// re-pointed at b.txt since must not let a change land in b.txt, which the
// session never saw.
func TestRepointedSymlinkIsStale(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "same\n")
	writeFile(t, dir, "b.txt", "same\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("t")
	if _, err := s.Read(ctx, "link.txt", nil); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "link.txt"))
	if err := os.Symlink("b.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Edit(ctx, "link.txt", []editguard.Edit{{OldString: "same", NewString: "changed"}}, nil)
	if !errors.Is(err, editguard.ErrStaleFile) || reason(err) != editguard.ReasonTypeChanged {
		t.Fatalf("Edit through re-pointed link error = %v, want STALE_FILE type_changed", err)
	}
	if got := readFile(t, dir, "b.txt"); got != "same\n" {
		t.Fatalf("b.txt = %q, want untouched", got)
	}
	// Reading again through the link recovers.
	if _, err := s.Read(ctx, "link.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(ctx, "link.txt", []editguard.Edit{{OldString: "same", NewString: "changed"}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "b.txt"); got != "changed\n" {
		t.Fatalf("b.txt = %q, want the edit", got)
	}
}
