//go:build unix

package editguard

import (
	"errors"
	"syscall"
)

// oDirectory makes opening a parent fail with ENOTDIR when it is a file.
const oDirectory = syscall.O_DIRECTORY

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
