//go:build unix

package toolset

import "syscall"

// openNonblock keeps an open from blocking on a FIFO.
const openNonblock = syscall.O_NONBLOCK
