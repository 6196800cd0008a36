//go:build unix && !linux

package atomicfile

import "golang.org/x/sys/unix"

// Flags of renameat2, which these systems do not have (it fails with
// ENOSYS): the callers fall back.
const (
	renameExchange  = 1 << 1
	renameNoReplace = 1 << 0
)

func renameat2(olddirfd int, oldpath string, newdirfd int, newpath string, flags uint) error {
	return unix.ENOSYS
}

// FileSystemSync reports whether Dir.SyncFS flushes one file system and
// returns once its writes are durable. Here it is sync(2), which flushes
// every file system and on some systems returns before the writes are done.
const FileSystemSync = false

// syncfs makes every write durable where there is no syncfs(2): sync(2)
// flushes every file system.
func syncfs(fd int) error {
	unix.Sync()
	return nil
}

// swap puts tmp in place of name with rename(2). Without an exchange the
// displaced bytes cannot be checked after the swap; the caller's lock still
// serialises all cooperating writers.
func (d *Dir) swap(tmp, name, want string, expect []byte, held *Held, data []byte, park *Dir) (string, *verified, error) {
	if err := sys.renameat(d.hook, d.fd, tmp, d.fd, name); err != nil {
		sys.unlinkat(d.hook, d.fd, tmp, 0)
		return "", nil, &StepError{"rename", err}
	}
	return Rename, nil, nil
}

func (d *Dir) renameNoReplace(old, new string) error { return d.linkUnlink(old, new) }
