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
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return int(cred.Uid) == os.Geteuid()
}
