//go:build unix && !linux

package atomicfile

// SyncFSStandsIn reports false: SyncFS is sync(2) here, which may return
// before the writes are done.
func (d *Dir) SyncFSStandsIn() bool { return false }

// SyncFSStandsIn is Dir.SyncFSStandsIn for the file system that holds
// the open file fd: false here.
func SyncFSStandsIn(fd int) bool { return false }
