//go:build unix

package statedir

import (
	"io"
	"io/fs"

	"github.com/editguard/editguard/internal/atomicfile"
)

// File is an open regular file of the state directory, as a bare
// descriptor (see atomicfile.FD): the state files of a commit are opened
// several times each, and need only reads, writes and syncs. Its errors
// name the file.
//
// The descriptor keeps the O_NONBLOCK it was opened with (so that a FIFO
// planted at the name could not block the open); for a regular file it
// changes nothing. File is not safe for concurrent use, except that ReadAt
// and WriteAt may run alongside Sync.
type File struct {
	d    atomicfile.FD
	name string // relative to the workspace root
	size int64  // at open
	ino  uint64
}

// Fd returns the descriptor, valid until Close.
func (f *File) Fd() int { return f.d.Int() }

// Name returns the file's path relative to the workspace root.
func (f *File) Name() string { return f.name }

// Size returns the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Ino returns the file's inode number.
func (f *File) Ino() uint64 { return f.ino }

// wrap names the file in err; io.EOF stays itself.
func (f *File) wrap(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Read reads from the file's offset, as io.Reader.
func (f *File) Read(b []byte) (int, error) {
	n, err := f.d.Read(b)
	return n, f.wrap("read", err)
}

// ReadAt reads len(b) bytes at off, as io.ReaderAt: fewer only at the end
// of the file (io.EOF) or on an error.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	n, err := f.d.ReadAt(b, off)
	return n, f.wrap("read", err)
}

// Write writes b at the file's offset (its end, for a file opened
// O_APPEND), all of it or an error.
func (f *File) Write(b []byte) (int, error) {
	n, err := f.d.Write(b)
	return n, f.wrap("write", err)
}

// WriteAt writes b at off, all of it or an error.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.d.WriteAt(b, off)
	return n, f.wrap("write", err)
}

// Truncate changes the file's size.
func (f *File) Truncate(size int64) error { return f.wrap("truncate", f.d.Truncate(size)) }

// Sync makes the file's data and metadata durable (fsync).
func (f *File) Sync() error { return f.wrap("sync", f.d.Sync()) }

// Close closes the file. Closing it again does nothing and returns an
// error wrapping fs.ErrClosed: the descriptor may by then be another
// file's.
func (f *File) Close() error { return f.wrap("close", f.d.Close()) }
