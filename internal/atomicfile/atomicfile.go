//go:build unix

// Package atomicfile replaces, creates and removes files so that a reader or
// a crash sees the old content or the new content, never a mix and never an
// empty file.
//
// Every operation works on an open directory and a single path element, so
// the caller decides (with os.Root) which directory is meant, and no symlink
// in the final element is ever followed.
//
// The recipe for a replacement is: create a temporary file in the same
// directory (O_EXCL, so it is ours), write, set the old mode, fsync, swap it
// into place, fsync the directory, remove what was displaced. On Linux the
// swap is renameat2(RENAME_EXCHANGE), which keeps the displaced inode under
// the temporary name, so its bytes can be checked against what the caller
// verified before the swap: a writer that does not take our lock and wrote
// in between is detected and the swap is undone. Elsewhere the swap is a
// rename(2).
//
// Operations are not safe for concurrent use on the same target; callers
// serialise them with a lock (see internal/filelock).
package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Strategies reported in Result.Strategy.
const (
	Exchange = "exchange" // renameat2(RENAME_EXCHANGE) with verification of the displaced bytes
	Rename   = "rename"   // rename(2) over the target
	Create   = "create"   // no-replace rename of a new file
	Delete   = "delete"   // rename away, verify, unlink
)

// ErrRaced reports that the bytes displaced by the swap were not the bytes
// the caller verified: another writer changed the target without taking the
// lock. The swap has been undone.
var ErrRaced = errors.New("atomicfile: target changed during commit")

// ErrExist reports that a file appeared where a new file was to be created.
var ErrExist = errors.New("atomicfile: target exists")

// StepError names the step of the recipe that failed.
type StepError struct {
	Step string // "create temp", "write", "chmod", "fsync", "exchange", "rename", "fsync dir", ...
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("atomicfile: %s: %v", e.Step, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// Dir is an open directory in which operations take place.
type Dir struct {
	f  *os.File
	fd int
}

// NewDir wraps an open directory. The caller keeps ownership of f.
func NewDir(f *os.File) *Dir {
	return &Dir{f: f, fd: int(f.Fd())}
}

// Stat describes a directory entry as seen through fstat of an open
// descriptor (or lstat when it is not a regular file).
type Stat struct {
	Exists  bool
	Mode    os.FileMode // type and permission bits
	Size    int64
	MtimeNS int64
	Ino     uint64
	Nlink   uint64
	UID     int
	GID     int
}

// Regular reports whether the entry is a regular file.
func (s Stat) Regular() bool { return s.Exists && s.Mode.IsRegular() }

func statFrom(st *unix.Stat_t) Stat {
	mode := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFREG:
	default:
		mode |= os.ModeIrregular
	}
	if st.Mode&unix.S_ISUID != 0 {
		mode |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		mode |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		mode |= os.ModeSticky
	}
	return Stat{
		Exists:  true,
		Mode:    mode,
		Size:    st.Size,
		MtimeNS: st.Mtim.Nano(),
		Ino:     st.Ino,
		Nlink:   uint64(st.Nlink),
		UID:     int(st.Uid),
		GID:     int(st.Gid),
	}
}

// ReadFile reads the named entry without following a symlink. For a regular
// file it returns its bytes, their SHA-256 (hex) and the fstat of the same
// descriptor, so size, mtime and content describe one file. For a missing
// entry it returns Stat{Exists: false}; for anything else (directory,
// symlink, device) the lstat with nil data. maxSize > 0 limits the bytes
// read: a larger file returns its Stat and ErrTooLarge.
func (d *Dir) ReadFile(name string, maxSize int64) (Stat, []byte, string, error) {
	fd, err := sys.openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return Stat{}, nil, "", nil
		}
		if err == unix.ELOOP || err == unix.ENXIO || err == unix.EISDIR {
			return d.lstat(name)
		}
		return Stat{}, nil, "", &StepError{"open target", err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Stat{}, nil, "", &StepError{"fstat target", err}
	}
	s := statFrom(&st)
	if !s.Regular() {
		return s, nil, "", nil
	}
	if maxSize > 0 && s.Size > maxSize {
		return s, nil, "", ErrTooLarge
	}
	data, sum, err := readAllHash(f, s.Size)
	if err != nil {
		return s, nil, "", &StepError{"read target", err}
	}
	return s, data, sum, nil
}

// ErrTooLarge reports a file larger than the limit given to ReadFile.
var ErrTooLarge = errors.New("atomicfile: file too large")

func (d *Dir) lstat(name string) (Stat, []byte, string, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return Stat{}, nil, "", nil
		}
		return Stat{}, nil, "", &StepError{"lstat target", err}
	}
	return statFrom(&st), nil, "", nil
}

// readAllHash reads f to EOF, hashing as it goes. size is a hint.
func readAllHash(f *os.File, size int64) ([]byte, string, error) {
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", err
		}
	}
	sum := sha256.Sum256(buf)
	return buf, hex.EncodeToString(sum[:]), nil
}

// Options describe the file to be written.
type Options struct {
	Mode os.FileMode // permission bits (and setuid/setgid/sticky) of the new file
	// UID and GID, if >= 0, are applied best-effort (only root may give a
	// file away; a failure is ignored, as the content matters more).
	UID, GID int
}

// Result describes a completed commit.
type Result struct {
	Strategy string
	Stat     Stat // of the file now in place
}

// tempName is the single temporary name used for target name. One name per
// target is enough because commits to a target are serialised by the
// caller's lock; it also means a temporary file left by a crashed writer is
// found and removed by the next commit to the same target.
func tempName(name string) string {
	const suffix = ".egtmp"
	t := "." + name + suffix
	if len(t) > 255 {
		sum := sha256.Sum256([]byte(name))
		t = "." + name[:200] + "-" + hex.EncodeToString(sum[:4]) + suffix
	}
	return t
}

// IsTemp reports whether name has the form of one of our temporary names.
func IsTemp(name string) bool {
	return len(name) > len(".egtmp")+1 && name[0] == '.' && name[len(name)-len(".egtmp"):] == ".egtmp"
}

// writeTemp creates the temporary file for name with O_EXCL, writes data,
// applies the mode and owner and fsyncs it. A temporary file left by a
// crashed writer is removed first: the caller's lock means no live writer of
// this target can own it.
func (d *Dir) writeTemp(name string, data []byte, opts Options) (string, error) {
	tmp := tempName(name)
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := sys.openat(d.fd, tmp, flags, 0o600)
	if err == unix.EEXIST {
		// Stale: left by a writer killed mid-commit. unlinkat removes a
		// symlink itself, never its target.
		if err := sys.unlinkat(d.fd, tmp, 0); err != nil && err != unix.ENOENT {
			return "", &StepError{"remove stale temp", err}
		}
		fd, err = sys.openat(d.fd, tmp, flags, 0o600)
	}
	if err != nil {
		return "", &StepError{"create temp", err}
	}
	fail := func(step string, err error) (string, error) {
		unix.Close(fd)
		sys.unlinkat(d.fd, tmp, 0)
		return "", &StepError{step, err}
	}
	for off := 0; off < len(data); {
		n, err := sys.write(fd, data[off:])
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return fail("write", err)
		}
		if n == 0 {
			return fail("write", io.ErrShortWrite)
		}
		off += n
	}
	if opts.UID >= 0 && opts.GID >= 0 {
		unix.Fchown(fd, opts.UID, opts.GID) // best-effort; see Options
	}
	// fchmod after fchown: chown clears setuid/setgid bits.
	if err := sys.fchmod(fd, unixMode(opts.Mode)); err != nil {
		return fail("chmod", err)
	}
	// Without this fsync the rename below may reach the disk before the
	// data does, and a crash would leave an empty or partial file under the
	// target's name.
	if err := sys.fsync(fd); err != nil {
		return fail("fsync", err)
	}
	if err := unix.Close(fd); err != nil {
		sys.unlinkat(d.fd, tmp, 0)
		return "", &StepError{"close temp", err}
	}
	return tmp, nil
}

func unixMode(m os.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	return mode
}

// syncDir makes the directory entry changes durable. Without it a crash
// after the rename may bring back the old name, or neither.
func (d *Dir) syncDir() error {
	if err := sys.fsync(d.fd); err != nil {
		return &StepError{"fsync dir", err}
	}
	return nil
}

// Replace atomically replaces the existing regular file name with data. want
// is the hex SHA-256 of the bytes the caller verified under its lock: with
// the exchange strategy the displaced bytes are re-hashed and, if they
// differ, the exchange is undone and ErrRaced returned.
func (d *Dir) Replace(name string, data []byte, want string, opts Options) (Result, error) {
	tmp, err := d.writeTemp(name, data, opts)
	if err != nil {
		return Result{}, err
	}
	strategy, err := d.swap(tmp, name, want)
	if err != nil {
		sys.unlinkat(d.fd, tmp, 0)
		return Result{}, err
	}
	if err := d.syncDir(); err != nil {
		// The new content is in place but its durability is unknown; the
		// displaced temp is removed by the next commit.
		return Result{Strategy: strategy}, err
	}
	// The displaced file (exchange) is removed after the directory fsync, so
	// a crash in between leaves an extra temp file, never a missing target.
	sys.unlinkat(d.fd, tmp, 0)
	st, err := d.statName(name)
	return Result{Strategy: strategy, Stat: st}, err
}

// hashAt hashes the regular file at name without following symlinks.
func (d *Dir) hashAt(name string) (string, error) {
	fd, err := sys.openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func (d *Dir) statName(name string) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Stat{}, &StepError{"stat result", err}
	}
	return statFrom(&st), nil
}

// Create atomically creates name, which must not exist, with data. If a file
// appeared there meanwhile it returns ErrExist and writes nothing: a
// no-replace rename lets exactly one of two creators win.
func (d *Dir) Create(name string, data []byte, opts Options) (Result, error) {
	tmp, err := d.writeTemp(name, data, opts)
	if err != nil {
		return Result{}, err
	}
	if err := d.renameNoReplace(tmp, name); err != nil {
		sys.unlinkat(d.fd, tmp, 0)
		if err == unix.EEXIST {
			return Result{}, ErrExist
		}
		return Result{}, &StepError{"rename", err}
	}
	if err := d.syncDir(); err != nil {
		return Result{Strategy: Create}, err
	}
	st, err := d.statName(name)
	return Result{Strategy: Create, Stat: st}, err
}

// Remove removes the regular file name if its bytes still hash to want. The
// file is first renamed to the temporary name, which is atomic, and hashed
// there; if it is not what the caller verified it is renamed back and
// ErrRaced returned.
func (d *Dir) Remove(name string, want string) (Result, error) {
	tmp := tempName(name)
	if err := sys.unlinkat(d.fd, tmp, 0); err != nil && err != unix.ENOENT {
		return Result{}, &StepError{"remove stale temp", err}
	}
	if err := d.renameNoReplace(name, tmp); err != nil {
		if err == unix.ENOENT {
			return Result{}, ErrRaced
		}
		return Result{}, &StepError{"rename", err}
	}
	got, err := d.hashAt(tmp)
	if err != nil || got != want {
		if rerr := d.renameNoReplace(tmp, name); rerr != nil {
			return Result{}, &StepError{"rename back", fmt.Errorf("%w; the displaced file is kept as %s", rerr, tmp)}
		}
		if err != nil {
			return Result{}, &StepError{"hash displaced", err}
		}
		return Result{}, ErrRaced
	}
	if err := sys.unlinkat(d.fd, tmp, 0); err != nil {
		return Result{}, &StepError{"unlink", err}
	}
	if err := d.syncDir(); err != nil {
		return Result{Strategy: Delete}, err
	}
	return Result{Strategy: Delete}, nil
}

// Put creates or replaces name with data by rename, without checking what it
// displaces. It is for files the caller alone writes under its own lock
// (editguard's state), where there is nothing to verify.
func (d *Dir) Put(name string, data []byte, opts Options) (Result, error) {
	tmp, err := d.writeTemp(name, data, opts)
	if err != nil {
		return Result{}, err
	}
	if err := sys.renameat(d.fd, tmp, d.fd, name); err != nil {
		sys.unlinkat(d.fd, tmp, 0)
		return Result{}, &StepError{"rename", err}
	}
	if err := d.syncDir(); err != nil {
		return Result{Strategy: Rename}, err
	}
	return Result{Strategy: Rename}, nil
}

// Open opens the regular file name for reading without following a
// symlink, and returns it with its fstat. For a missing entry it returns a
// nil file and Stat{Exists: false}; for anything but a regular file, a nil
// file and the entry's Stat.
func (d *Dir) Open(name string) (*os.File, Stat, error) {
	fd, err := sys.openat(d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return nil, Stat{}, nil
		}
		if err == unix.ELOOP || err == unix.ENXIO || err == unix.EISDIR {
			st, _, _, err := d.lstat(name)
			return nil, st, err
		}
		return nil, Stat{}, &StepError{"open target", err}
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, Stat{}, &StepError{"fstat target", err}
	}
	s := statFrom(&st)
	if !s.Regular() {
		f.Close()
		return nil, s, nil
	}
	return f, s, nil
}
