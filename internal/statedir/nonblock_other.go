//go:build unix && !linux

package statedir

import "golang.org/x/sys/unix"

// clearNonblock clears O_NONBLOCK on fd.
func clearNonblock(fd, flag int) error { return unix.SetNonblock(fd, false) }
