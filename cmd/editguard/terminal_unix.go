//go:build unix

package main

import "golang.org/x/sys/unix"

// isTerminalFd reports whether fd is a terminal: only a terminal answers the
// request for its termios settings.
func isTerminalFd(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, ioctlReadTermios)
	return err == nil
}
