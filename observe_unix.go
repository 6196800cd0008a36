//go:build unix

package editguard

import (
	"errors"
	"syscall"
)

// oDirectory makes opening a parent fail with ENOTDIR when it is a file.
const oDirectory = syscall.O_DIRECTORY

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// oNonblock keeps an open from blocking on a FIFO put where a file was.
const oNonblock = syscall.O_NONBLOCK
