package atomicfile

import (
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Magic numbers of the local file systems whose syncfs(2) writes back
// every dirty file and reports its errors as fsync(2) would (statfs(2)).
// FUSE (virtiofs among them) is not one: its syncfs sends nothing to the
// server unless the server asks for it.
const (
	ext4Magic  = 0xEF53 // ext2, ext3 and ext4
	xfsMagic   = 0x58465342
	btrfsMagic = 0x9123683E
	f2fsMagic  = 0xF2F52010
)

// syncfsErrors reports whether the kernel's syncfs(2) returns write-back
// errors: since Linux 5.8; before, it returned 0 whatever happened.
var syncfsErrors = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	major, minor, ok := kernelVersion(unix.ByteSliceToString(u.Release[:]))
	return ok && (major > 5 || major == 5 && minor >= 8)
})

// kernelVersion reads "6.18.44-..." as 6 and 18.
func kernelVersion(release string) (major, minor int, ok bool) {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i] // "4-rc1"
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(digits)
	return major, minor, err1 == nil && err2 == nil
}

// SyncFSStandsIn reports whether a SyncFS on d's file system may stand in
// for the fsyncs of files written on it before it began: syncfs(2) exists
// (FileSystemSync), the kernel reports its errors, and the file system is
// a local one known to write back every dirty file on it.
func (d *Dir) SyncFSStandsIn() bool { return SyncFSStandsIn(d.fd) }

// SyncFSStandsIn is Dir.SyncFSStandsIn for the file system that holds
// the open file fd.
func SyncFSStandsIn(fd int) bool {
	if !syncfsErrors() {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case ext4Magic, xfsMagic, btrfsMagic, f2fsMagic:
		return true
	}
	return false
}
