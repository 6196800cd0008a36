package editguard_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

func TestCreateDirectory(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	res, err := s.CreateDirectory(ctx, "a/b/c")
	if err != nil || !res.Created {
		t.Fatalf("CreateDirectory = %+v, %v", res, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "a/b/c")); err != nil || !st.IsDir() {
		t.Fatalf("a/b/c: %v", err)
	}
	if res, err := s.CreateDirectory(ctx, "a/b"); err != nil || res.Created {
		t.Fatalf("CreateDirectory of an existing directory = %+v, %v", res, err)
	}
	writeFile(t, dir, "f.txt", "x\n")
	if _, err := s.CreateDirectory(ctx, "f.txt"); errorCode(err) != editguard.CodeNotAFile {
		t.Fatalf("over a file: %v, want NOT_A_FILE", err)
	}
	if _, err := s.CreateDirectory(ctx, "f.txt/sub"); errorCode(err) != editguard.CodeNotAFile && errorCode(err) != editguard.CodeIO {
		t.Fatalf("under a file: %v", err)
	}
	for _, p := range []string{".git/hooks", "vendor/x/.git/hooks", ".editguard/x", "../out"} {
		if _, err := s.CreateDirectory(ctx, p); err == nil {
			t.Errorf("CreateDirectory(%s) succeeded", p)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "out")); err == nil {
		t.Error("a directory was made outside the root")
	}
	// A symlink that leaves the root is not followed.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDirectory(ctx, "link/new"); errorCode(err) != editguard.CodeOutsideRoot {
		t.Fatalf("through a symlink out of the root: %v, want OUTSIDE_ROOT", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("made %v outside the root", ents)
	}
}
