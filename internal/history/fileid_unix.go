//go:build unix

package history

import (
	"os"
	"syscall"
)

// fileID identifies the file a name points to: its device and inode.
func fileID(fi os.FileInfo) [2]uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(st.Dev), st.Ino}
	}
	return [2]uint64{}
}
