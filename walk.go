//go:build unix

package editguard

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"golang.org/x/sys/unix"
)

// maxIgnoreBytes bounds one ignore file read by Walk.
const maxIgnoreBytes = 1 << 20

// A WalkFile is a regular file met by Walk.
type WalkFile struct {
	// Path is the file's slash path relative to the root, and Rel relative
	// to the directory walked.
	Path, Rel string
	dirfd     int
}

// Open opens the file for reading without following a symlink or blocking
// on a FIFO put in its place, and fails unless it is a regular file. It
// must be called before the Walk callback that received f returns; the
// file it returns may be used and closed later, from any goroutine.
func (f *WalkFile) Open() (*RegularFile, error) {
	fd, size, err := openFileAt(f.dirfd, path.Base(f.Path))
	if err != nil {
		return nil, newError(CodeIO, f.Path, err.Error(), "", err)
	}
	return &RegularFile{fd: fd, size: size}, nil
}

// A RegularFile is a file opened by WalkFile.Open. It is not safe for
// concurrent use.
type RegularFile struct {
	fd   int
	size int64
}

// Size is the file's size when it was opened.
func (f *RegularFile) Size() int64 { return f.size }

// ReadAll reads the file from where it stands to its end, appending to
// buf[:0] (which it grows as needed) and failing past max bytes.
func (f *RegularFile) ReadAll(buf []byte, max int64) ([]byte, error) {
	if f.size > max {
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	return readFDInto(buf[:0], f.fd, max)
}

// Close closes the file.
func (f *RegularFile) Close() error { return unix.Close(f.fd) }

// Walk calls fn for every regular file under the directory dir that no
// ignore file excludes, in path order; fn returns false to stop. It
// honours .git/info/exclude and the .gitignore files of every directory
// from the root down (nested ones and negations included), never enters a
// .git directory or editguard's state directory, and skips symlinks,
// special files and what it cannot read.
//
// Walk starts from dir opened through the root and goes down by openat
// with O_NOFOLLOW on directory descriptors, so no symlink is ever
// followed, no path leaves the root even while the tree changes, and a
// file costs one open, not one per path element. It stops with ctx's
// error when ctx is done.
func (w *Workspace) Walk(ctx context.Context, dir string, fn func(f *WalkFile) bool) error {
	return w.walk(ctx, dir, nil, fn)
}

// walk is Walk that also yields the ignored files in directories it
// enters that include matches (as an ignore file's patterns would ignore
// them).
func (w *Workspace) walk(ctx context.Context, dir string, include ignoreMatcher, fn func(f *WalkFile) bool) error {
	return w.walkWith(ctx, dir, &walker{include: include, file: fn})
}

// walker says what walkDir yields: each file to file, or, if dir is set,
// each directory's files at once to dir, by name, while the directory is
// open as dirfd (dir must not keep dirfd). Either returns false to stop.
//
// Neither sees editguard's own temporary files (Workspace.isTemp): they
// are passed to temp, if set, by path, and left out.
type walker struct {
	include ignoreMatcher
	file    func(f *WalkFile) bool
	dir     func(dirfd int, dir string, names []string) bool
	temp    func(path string)
	isTemp  func(name string, siblings func(yield func(string) bool)) bool
	// enter, if set, is called with each directory as it is entered,
	// before it is listed; false stops the walk.
	enter func(dirfd int, dir string) bool
}

func (w *Workspace) walkWith(ctx context.Context, dir string, v *walker) error {
	resolved, err := w.resolve(dir)
	if err != nil {
		return err
	}
	f, err := w.root.OpenFile(resolved, os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return w.treeError(dir, err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return ioError(dir, err)
	}
	unix.CloseOnExec(fd)
	// The patterns of the directories above dir apply too.
	var ps ignoreMatcher
	ps = append(ps, w.ignorePatterns(".git/info", "exclude", nil)...)
	if resolved != "." {
		parts := strings.Split(resolved, "/")
		for i := range parts {
			ps = append(ps, w.ignorePatterns(path.Join(append([]string{"."}, parts[:i]...)...), ".gitignore", parts[:i])...)
		}
	}
	if v.file != nil {
		prefix := len(resolved) + 1
		if resolved == "." {
			prefix = 0
		}
		fn := v.file
		v = &walker{include: v.include, temp: v.temp, file: func(f *WalkFile) bool {
			f.Rel = f.Path[prefix:]
			return fn(f)
		}}
	} else {
		v = new(*v)
	}
	v.isTemp = w.isTemp
	_, err = walkDir(ctx, fd, resolved, ps, v)
	return err
}

// TempFiles returns the paths of editguard's temporary files in the
// workspace (isTemp), which every listing leaves out: each is the new
// content of a change to the file it is named after, left by a writer that
// stopped before the change finished (or of a change in progress right
// now). The next change to that file keeps its bytes in history and
// removes it. Like Walk, it does not look into directories an ignore file
// excludes.
func (w *Workspace) TempFiles(ctx context.Context) ([]string, error) {
	var temps []string
	err := w.walkWith(ctx, ".", &walker{file: func(*WalkFile) bool { return true }, temp: func(p string) { temps = append(temps, p) }})
	return temps, err
}

// TempTarget returns the name of the file a temporary file (a path
// TempFiles returned) is for; a target too long for its name is shortened
// in it.
func TempTarget(temp string) string {
	dir, base := path.Split(temp)
	if len(base) < len(".x.0123456789abcdef.egtmp") {
		return temp
	}
	return dir + base[1:len(base)-len(".0123456789abcdef.egtmp")]
}

// direntNames yields the names of des.
func direntNames(des []fs.DirEntry) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for _, de := range des {
			if !yield(de.Name()) {
				return
			}
		}
	}
}

// isTemp reports whether name, an entry of a directory that also holds
// siblings, is one of this workspace's temporary files: a change's new
// content before its swap, or what a writer killed mid-change left (the
// next change to its target keeps it in history and removes it). The
// name is checked against its HMAC under the workspace key
// (engine.IsTempName), so a user's own file that ends in .egtmp is not
// taken for one.
func (w *Workspace) isTemp(name string, siblings func(yield func(string) bool)) bool {
	return w.eng != nil && w.eng.IsTempName(name, siblings)
}

func splitRel(rel string) []string {
	if rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}

// walkDir walks the directory open as fd, which it closes; it returns false
// when v asked to stop.
func walkDir(ctx context.Context, fd int, dir string, ps ignoreMatcher, v *walker) (bool, error) {
	// A descriptor opened without O_NONBLOCK is not registered with the
	// runtime's poller.
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if v.enter != nil && !v.enter(fd, dir) {
		return false, nil
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return true, nil // unreadable: skipped
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	parts := splitRel(dir)
	// Most directories have no .gitignore: the listing says which do.
	if _, ok := slices.BinarySearchFunc(des, ".gitignore", func(de fs.DirEntry, name string) int { return strings.Compare(de.Name(), name) }); ok {
		ps = append(slices.Clip(ps), patternsAt(fd, ".gitignore", parts)...)
	}
	// elems is an entry's path, element by element, for the matcher.
	elems := append(slices.Clip(parts), "")
	wf := &WalkFile{dirfd: fd}
	var names []string
	for _, de := range des {
		name := de.Name()
		elems[len(elems)-1] = name
		switch {
		case strings.EqualFold(name, StateDir), name == ".git":
			continue
		case de.Type()&fs.ModeSymlink != 0:
			continue
		case de.IsDir():
			if ps.ignored(elems, true) {
				continue
			}
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // unreadable, or replaced by a symlink: skipped
			}
			if more, err := walkDir(ctx, sub, path.Join(dir, name), ps, v); !more || err != nil {
				return more, err
			}
		case de.Type().IsRegular():
			if ps.ignored(elems, false) && !v.include.ignored(elems, false) {
				continue
			}
			if atomicfile.IsTemp(name) && v.isTemp(name, direntNames(des)) { // the pattern first: no closure per file
				if v.temp != nil {
					v.temp(path.Join(dir, name))
				}
				continue
			}
			if v.dir != nil {
				names = append(names, name)
				continue
			}
			if v.file == nil {
				continue
			}
			wf.Path = path.Join(dir, name)
			if !v.file(wf) {
				return false, nil
			}
		}
	}
	if len(names) > 0 && !v.dir(fd, dir, names) {
		return false, nil
	}
	return true, nil
}

// openFileAt opens the regular file name in the directory dirfd for
// reading, without following a symlink or blocking on a FIFO swapped in,
// and returns its descriptor and size.
func openFileAt(dirfd int, name string) (int, int64, error) {
	fd, err := atomicfile.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
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

// ignorePatterns reads the ignore file name in dir, whose patterns apply
// below domain.
func (w *Workspace) ignorePatterns(dir, name string, domain []string) ignoreMatcher {
	f, err := w.root.OpenFile(dir, os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	return patternsAt(int(f.Fd()), name, domain)
}

// patternsAt reads the ignore file name in the directory dirfd.
func patternsAt(dirfd int, name string, domain []string) ignoreMatcher {
	fd, size, err := openFileAt(dirfd, name)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	if size > maxIgnoreBytes {
		return nil
	}
	data, err := readFDInto(make([]byte, 0, size+512), fd, maxIgnoreBytes)
	if err != nil {
		return nil
	}
	var ps ignoreMatcher
	for line := range strings.Lines(string(data)) {
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, parseIgnore(line, domain))
	}
	return ps
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
