//go:build unix

package statedir

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// File is an open regular file of the state directory, as a bare
// descriptor. An *os.File costs an fcntl at least for every open (and, for
// a descriptor opened O_NONBLOCK, a poller registration that a regular file
// refuses); the state files of a commit are opened several times each, and
// need only reads, writes and syncs, which File makes directly.
//
// The descriptor keeps the O_NONBLOCK it was opened with (so that a FIFO
// planted at the name could not block the open); for a regular file it
// changes nothing. File is not safe for concurrent use, except that ReadAt
// and WriteAt may run alongside Sync and Datasync.
type File struct {
	fd   int
	name string // relative to the workspace root
	size int64  // at open
	ino  uint64
}

// Fd returns the descriptor, valid until Close.
func (f *File) Fd() int { return f.fd }

// Name returns the file's path relative to the workspace root.
func (f *File) Name() string { return f.name }

// Size returns the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Ino returns the file's inode number.
func (f *File) Ino() uint64 { return f.ino }

func (f *File) err(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Read reads from the file's offset, as io.Reader.
func (f *File) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, f.err("read", err)
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(b) bytes at off, as io.ReaderAt: fewer only at the end
// of the file (io.EOF) or on an error.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(f.fd, b[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, f.err("read", err)
		case m == 0:
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

// Write writes b at the file's offset (its end, for a file opened
// O_APPEND), all of it or an error.
func (f *File) Write(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Write(f.fd, b[n:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, f.err("write", err)
		case m == 0:
			return n, f.err("write", io.ErrShortWrite)
		}
		n += m
	}
	return n, nil
}

// WriteAt writes b at off, all of it or an error.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pwrite(f.fd, b[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, f.err("write", err)
		case m == 0:
			return n, f.err("write", io.ErrShortWrite)
		}
		n += m
	}
	return n, nil
}

// Truncate changes the file's size.
func (f *File) Truncate(size int64) error {
	for {
		err := unix.Ftruncate(f.fd, size)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return f.err("truncate", err)
		}
		return nil
	}
}

// Sync makes the file's data and metadata durable (fsync).
func (f *File) Sync() error {
	for {
		err := unix.Fsync(f.fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return f.err("sync", err)
		}
		return nil
	}
}

// Close closes the file. Closing it again does nothing and returns an
// error wrapping fs.ErrClosed: the descriptor may by then be another
// file's.
func (f *File) Close() error {
	if f.fd < 0 {
		return f.err("close", fs.ErrClosed)
	}
	fd := f.fd
	f.fd = -1
	if err := unix.Close(fd); err != nil {
		return f.err("close", err)
	}
	return nil
}
