//go:build unix

// Package statedir opens editguard's state directory (<root>/.editguard) and
// everything in it without ever following a symbolic link.
//
// The state directory lives inside a repository whose content is untrusted:
// a repository may ship its own .editguard/ with symlinks that point
// anywhere, hard links, FIFOs or files where directories belong. Every
// access to editguard's state goes through a Dir, which walks one path
// element at a time with O_NOFOLLOW, checks the type of what it opened, and
// refuses anything unexpected with an *UnsafeError naming the entry. So
// nothing outside the state directory is ever created, truncated, appended
// to or written because of what the repository contains.
//
// Directories a Dir creates are made durable before use (the new directory
// and its parent are fsynced), and so are replaced files (WriteFile): the
// recipes are those of package atomicfile, shared with user files.
package statedir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/safeopen"
	"golang.org/x/sys/unix"
)

// ErrUnsafe is wrapped by every *UnsafeError.
var ErrUnsafe = errors.New("unsafe entry in the state directory")

// UnsafeError reports an entry of the state directory that editguard did not
// make: a symlink, an entry of the wrong type, or a file with other hard
// links. editguard refuses to use it rather than follow or write it.
type UnsafeError struct {
	Path string // the entry, relative to the workspace root (".editguard/ledger.jsonl")
	Kind string // what was found: "symlink", "directory", "file", "hard-linked file", "FIFO", "socket", "character device", "block device"
	Want string // what editguard needs there: "directory" or "file"
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s is a %s where editguard keeps a %s; it was not made by editguard and is not followed: remove it (or the whole state directory) and retry", e.Path, e.Kind, e.Want)
}

func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// Dir is an open directory of the state tree.
type Dir struct {
	f    *os.File
	d    *atomicfile.Dir
	name string // relative to the workspace root, for errors
}

// Open opens (creating it durably if needed) the directory name, one path
// element, inside the open directory parent, whose path relative to the
// workspace root is parentName ("" for the root itself).
func Open(parent *os.File, parentName, name string) (*Dir, error) {
	p := &Dir{f: parent, d: atomicfile.NewDir(parent), name: parentName}
	return p.open(name, true)
}

// Name returns the directory's path relative to the workspace root.
func (d *Dir) Name() string { return d.name }

// File returns the open directory. It stays owned by d.
func (d *Dir) File() *os.File { return d.f }

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Sync makes the directory's entry changes durable.
func (d *Dir) Sync() error { return d.d.Sync() }

func (d *Dir) join(name string) string {
	if d.name == "" {
		return name
	}
	return d.name + "/" + name
}

// Sub opens the directory at rel (slash-separated, relative to d), creating
// missing elements durably when create is set. A missing directory without
// create fails with an error wrapping fs.ErrNotExist.
func (d *Dir) Sub(rel string, create bool) (*Dir, error) {
	cur := d
	for i, elem := range strings.Split(rel, "/") {
		next, err := cur.open(elem, create)
		if i > 0 {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

func (d *Dir) open(name string, create bool) (*Dir, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	f, _, err := d.d.OpenDir(name, create)
	if errors.Is(err, atomicfile.ErrNotDir) {
		return nil, d.unsafe(name, "directory")
	}
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: fs.ErrNotExist}
		}
		return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	return &Dir{f: f, d: atomicfile.NewDir(f), name: d.join(name)}, nil
}

// unsafe describes what is at name, for an *UnsafeError.
func (d *Dir) unsafe(name, want string) error {
	st, err := d.d.Lstat(name)
	kind := "special file"
	switch {
	case err != nil || !st.Exists:
		kind = "vanished entry"
	case st.Mode&fs.ModeSymlink != 0:
		kind = "symlink"
	case st.Mode.IsDir():
		kind = "directory"
	case st.Mode.IsRegular() && st.Nlink > 1:
		kind = "hard-linked file"
	case st.Mode.IsRegular():
		kind = "file"
	default:
		kind = strings.TrimPrefix(safeopen.Kind(st.Mode), "a ") // "FIFO", "socket", ...
	}
	return &UnsafeError{Path: d.join(name), Kind: kind, Want: want}
}

func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("statedir: bad name %q", name)
	}
	return nil
}

// OpenFile opens the regular file name in d without following a symlink.
// flag is as for os.OpenFile (O_CREATE creates it with perm). A symlink,
// directory or special file at name is an *UnsafeError, and so is a file
// with other hard links when flag opens it for writing: its bytes would
// change under another name too.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := d.Open(name, flag, perm)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK only kept a FIFO from blocking the open; clear it, or
	// os.NewFile would try to add the file to the poller.
	if err := clearNonblock(f.Fd(), flag); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fcntl", Path: f.name, Err: err}
	}
	return os.NewFile(uintptr(f.Fd()), f.name), nil
}

// Open opens the regular file name in d as OpenFile does, refusing the same
// entries, but returns it as a bare descriptor (see File).
func (d *Dir) Open(name string, flag int, perm os.FileMode) (*File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := atomicfile.Openat(int(d.f.Fd()), name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, uint32(perm.Perm()))
	if err != nil {
		if err == unix.ELOOP || err == unix.EISDIR || err == unix.ENXIO || err == unix.ENOTDIR {
			return nil, d.unsafe(name, "file")
		}
		return nil, &fs.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: d.join(name), Err: err}
	}
	writing := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if st.Mode&unix.S_IFMT != unix.S_IFREG || (writing && st.Nlink > 1) {
		unix.Close(fd)
		return nil, d.unsafe(name, "file")
	}
	return &File{d: atomicfile.NewFD(fd), name: d.join(name), size: st.Size, ino: st.Ino}, nil
}

// ReadFile reads the regular file name. A missing file is an error wrapping
// fs.ErrNotExist.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	return d.ReadFileInto(name, nil)
}

// ReadFileInto is ReadFile reading into buf's array when it is large
// enough, so that a caller reading large files again and again can reuse
// one buffer.
func (d *Dir) ReadFileInto(name string, buf []byte) ([]byte, error) {
	f, err := d.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Read into a buffer of the file's size, not by doubling from 512
	// bytes: history indexes with inline contents run to hundreds of KiB.
	size := f.size
	if size <= 0 || size >= 1<<30 {
		size = 512
	}
	if int64(cap(buf)) < size+1 {
		buf = make([]byte, 0, size+1) // +1: EOF needs no second buffer
	}
	buf = buf[:0]
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // it grew: read on
		}
	}
}

// WriteFile replaces (or creates) the file name with data durably and
// atomically: temporary file, fsync, rename, directory fsync. The rename
// replaces a symlink at name itself, never what it points to; a directory
// there is an *UnsafeError.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	if st, err := d.d.Lstat(name); err == nil && st.Exists && st.Mode.IsDir() {
		return d.unsafe(name, "file")
	}
	_, err := d.d.Put(name, data, atomicfile.Options{Mode: perm, UID: -1, GID: -1})
	if err != nil {
		return &fs.PathError{Op: "write", Path: d.join(name), Err: err}
	}
	return nil
}

// WriteFileVolatile is WriteFile without its fsyncs (see
// atomicfile.Options.Volatile): a power cut may leave the old content, the
// new, or an empty or partial file, which the caller must read safely.
func (d *Dir) WriteFileVolatile(name string, data []byte, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	if st, err := d.d.Lstat(name); err == nil && st.Exists && st.Mode.IsDir() {
		return d.unsafe(name, "file")
	}
	_, err := d.d.Put(name, data, atomicfile.Options{Mode: perm, UID: -1, GID: -1, Volatile: true})
	if err != nil {
		return &fs.PathError{Op: "write", Path: d.join(name), Err: err}
	}
	return nil
}

// CheckFile reports whether the entry name exists in d, and fails with an
// *UnsafeError if it is anything but a regular file (a symlink is not
// followed). It is for a caller about to replace or remove name: a file
// with other hard links passes, since neither changes the other names.
func (d *Dir) CheckFile(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	st, err := d.d.Lstat(name)
	if err != nil {
		return false, &fs.PathError{Op: "lstat", Path: d.join(name), Err: err}
	}
	if !st.Exists {
		return false, nil
	}
	if !st.Mode.IsRegular() {
		return false, d.unsafe(name, "file")
	}
	return true, nil
}

// Lock takes the lock file name in d (created if needed, never through a
// symlink); see package filelock.
func (d *Dir) Lock(ctx context.Context, name string, opts *filelock.Options) (*filelock.Lock, error) {
	l, err := filelock.AcquireAt(ctx, d.f, name, opts)
	return l, d.lockError(name, err)
}

// lockError turns the refusal of a lock path into an *UnsafeError.
func (d *Dir) lockError(name string, err error) error {
	if errors.Is(err, unix.ELOOP) || errors.Is(err, filelock.ErrNotRegular) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENXIO) {
		return d.unsafe(name, "file")
	}
	return err
}

// Locks takes lock files in one directory as Dir.Lock does, keeping up to
// max of them open between acquisitions (see filelock.Cache), for a caller
// that takes the same locks at every commit.
type Locks struct {
	d *Dir
	c *filelock.Cache
}

// Locks returns a Locks for d, which must stay open until the Locks is
// closed.
func (d *Dir) Locks(max int) *Locks {
	return &Locks{d: d, c: filelock.NewCache(d.f, max)}
}

// Lock takes the lock file name (created if needed, never through a
// symlink).
func (l *Locks) Lock(ctx context.Context, name string, opts *filelock.Options) (*filelock.Lock, error) {
	lk, err := l.c.Acquire(ctx, name, opts)
	return lk, l.d.lockError(name, err)
}

// Close closes the lock files kept open.
func (l *Locks) Close() error { return l.c.Close() }

// Rename renames old to new within d. Neither is followed if a symlink.
func (d *Dir) Rename(old, new string) error {
	if err := unix.Renameat(int(d.f.Fd()), old, int(d.f.Fd()), new); err != nil {
		return &fs.PathError{Op: "rename", Path: d.join(old), Err: err}
	}
	return nil
}

// Remove removes the entry name (a file, or a symlink itself).
func (d *Dir) Remove(name string) error {
	if err := unix.Unlinkat(int(d.f.Fd()), name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// CreateTemp creates a new file in d with a random name beginning with
// prefix, O_EXCL, mode 0600, and returns it with its name.
func (d *Dir) CreateTemp(prefix string) (*os.File, string, error) {
	for range 10000 {
		name := prefix + randomSuffix()
		f, err := d.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
	}
	return nil, "", &fs.PathError{Op: "createtemp", Path: d.join(prefix + "*"), Err: fs.ErrExist}
}

// Stat describes the entry name in d without following a symlink; a
// missing entry has Exists false.
func (d *Dir) Stat(name string) (atomicfile.Stat, error) {
	return d.d.Lstat(name)
}

// ReadDir lists d's entries in directory order. The types are those of the
// entries themselves (a symlink is a symlink).
func (d *Dir) ReadDir() ([]fs.DirEntry, error) {
	fd, err := unix.Openat(int(d.f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	for i, e := range ents {
		ents[i] = dirEntry{e, d}
	}
	return ents, err
}

// dirEntry is an entry of a Dir whose Info is an lstat through the Dir's
// descriptor. An os.File's entries lstat the file's name joined with the
// entry's, and a Dir's file is named for messages, relative to the
// workspace root: that lstat would resolve against the working directory.
type dirEntry struct {
	fs.DirEntry
	d *Dir
}

func (e dirEntry) Info() (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(e.d.f.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: e.d.join(e.Name()), Err: err}
	}
	return &fileInfo{name: e.Name(), st: st}, nil
}

// fileInfo is the fs.FileInfo of an lstat.
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }

func (fi *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch fi.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	return m
}

// Join returns the path of name in d relative to the workspace root, for
// messages.
func (d *Dir) Join(name string) string { return path.Clean(d.join(name)) }

// MoveTo renames old in d to new in dir to (both state directories on one
// file system). Neither is followed if a symlink.
func (d *Dir) MoveTo(old string, to *Dir, new string) error {
	if err := unix.Renameat(int(d.f.Fd()), old, int(to.f.Fd()), new); err != nil {
		return &fs.PathError{Op: "rename", Path: d.join(old), Err: err}
	}
	return nil
}
