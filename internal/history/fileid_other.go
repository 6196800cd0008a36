//go:build !unix

package history

import "os"

// fileID identifies the file a name points to. Without inode numbers it
// uses the modification time and size, which change when a name is
// replaced by a new file in practice.
func fileID(fi os.FileInfo) [2]uint64 {
	return [2]uint64{uint64(fi.ModTime().UnixNano()), uint64(fi.Size())}
}
