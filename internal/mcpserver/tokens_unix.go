//go:build unix

package mcpserver

import (
	"fmt"
	"os"
	"syscall"
)

// checkOwner refuses a tokens file owned by someone other than the user
// running the server or root: its owner could change the tokens.
func checkOwner(name string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Geteuid(); int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("tokens file %s is owned by uid %d, not by this user (uid %d) or root", name, st.Uid, uid)
	}
	return nil
}
