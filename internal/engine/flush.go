package engine

import "github.com/editguard/editguard/internal/atomicfile"

// FsyncObjects is how many new files a change, a checkpoint's scan or a
// catch-up makes durable one by one (an fsync each and one of their
// directory); past it, one syncfs flushes them all. An fsync pays for the
// file's own bytes, a syncfs for every dirty page of the file system,
// however many other programs left.
const FsyncObjects = 8

// OneByOne reports whether n files are made durable one by one, an fsync
// each: up to FsyncObjects, and always where a syncfs of the file systems
// that hold the open files fds may not stand in for their fsyncs
// (atomicfile.SyncFSStandsIn): no syncfs(2), whose sync(2) stand-in may
// return before the writes are done, a kernel that does not report its
// errors, or a file system not known to write back every file.
func OneByOne(n int, fds ...int) bool {
	if n <= FsyncObjects {
		return true
	}
	for _, fd := range fds {
		if !atomicfile.SyncFSStandsIn(fd) {
			return true
		}
	}
	return len(fds) == 0
}

// syncVersions makes the history's index lines of paths durable, written
// lazily by the versions of a change of several names: each index file and
// their directory once, or, for more than FsyncObjects paths where syncfs
// may stand in (OneByOne), the history's whole file system in one syncfs,
// as a command's records do.
func (e *Engine) syncVersions(paths []string) error {
	if !OneByOne(len(paths), e.histFD()) {
		return SyncFS(e.histFD())
	}
	return e.cfg.Hist.SyncIndexes(paths)
}
