package editguard

import (
	"encoding/binary"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirTypes returns the names and types of the entries of the open
// directory f, from getdents(2) and its d_type alone: no entry is stat'ed,
// except on a file system that does not give types (DT_UNKNOWN), where the
// entry is stat'ed relative to f. (A directory opened through an os.Root
// stats every entry in ReadDir, which made a listing cost one system call
// per entry however few of them were shown.)
func readDirTypes(f *os.File) ([]dirent, error) {
	fd := int(f.Fd())
	buf := make([]byte, 32<<10)
	var out []dirent
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: f.Name(), Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for off := 0; off+19 <= n; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return nil, &fs.PathError{Op: "getdents", Path: f.Name(), Err: unix.EIO}
			}
			name := buf[off+19 : off+reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			typ := buf[off+18]
			off += reclen
			if s := string(name); s != "." && s != ".." {
				mode, err := direntType(fd, s, typ)
				if err != nil {
					continue // gone since it was listed
				}
				out = append(out, dirent{name: s, typ: mode})
			}
		}
	}
}

// direntType maps a d_type to fs.FileMode type bits, stat'ing the entry
// (without following a symlink) when the file system gave none.
func direntType(dirfd int, name string, t byte) (fs.FileMode, error) {
	switch t {
	case unix.DT_REG:
		return 0, nil
	case unix.DT_DIR:
		return fs.ModeDir, nil
	case unix.DT_LNK:
		return fs.ModeSymlink, nil
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, nil
	case unix.DT_SOCK:
		return fs.ModeSocket, nil
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, nil
	case unix.DT_BLK:
		return fs.ModeDevice, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return 0, err
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir, nil
	case unix.S_IFLNK:
		return fs.ModeSymlink, nil
	case unix.S_IFIFO:
		return fs.ModeNamedPipe, nil
	case unix.S_IFSOCK:
		return fs.ModeSocket, nil
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice, nil
	case unix.S_IFBLK:
		return fs.ModeDevice, nil
	}
	return 0, nil
}
