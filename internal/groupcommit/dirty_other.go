//go:build !linux

package groupcommit

// dirtyBytes cannot tell here: there is no syncfs either
// (atomicfile.FileSystemSync), so nothing asks.
func dirtyBytes() (int64, bool) { return 0, false }
