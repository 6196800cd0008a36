//go:build unix && !linux

package atomicfile

// SyncFSStandsIn reports false: SyncFS is sync(2) here, which may return
// before the writes are done.
func (d *Dir) SyncFSStandsIn() bool { return false }
