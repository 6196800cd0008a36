//go:build unix

package editguard

import (
	"errors"
	"syscall"
)

// oDirectory makes opening a parent fail with ENOTDIR when it is a file.
// O_NONBLOCK, which changes nothing for a directory, spares each open the
// runtime poller's fcntl calls to make the descriptor blocking (4 per
// commit): os.File then tries the poller once, which refuses a directory.
const oDirectory = syscall.O_DIRECTORY | syscall.O_NONBLOCK

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// oNonblock keeps an open from blocking on a FIFO put where a file was.
const oNonblock = syscall.O_NONBLOCK
