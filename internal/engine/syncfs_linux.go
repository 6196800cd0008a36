package engine

import "golang.org/x/sys/unix"

// SyncFS makes every write to the file system holding fd durable: one
// flush for many files (syncfs(2)).
func SyncFS(fd int) error { return unix.Syncfs(fd) }
