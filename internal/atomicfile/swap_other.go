//go:build unix && !linux

package atomicfile

import "golang.org/x/sys/unix"

func renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.ENOSYS
}

// swap puts tmp in place of name with rename(2). Without an exchange the
// displaced bytes cannot be checked after the swap; the caller's lock still
// serialises all cooperating writers.
func (d *Dir) swap(tmp, name, want string) (string, error) {
	if err := sys.renameat(d.fd, tmp, d.fd, name); err != nil {
		return "", &StepError{"rename", err}
	}
	return Rename, nil
}

func (d *Dir) renameNoReplace(old, new string) error { return d.linkUnlink(old, new) }
