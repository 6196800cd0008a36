//go:build unix

package gitobj

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// oNonblock opens a FIFO without waiting for a writer.
const oNonblock = syscall.O_NONBLOCK

// mapFile maps the first size bytes of f into memory, read-only.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, fmt.Errorf("gitobj: cannot map %d bytes", size)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var b []byte
	var merr error
	if err := rc.Control(func(fd uintptr) {
		b, merr = unix.Mmap(int(fd), 0, int(size), unix.PROT_READ, unix.MAP_PRIVATE)
	}); err != nil {
		return nil, err
	}
	if merr != nil {
		return nil, fmt.Errorf("gitobj: mmap %s: %w", f.Name(), merr)
	}
	return b, nil
}

// unmapFile undoes mapFile.
func unmapFile(b []byte) error { return unix.Munmap(b) }

// dropPages lets go of the pages of b, a part of a mapping of mapFile
// that starts on a page boundary: they no longer count in the process's
// resident size, and reading them again reads them from the file.
func dropPages(b []byte) { unix.Madvise(b, unix.MADV_DONTNEED) }
