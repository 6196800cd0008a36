//go:build unix && !linux

package engine

import "golang.org/x/sys/unix"

// SyncFS makes every write durable where there is no syncfs(2): sync(2)
// flushes every file system.
func SyncFS(fd int) error {
	unix.Sync()
	return nil
}
