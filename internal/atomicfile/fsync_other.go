//go:build unix && !darwin

package atomicfile

import "golang.org/x/sys/unix"

// fsync makes what fd holds durable: fsync(2).
func fsync(fd int) error { return unix.Fsync(fd) }
