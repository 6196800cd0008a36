package toolset

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/editguard/editguard"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"golang.org/x/sys/unix"
)

// walker visits the files under a directory of the workspace. It starts
// from a directory opened through os.Root and goes down by openat with
// O_NOFOLLOW on directory descriptors, so no symlink is ever followed, no
// path leaves the root, and a file costs one open, not one per path
// element. It honours .git/info/exclude and the .gitignore files of every
// directory from the root down, never enters .git directories, and never
// shows editguard's state directory.
type walker struct {
	root *os.Root
}

// maxIgnoreBytes bounds one .gitignore file read by the walker.
const maxIgnoreBytes = 1 << 20

// walk calls fn for every regular file under dir (a slash path relative to
// the root, "." for the root) that no .gitignore excludes, in name order,
// with its slash path relative to the root, and the descriptor of the
// directory that holds it (open the file there by its base name with
// openFileAt). fn returns false to stop.
func (w *walker) walk(ctx context.Context, dir string, fn func(rel string, dirfd int) bool) error {
	// The patterns of the directories above dir apply too.
	var ps []gitignore.Pattern
	ps = append(ps, w.patterns(".git/info", "exclude", nil)...)
	if dir != "." {
		parts := strings.Split(dir, "/")
		for i := range parts {
			ps = append(ps, w.patterns(path.Join(append([]string{"."}, parts[:i]...)...), ".gitignore", parts[:i])...)
		}
	}
	f, err := w.root.Open(dir)
	if err != nil {
		return nil
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return err
	}
	unix.CloseOnExec(fd)
	_, err = w.dir(ctx, fd, dir, ps, fn)
	return err
}

func split(rel string) []string {
	if rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// dir walks the directory open as fd, which it closes; it returns false
// when fn asked to stop.
func (w *walker) dir(ctx context.Context, fd int, dir string, ps []gitignore.Pattern, fn func(string, int) bool) (bool, error) {
	// A descriptor opened without O_NONBLOCK is not registered with the
	// runtime's poller.
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	ps = append(slices.Clip(ps), patternsAt(fd, ".gitignore", split(dir))...)
	m := gitignore.NewMatcher(ps)
	des, err := f.ReadDir(-1)
	if err != nil {
		return true, nil // unreadable: skipped
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
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // unreadable, or replaced by a symlink: skipped
			}
			if more, err := w.dir(ctx, sub, rel, ps, fn); !more || err != nil {
				return more, err
			}
		case de.Type().IsRegular():
			if m.Match(split(rel), false) {
				continue
			}
			if !fn(rel, fd) {
				return false, nil
			}
		}
	}
	return true, nil
}

// openFileAt opens the regular file name in the directory dirfd for
// reading, without following a symlink or blocking on a FIFO swapped in,
// and returns its descriptor and size.
func openFileAt(dirfd int, name string) (int, int64, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("not a regular file")
	}
	return fd, st.Size, nil
}

// patterns reads the ignore file name in dir, whose patterns apply below
// domain.
func (w *walker) patterns(dir, name string, domain []string) []gitignore.Pattern {
	f, err := w.root.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	return patternsAt(int(f.Fd()), name, domain)
}

// patternsAt reads the ignore file name in the directory dirfd.
func patternsAt(dirfd int, name string, domain []string) []gitignore.Pattern {
	fd, size, err := openFileAt(dirfd, name)
	if err != nil {
		return nil
	}
	data, err := readFD(fd, size, maxIgnoreBytes)
	unix.Close(fd)
	if err != nil {
		return nil
	}
	var ps []gitignore.Pattern
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// readFD reads the file open as fd, of size bytes when opened, to its end
// into a new buffer, failing past max bytes.
func readFD(fd int, size, max int64) ([]byte, error) {
	if size > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return readFDInto(make([]byte, 0, size+512), fd, max)
}

// readFDInto reads fd to its end into buf, failing past max bytes.
func readFDInto(buf []byte, fd int, max int64) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("grew past %d bytes", max)
		}
	}
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
