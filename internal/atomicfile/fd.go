//go:build unix

package atomicfile

import (
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// FD is a regular file used through its bare descriptor. An *os.File costs
// an fcntl at least for every open, and for a descriptor opened O_NONBLOCK
// (so that a FIFO cannot block the open; it changes nothing for a regular
// file) a poller registration that a regular file refuses; the files a
// commit opens need only reads, writes and syncs, which FD makes directly,
// retrying on EINTR. Errors are the system call's own. FD is not safe for
// concurrent use, except that ReadAt and WriteAt may run alongside Sync.
type FD struct{ fd int }

// NewFD returns the FD of the open descriptor fd, which it then owns.
func NewFD(fd int) FD { return FD{fd: fd} }

// Int returns the descriptor, valid until Close.
func (f *FD) Int() int { return f.fd }

// Read reads from the file's offset, as io.Reader.
func (f *FD) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(f.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// ReadAt reads len(b) bytes at off, as io.ReaderAt: fewer only at the end
// of the file (io.EOF) or on an error.
func (f *FD) ReadAt(b []byte, off int64) (int, error) {
	return f.loop(b, off, unix.Pread, io.EOF)
}

// Write writes b at the file's offset (its end, for a file opened
// O_APPEND), all of it or an error.
func (f *FD) Write(b []byte) (int, error) {
	return f.loop(b, -1, func(fd int, p []byte, _ int64) (int, error) { return unix.Write(fd, p) }, io.ErrShortWrite)
}

// WriteAt writes b at off, all of it or an error.
func (f *FD) WriteAt(b []byte, off int64) (int, error) {
	return f.loop(b, off, unix.Pwrite, io.ErrShortWrite)
}

// loop calls op until all of b is done, at off and on (off < 0: at the
// file's offset); a call that does nothing ends it with zero.
func (f *FD) loop(b []byte, off int64, op func(int, []byte, int64) (int, error), zero error) (int, error) {
	n := 0
	for n < len(b) {
		m, err := op(f.fd, b[n:], off+int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, zero
		}
		n += m
	}
	return n, nil
}

// Truncate changes the file's size.
func (f *FD) Truncate(size int64) error {
	return retry(func() error { return unix.Ftruncate(f.fd, size) })
}

// Sync makes the file's data and metadata durable (fsync).
func (f *FD) Sync() error {
	return retry(func() error { return fsync(f.fd) })
}

func retry(op func() error) error {
	for {
		if err := op(); err != unix.EINTR {
			return err
		}
	}
}

// Close closes the descriptor once. Closing it again does nothing and
// returns fs.ErrClosed: the number may by then be another file's.
func (f *FD) Close() error {
	if f.fd < 0 {
		return fs.ErrClosed
	}
	fd := f.fd
	f.fd = -1
	return unix.Close(fd)
}
