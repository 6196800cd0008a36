package toolset

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/editguard/editguard"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// walker visits the files under a directory of the workspace through an
// os.Root, so that no symlink leads out of it; symlinks are not followed at
// all. It honours the .gitignore files of every directory from the root
// down (and .git/info/exclude), never enters .git directories, and never
// shows editguard's state directory.
type walker struct {
	root *os.Root
}

// maxIgnoreBytes bounds one .gitignore file read by the walker.
const maxIgnoreBytes = 1 << 20

// walk calls fn for every regular file under dir (a slash path relative to
// the root, "." for the root) that no .gitignore excludes, in name order,
// with its slash path relative to the root. fn returns false to stop.
func (w *walker) walk(ctx context.Context, dir string, fn func(rel string, size int64) bool) error {
	// The patterns of the directories above dir apply too.
	var ps []gitignore.Pattern
	ps = append(ps, w.patterns(".git/info", "exclude", nil)...)
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			ps = append(ps, w.patterns(path.Join(parts[:i]...), ".gitignore", parts[:i])...)
		}
	}
	_, err := w.dir(ctx, dir, ps, fn)
	return err
}

func split(rel string) []string {
	if rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// dir walks one directory; it returns false when fn asked to stop.
func (w *walker) dir(ctx context.Context, dir string, ps []gitignore.Pattern, fn func(string, int64) bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ps = append(slices.Clip(ps), w.patterns(dir, ".gitignore", split(dir))...)
	m := gitignore.NewMatcher(ps)
	f, err := w.root.Open(dir)
	if err != nil {
		return true, nil // unreadable: skipped
	}
	des, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return true, nil
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range des {
		name := de.Name()
		rel := path.Join(dir, name)
		switch {
		case name == editguard.StateDir, name == ".git":
			continue
		case de.Type()&fs.ModeSymlink != 0:
			continue
		case de.IsDir():
			if m.Match(split(rel), true) {
				continue
			}
			if more, err := w.dir(ctx, rel, ps, fn); !more || err != nil {
				return more, err
			}
		case de.Type().IsRegular():
			if m.Match(split(rel), false) {
				continue
			}
			var size int64
			if info, err := de.Info(); err == nil {
				size = info.Size()
			}
			if !fn(rel, size) {
				return false, nil
			}
		}
	}
	return true, nil
}

// patterns reads the ignore file name in dir, whose patterns apply below
// domain.
func (w *walker) patterns(dir, name string, domain []string) []gitignore.Pattern {
	f, err := w.root.Open(path.Join(dir, name))
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(io.LimitReader(f, maxIgnoreBytes))
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// matchGlob reports whether the slash path rel matches pattern, where "*",
// "?" and "[...]" match within one path element and "**" matches any
// number of elements. A pattern without a "/" matches the file's name at
// any depth, as in .gitignore.
func matchGlob(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(rel))
		return ok
	}
	return matchParts(strings.Split(strings.TrimPrefix(pattern, "/"), "/"), strings.Split(rel, "/"))
}

func matchParts(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchParts(pat[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// validGlob checks a pattern's syntax.
func validGlob(pattern string) bool {
	for _, p := range strings.Split(pattern, "/") {
		if p == "**" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return false
		}
	}
	return true
}

// startDir resolves a tool's path argument to a directory relative to the
// root, checked as the session checks paths.
func (t *Toolset) startDir(tool string, p *string) (*os.Root, string, string, error) {
	display := "."
	if p != nil && *p != "" {
		display = *p
	}
	root, rel, err := t.openRoot(display)
	if err != nil {
		return nil, "", "", err
	}
	st, err := root.Stat(rel)
	if err != nil {
		root.Close()
		return nil, "", "", fsError(display, err)
	}
	if !st.IsDir() {
		root.Close()
		return nil, "", "", invalidArgument(tool, "not a directory: "+display, map[string]any{"path": display})
	}
	return root, path.Clean(strings.ReplaceAll(rel, string(os.PathSeparator), "/")), display, nil
}
