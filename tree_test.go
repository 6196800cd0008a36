package editguard_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/editguard/editguard"
)

func TestTreeOperations(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "abc")
	writeFile(t, dir, "d/b.txt", "b")
	writeFile(t, dir, "nested/.editguard/ledger.jsonl", "")
	writeFile(t, dir, "nested/c.txt", "c")
	outside := t.TempDir()
	writeFile(t, outside, "secret", "s")
	for _, l := range [][2]string{{"a.txt", "link"}, {filepath.Join(outside, "secret"), "out"}, {outside, "outdir"}, {"d", "dlink"}, {"missing", "dangling"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}

	stats := []struct {
		path  string
		code  editguard.Code // of Stat
		lcode editguard.Code // of Lstat
		ltype fs.FileMode
	}{
		{"a.txt", "", "", 0},
		{"link", "", "", fs.ModeSymlink},
		{"dlink/b.txt", "", "", 0},
		{"d/../a.txt", "", "", 0},
		{"dlink/../a.txt", "", "", 0},
		{"out", editguard.CodeOutsideRoot, "", fs.ModeSymlink},
		{"outdir/secret", editguard.CodeOutsideRoot, editguard.CodeOutsideRoot, 0},
		{"dangling", editguard.CodeNotFound, "", fs.ModeSymlink},
		{"nope", editguard.CodeNotFound, editguard.CodeNotFound, 0},
		{"a.txt/x", editguard.CodeNotFound, editguard.CodeNotFound, 0},
		{"../x", editguard.CodeOutsideRoot, editguard.CodeOutsideRoot, 0},
		{filepath.Join(outside, "secret"), editguard.CodeOutsideRoot, editguard.CodeOutsideRoot, 0},
		{".editguard", editguard.CodeProtectedPath, editguard.CodeProtectedPath, 0},
		{"nested/.editguard/ledger.jsonl", editguard.CodeProtectedPath, editguard.CodeProtectedPath, 0},
		{"", editguard.CodeInvalidArgument, editguard.CodeInvalidArgument, 0},
		{"a\x00b", editguard.CodeInvalidArgument, editguard.CodeInvalidArgument, 0},
	}
	for _, tt := range stats {
		fi, err := w.Stat(tt.path)
		if got := errorCode(err); got != tt.code || (err != nil && tt.code == "") {
			t.Errorf("Stat(%q) = %v, want code %q", tt.path, err, tt.code)
		} else if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
			t.Errorf("Stat(%q) mode = %v, want a followed link", tt.path, fi.Mode())
		}
		fi, err = w.Lstat(tt.path)
		if got := errorCode(err); got != tt.lcode || (err != nil && tt.lcode == "") {
			t.Errorf("Lstat(%q) = %v, want code %q", tt.path, err, tt.lcode)
		} else if err == nil && fi.Mode().Type() != tt.ltype {
			t.Errorf("Lstat(%q) type = %v, want %v", tt.path, fi.Mode().Type(), tt.ltype)
		}
	}
	if target, err := w.Readlink("out"); err != nil || target != filepath.Join(outside, "secret") {
		t.Errorf("Readlink(out) = %q, %v", target, err)
	}

	names := func(p string) []string {
		des, err := w.ReadDir(p)
		if err != nil {
			t.Fatalf("ReadDir(%q): %v", p, err)
		}
		var out []string
		for _, de := range des {
			out = append(out, de.Name())
		}
		return out
	}
	if got, want := names("."), []string{"a.txt", "d", "dangling", "dlink", "link", "nested", "out", "outdir"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir(.) = %q, want %q", got, want)
	}
	if got, want := names("nested"), []string{"c.txt"}; !slices.Equal(got, want) {
		t.Errorf("ReadDir(nested) = %q, want %q (no state directory at any depth)", got, want)
	}
	if got, want := names("d/.."), names("."); !slices.Equal(got, want) {
		t.Errorf("ReadDir(d/..) = %q, want the root's %q", got, want)
	}
	if _, err := w.ReadDir("outdir"); errorCode(err) != editguard.CodeOutsideRoot {
		t.Errorf("ReadDir(outdir) = %v, want OUTSIDE_ROOT", err)
	}
	if _, err := w.ReadDir("a.txt"); errorCode(err) != editguard.CodeNotFound {
		t.Errorf("ReadDir(a.txt) = %v, want NOT_FOUND", err)
	}
	if f, err := w.Open("out"); errorCode(err) != editguard.CodeOutsideRoot {
		if f != nil {
			f.Close()
		}
		t.Errorf("Open(out) = %v, want OUTSIDE_ROOT", err)
	}
}

func TestWalk(t *testing.T) {
	w, dir := newWorkspace(t)
	for name, content := range map[string]string{
		".gitignore":          "*.log\nbuild/\n",
		"a.go":                "",
		"x.log":               "",
		"build/out.go":        "",
		"sub/.gitignore":      "!keep.log\nlocal.go\n",
		"sub/keep.log":        "",
		"sub/drop.log":        "",
		"sub/local.go":        "",
		"sub/deep/local.go":   "",
		"sub/deep/z.go":       "",
		".git/info/exclude":   "excluded.go\n",
		".git/config":         "",
		"excluded.go":         "",
		"vendor/m/.git/HEAD":  "",
		"vendor/m/m.go":       "",
		"nested/.editguard/x": "",
	} {
		writeFile(t, dir, name, content)
	}
	outside := t.TempDir()
	writeFile(t, outside, "o.go", "")
	if err := os.Symlink(outside, filepath.Join(dir, "sub", "outlink")); err != nil {
		t.Fatal(err)
	}
	walk := func(start string) (paths, rels []string) {
		t.Helper()
		err := w.Walk(context.Background(), start, func(f *editguard.WalkFile) bool {
			paths, rels = append(paths, f.Path), append(rels, f.Rel)
			return true
		})
		if err != nil {
			t.Fatalf("Walk(%q): %v", start, err)
		}
		return paths, rels
	}
	got, _ := walk(".")
	want := []string{".gitignore", "a.go", "sub/.gitignore", "sub/deep/z.go", "sub/keep.log", "vendor/m/m.go"}
	if !slices.Equal(got, want) {
		t.Errorf("Walk(.) = %q, want %q", got, want)
	}
	// From a subdirectory, the ignore files above it still apply.
	got, rels := walk("sub/deep/..")
	if want := []string{"sub/.gitignore", "sub/deep/z.go", "sub/keep.log"}; !slices.Equal(got, want) {
		t.Errorf("Walk(sub/deep/..) = %q, want %q", got, want)
	}
	if want := []string{".gitignore", "deep/z.go", "keep.log"}; !slices.Equal(rels, want) {
		t.Errorf("Walk(sub/deep/..) Rel = %q, want %q", rels, want)
	}
	if err := w.Walk(context.Background(), "sub/outlink", func(*editguard.WalkFile) bool { return true }); errorCode(err) != editguard.CodeOutsideRoot {
		t.Errorf("Walk(sub/outlink) = %v, want OUTSIDE_ROOT", err)
	}
	// Stopping, and reading a file met.
	n := 0
	err := w.Walk(context.Background(), ".", func(f *editguard.WalkFile) bool {
		if f.Path == "a.go" {
			rf, err := f.Open()
			if err != nil {
				t.Fatalf("Open(%s): %v", f.Path, err)
			}
			defer rf.Close()
			if data, err := rf.ReadAll(nil, 10); err != nil || len(data) != 0 {
				t.Errorf("ReadAll(a.go) = %q, %v", data, err)
			}
		}
		n++
		return n < 2
	})
	if err != nil || n != 2 {
		t.Errorf("Walk stopped after %d files (%v), want 2", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Walk(ctx, ".", func(*editguard.WalkFile) bool { return true }); err != context.Canceled {
		t.Errorf("Walk with a canceled context = %v, want context.Canceled", err)
	}
}
