//go:build unix

package editguard

import "syscall"

// oNonblock keeps an open from blocking on a FIFO put where a file was.
const oNonblock = syscall.O_NONBLOCK
