//go:build unix

package atomicfile

import "golang.org/x/sys/unix"

// linkUnlink is a no-replace rename for systems without RENAME_NOREPLACE:
// link(2) fails with EEXIST if new exists.
func (d *Dir) linkUnlink(old, new string) error {
	if err := unix.Linkat(d.fd, old, d.fd, new, 0); err != nil {
		return err
	}
	return sys.unlinkat(d.hook, d.fd, old, 0)
}
