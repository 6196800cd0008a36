// Package safeopen opens for reading files that editguard did not create
// and does not reach through package statedir: git's index and objects,
// a client's configuration, a file in the user's cache, a tokens file.
// Whatever is at such a name, the open returns at once and yields a
// regular file or an error.
//
// A FIFO there would block open(2) until some process opened it for
// writing, which may be never: every command would hang. A socket fails
// the open with ENXIO, which says nothing useful, and a device may do
// anything when opened. So the file's type is looked at before the open
// (a device or socket is refused without being opened), the open itself
// is made with O_NONBLOCK (a FIFO swapped in after the look cannot block
// it), and the type of what was opened is checked again on the
// descriptor. Anything but a regular file is a *NotRegularError, whose
// message names what was found: "X is not a regular file (a FIFO)".
//
// O_NONBLOCK changes nothing for the reads of a regular file. Symlinks
// are followed as os.Open follows them; an *os.Root keeps them inside
// the root.
package safeopen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError reports a name that holds something other than a
// regular file where editguard reads one.
type NotRegularError struct {
	Path string // the name as the caller gave it
	Kind string // what is there: "a FIFO", "a socket", "a character device", ...
}

func (e *NotRegularError) Error() string {
	return e.Path + " is not a regular file (" + e.Kind + ")"
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// Kind describes the type of a file mode for an error: "a FIFO", "a
// socket", "a character device", "a block device", "a directory", "a
// symlink", "a regular file", or "a special file".
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}

// TooLargeError reports a file over the size a caller of ReadFile allows.
type TooLargeError struct {
	Path string
	Size int64
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s has %d bytes, more than the %d read", e.Path, e.Size, e.Max)
}

// Open opens the regular file name for reading. A missing file is an
// error wrapping fs.ErrNotExist; anything but a regular file is a
// *NotRegularError.
func Open(name string) (*os.File, error) {
	return open(name, os.Stat, func(flag int) (*os.File, error) { return os.OpenFile(name, flag, 0) })
}

// OpenIn is Open for name inside root.
func OpenIn(root *os.Root, name string) (*os.File, error) {
	return open(name, root.Stat, func(flag int) (*os.File, error) { return root.OpenFile(name, flag, 0) })
}

// ReadFile reads the regular file name, as Open opens it; a file of more
// than max bytes is a *TooLargeError, and none of it is read.
func ReadFile(name string, max int64) ([]byte, error) {
	f, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, name, max)
}

// ReadFileIn is ReadFile for name inside root.
func ReadFileIn(root *os.Root, name string, max int64) ([]byte, error) {
	f, err := OpenIn(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, name, max)
}

func open(name string, stat func(string) (fs.FileInfo, error), openFlag func(int) (*os.File, error)) (*os.File, error) {
	// The look before the open keeps a device or a socket from being
	// opened at all. Its error, if any, is left to the open to report.
	if fi, err := stat(name); err == nil && !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: name, Kind: Kind(fi.Mode())}
	}
	f, err := openFlag(os.O_RDONLY | syscall.O_NONBLOCK)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			// A socket (or a device without its driver) put there since
			// the look.
			if fi, serr := stat(name); serr == nil && !fi.Mode().IsRegular() {
				return nil, &NotRegularError{Path: name, Kind: Kind(fi.Mode())}
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: name, Kind: Kind(fi.Mode())}
	}
	return f, nil
}

func read(f *os.File, name string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: name, Size: fi.Size(), Max: max}
	}
	// Read into a buffer of the size seen, up to one byte past max, so
	// that a file that grew past max since the stat is caught too.
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 1)
	if _, err := buf.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > max {
		return nil, &TooLargeError{Path: name, Size: int64(buf.Len()), Max: max}
	}
	return buf.Bytes(), nil
}
