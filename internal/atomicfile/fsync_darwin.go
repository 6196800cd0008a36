package atomicfile

import "golang.org/x/sys/unix"

// fsync makes what fd holds durable. On macOS fsync(2) leaves the data in
// the drive's cache, where a power cut loses it; F_FULLFSYNC asks the
// drive to write it. A file system that does not support it (some network
// mounts) gets fsync(2).
func fsync(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_FULLFSYNC, 0)
	if err == unix.ENOTSUP || err == unix.EINVAL {
		err = unix.Fsync(fd)
	}
	return err
}
