package editguard

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
)

// Looking at the tree: the read-only operations the tools need besides
// reading a file's text. Paths are resolved as every other operation
// resolves them (symlinks are followed only while they stay inside the
// root: OUTSIDE_ROOT otherwise), editguard's state directories are never
// shown or entered (PROTECTED_PATH when named), and failures are *Error
// values with the §5 codes: NOT_FOUND, OUTSIDE_ROOT, PROTECTED_PATH,
// INVALID_ARGUMENT, IO. None of them records a read: they give names,
// types, sizes and hashes, never the content a session could then change.
// Paths protected by Options.Deny can be looked at; they cannot be changed.

// Stat is like os.Stat for a path inside the workspace.
func (w *Workspace) Stat(p string) (fs.FileInfo, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Stat(resolved)
	if err != nil {
		return nil, w.treeError(p, err)
	}
	return fi, nil
}

// Lstat is like os.Lstat for a path inside the workspace: a symlink at the
// last element is described, not followed.
func (w *Workspace) Lstat(p string) (fs.FileInfo, error) {
	dir, base, err := w.resolveParent(p)
	if err != nil {
		return nil, err
	}
	fi, err := w.root.Lstat(path.Join(dir, base))
	if err != nil {
		return nil, w.treeError(p, err)
	}
	return fi, nil
}

// Readlink is like os.Readlink for a symlink inside the workspace. The
// target is returned as stored; it may lead anywhere, and the other
// operations follow it only inside the root.
func (w *Workspace) Readlink(p string) (string, error) {
	dir, base, err := w.resolveParent(p)
	if err != nil {
		return "", err
	}
	target, err := w.root.Readlink(path.Join(dir, base))
	if err != nil {
		return "", w.treeError(p, err)
	}
	return target, nil
}

// ReadDir is like os.ReadDir (entries sorted by name) for a directory
// inside the workspace, less editguard's state directories (this
// workspace's, and those of workspaces nested in it) and its temporary
// files (isTemp). Names and types come
// from the directory alone; an entry is stat'ed only when its Info is
// asked for, so a caller that shows part of a large directory pays for
// that part (ReadDirPage makes only that part, and a directory unchanged
// since it was last listed is not read again: dircache.go).
func (w *Workspace) ReadDir(p string) ([]fs.DirEntry, error) {
	resolved, l, f, err := w.listing(p)
	if err != nil {
		return nil, err
	}
	f.Close()
	return w.dirEntries(resolved, l.ents), nil
}

// dirent is a directory entry's name and type bits.
type dirent struct {
	name string
	typ  fs.FileMode
}

// dirEntry is an entry ReadDir returns: its name and type come from the
// directory itself, and Info stats it (through the root, not following
// a final symlink) only when asked, unless ReadDirPage already did.
type dirEntry struct {
	dirent
	w       *Workspace
	dir     string      // the directory, resolved
	info    fs.FileInfo // the entry's stat, if taken
	statErr error       // why the stat taken failed
}

func (d *dirEntry) Name() string      { return d.name }
func (d *dirEntry) IsDir() bool       { return d.typ.IsDir() }
func (d *dirEntry) Type() fs.FileMode { return d.typ }
func (d *dirEntry) Info() (fs.FileInfo, error) {
	if d.info != nil || d.statErr != nil {
		return d.info, d.statErr
	}
	p := path.Join(d.dir, d.name)
	fi, err := d.w.root.Lstat(p)
	if err != nil {
		return nil, d.w.treeError(p, err)
	}
	return fi, nil
}

// Open opens a file or directory inside the workspace for reading, like
// os.Open, without blocking on a FIFO. It records no read. Callers that
// need the stat and the bytes of one file take both from the descriptor.
func (w *Workspace) Open(p string) (*os.File, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	f, err := atomicfile.WaitLeased(func() (*os.File, error) { return w.root.OpenFile(resolved, os.O_RDONLY|syscall.O_NONBLOCK, 0) })
	if err != nil {
		return nil, w.treeError(p, err)
	}
	return f, nil
}

// resolveParent resolves every element of p but the last, which it
// returns as it is: the directory that holds p and p's name in it. A last
// element "." or ".." is resolved too, since it names no entry.
func (w *Workspace) resolveParent(p string) (dir, base string, err error) {
	slashed := strings.TrimRight(filepath.ToSlash(p), "/")
	parent, base := ".", slashed
	if i := strings.LastIndexByte(slashed, '/'); i >= 0 {
		parent, base = slashed[:i], slashed[i+1:]
		if parent == "" {
			parent = "/"
		}
	}
	if base == "" || base == "." || base == ".." {
		resolved, err := w.resolve(p)
		if err != nil {
			return "", "", err
		}
		if resolved == "." {
			return "", "", newError(CodeInvalidArgument, p, "the workspace root has no name to look at", "", nil)
		}
		return path.Dir(resolved), path.Base(resolved), nil
	}
	if err := checkName(p, base); err != nil {
		return "", "", err
	}
	if dir, err = w.resolve(parent); err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Details["path"] = p
		}
		return "", "", err
	}
	for _, e := range append(splitPath(dir), base) {
		if isStateName(e) {
			return "", "", newError(CodeProtectedPath, p, "editguard's state directories are off limits to the tools", "", nil)
		}
	}
	return dir, base, nil
}

// treeError turns a failure to look at p into a §5 error.
func (w *Workspace) treeError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), engine.IsNotDir(err):
		return newError(CodeNotFound, p, "no such file or directory", "check the path with list_directory", err)
	case engine.IsEscape(err):
		return outsideRoot(p)
	}
	return ioError(p, err)
}

// checkName checks the last element of p as resolve checks every element.
func checkName(p, name string) error {
	switch {
	case strings.IndexByte(p, 0) >= 0:
		return newError(CodeInvalidArgument, p, "path contains a NUL byte", "", nil)
	case len(name) > 255:
		return newError(CodeInvalidArgument, p, "a path element is longer than 255 bytes", "", nil)
	}
	return nil
}
