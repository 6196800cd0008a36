//go:build unix && !linux

package editguard

import "golang.org/x/sys/unix"

// syncFS makes every write durable where there is no syncfs(2): sync(2)
// flushes every file system.
func syncFS(fd int) error {
	unix.Sync()
	return nil
}
