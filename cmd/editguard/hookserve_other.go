//go:build unix && !linux

package main

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerIsUser reports whether the process at the other end of c runs as this
// process's user. The socket's directory already keeps other users out;
// this holds even if its mode were changed.
func peerIsUser(c *net.UnixConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var uid int = -1
	rc.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED); err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid == os.Geteuid()
}
