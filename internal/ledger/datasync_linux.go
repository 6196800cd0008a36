package ledger

import (
	"github.com/editguard/editguard/internal/statedir"
	"golang.org/x/sys/unix"
)

// datasync flushes f's data (and the metadata needed to read it back).
func datasync(f *statedir.File) error {
	for {
		err := unix.Fdatasync(f.Fd())
		if err != unix.EINTR {
			return err
		}
	}
}
