package statedir

import "golang.org/x/sys/unix"

// clearNonblock clears O_NONBLOCK on fd, opened with the status flags
// flag|O_NONBLOCK, with one fcntl: F_SETFL changes only the status flags
// (O_APPEND, O_NONBLOCK, ...) and ignores the rest of flag, so there is
// nothing to read back first.
func clearNonblock(fd, flag int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flag&^unix.O_NONBLOCK)
	return err
}
