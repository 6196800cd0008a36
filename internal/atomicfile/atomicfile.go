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
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

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
	f    *os.File
	fd   int
	hook Hook // see SetHook
}

// SetHook makes every later system call of d's operations pass through h
// first (see Hook); nil removes it. It is for fault-injection tests.
func (d *Dir) SetHook(h Hook) { d.hook = h }

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
	Dev     uint64
	Ino     uint64
	Nlink   uint64
	UID     int
	GID     int
}

// Regular reports whether the entry is a regular file.
func (s Stat) Regular() bool { return s.Exists && s.Mode.IsRegular() }

// StatFrom is the Stat that st describes.
func StatFrom(st *unix.Stat_t) Stat { return statFrom(st) }

func statFrom(st *unix.Stat_t) Stat {
	mode := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= os.ModeDir
	case unix.S_IFLNK:
		mode |= os.ModeSymlink
	case unix.S_IFREG:
	case unix.S_IFIFO:
		mode |= os.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= os.ModeSocket
	case unix.S_IFCHR:
		mode |= os.ModeDevice | os.ModeCharDevice
	case unix.S_IFBLK:
		mode |= os.ModeDevice
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
		Dev:     uint64(st.Dev),
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
	return d.ReadFileExpect(name, maxSize, "", nil)
}

// ReadFileExpect is ReadFile for a caller that expects the file to hold
// expect, whose SHA-256 (hex) is sum: bytes equal to expect are given that
// sum without being hashed, and are returned as expect itself, which the
// caller must therefore never write to. The caller guarantees that expect
// hashes to sum; any other content is hashed as ReadFile does.
func (d *Dir) ReadFileExpect(name string, maxSize int64, sum string, expect []byte) (Stat, []byte, string, error) {
	fd, err := sys.openat(d.hook, d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		if err == unix.ENOENT {
			return Stat{}, nil, "", nil
		}
		if err == unix.ELOOP || err == unix.ENXIO || err == unix.EISDIR {
			return d.lstat(name)
		}
		return Stat{}, nil, "", &StepError{"open target", err}
	}
	f := &FD{fd: fd}
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
	if sum != "" && expect != nil && s.Size == int64(len(expect)) {
		// Compared a piece at a time through a pooled buffer, the bytes
		// the caller expects cost no new memory: a fresh buffer for a
		// large file costs a page fault per page it is read into, more
		// than the read itself. Other bytes are read again, whole.
		if same, err := equalContent(f, expect); err == nil && same {
			return s, expect, sum, nil
		}
	}
	data, err := readAll(f, s.Size, maxSize)
	if err == nil && (sum == "" || expect == nil || !bytes.Equal(data, expect)) {
		h := sha256.Sum256(data)
		sum = hex.EncodeToString(h[:])
	}
	if err == ErrTooLarge {
		return s, nil, "", ErrTooLarge // it grew past the limit while read
	}
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

// readAll reads r to EOF. size is a hint. With maxSize > 0 it stops past
// maxSize bytes and returns ErrTooLarge: a file that grows while it is
// read cannot take more memory than the limit.
func readAll(r io.Reader, size, maxSize int64) ([]byte, error) {
	if maxSize > 0 {
		r = io.LimitReader(r, maxSize+1)
		size = min(size, maxSize)
	}
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if maxSize > 0 && int64(len(buf)) > maxSize {
		return nil, ErrTooLarge
	}
	return buf, nil
}

// Options describe the file to be written.
type Options struct {
	// Mode is the permission bits (and setuid/setgid/sticky) of the file;
	// 0 creates it with 0666 less the process's umask, as a new file,
	// unless ExactMode is set.
	Mode os.FileMode
	// ExactMode applies Mode as it is, even 0 (no permission bits).
	ExactMode bool
	// UID and GID, if >= 0, are the owner the file must have. If the
	// caller cannot give it that owner (only root may give a file away),
	// the operation fails with ErrOwner and writes nothing.
	UID, GID int
	// Temp, if set, is the temporary name to use (created with O_EXCL, so
	// an existing entry of that name fails the operation); otherwise a
	// fresh random name is used.
	Temp string
	// Park, if set, is a directory on the same file system where a file
	// taken off the target's name (the displaced file, our own file after
	// an undone swap, a removed file) is moved instead of being unlinked,
	// under the name ParkName returns. A program that opened it before and
	// writes to it late still writes into a file someone can reach; the
	// caller sweeps the parked files later (ParsePark reads their names).
	// If the move fails (another file system), the file is unlinked.
	Park *Dir
	// Expect (replacements only), if set, is the bytes the caller read
	// from the target, whose SHA-256 is the want given to StageReplace.
	// The file an exchange displaces is then compared with them instead
	// of hashed: equal bytes prove what an equal hash proves, at a
	// fraction of the CPU, and that time is spent under the caller's
	// commit lock.
	Expect []byte
	// Held (replacements only), if set, is the target held under a lease
	// (Dir.Hold). The file an exchange displaces must be it, and while
	// the lease holds its bytes are the ones Hold compared; Swap then
	// unlinks it at once rather than parking it, since no program can
	// have it open.
	Held *Held
	// Volatile (Put only) skips the fsyncs of the file and of the
	// directory, for state whose loss in a power cut is harmless: after
	// one, the name may hold the old content, the new, or an empty or
	// partial file, and the caller must read any of those safely. A
	// process crash loses nothing.
	Volatile bool
}

// ParkName is the name under which a file whose content hashed to sum is
// parked: the hash, the time in nanoseconds and the target's name (cut to
// 100 bytes), so that whoever sweeps can prove the file unchanged and say
// where it came from.
func ParkName(sum, target string) string {
	if len(target) > 100 {
		target = target[:100]
	}
	var r [4]byte
	rand.Read(r[:])
	return fmt.Sprintf("%s.%d.%s.%s", sum, time.Now().UnixNano(), hex.EncodeToString(r[:]), target)
}

// ParsePark returns the hash and the time a parked file's name records.
func ParsePark(name string) (sum string, parked time.Time, ok bool) {
	parts := strings.SplitN(name, ".", 4)
	if len(parts) < 4 || len(parts[0]) != 64 {
		return "", time.Time{}, false
	}
	ns, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return parts[0], time.Unix(0, ns), true
}

// Result describes a completed commit.
type Result struct {
	Strategy string
	Stat     Stat // of the file now in place
	// Displaced holds bytes that another program wrote into the displaced
	// file after it was verified and before it was removed (a writer that
	// still had the old file open). They are not on disk any more; the
	// caller must keep them (history), since no one else has them.
	Displaced []byte
}

// tempName returns a fresh temporary name for target name: hidden, in the
// same directory, with 64 random bits, so that no two writers (in this
// workspace, a nested one, or an aliased one) ever share a temporary name,
// and a user's own file is never taken for one of ours. Temporary files left
// by a writer killed mid-commit are not removed on sight: nothing proves a
// name of this form is ours and dead.
func tempName(name string) string {
	const suffix = ".egtmp"
	var r [8]byte
	rand.Read(r[:])
	tag := "." + hex.EncodeToString(r[:]) + suffix
	if len(name)+1+len(tag) > 255 {
		sum := sha256.Sum256([]byte(name))
		name = name[:200] + "-" + hex.EncodeToString(sum[:4])
	}
	return "." + name + tag
}

// IsTemp reports whether name has the form of one of our temporary names.
func IsTemp(name string) bool {
	const suffix = ".egtmp"
	n := len(name) - len(suffix)
	if n < 18 || name[0] != '.' || name[n:] != suffix || name[n-17] != '.' {
		return false
	}
	_, err := hex.DecodeString(name[n-16 : n])
	return err == nil
}

// createTemp creates a temporary file for name with O_EXCL (under
// opts.Temp, or a fresh random name), writes data and applies the owner
// and mode. The file is left open and not yet durable: the caller fsyncs
// it, or makes it durable by other means, and closes it (closeTemp).
func (d *Dir) createTemp(name string, data []byte, opts Options) (string, int, error) {
	tmp := opts.Temp
	if tmp == "" {
		tmp = tempName(name)
	}
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// A new file (Mode 0) is created 0666 less the umask, as any program
	// would create it; a replacement starts private and takes the old mode
	// below, so no one reads it under a wider mode meanwhile.
	perm := uint32(0o600)
	if opts.Mode == 0 && !opts.ExactMode {
		perm = 0o666
	}
	fd, err := sys.openat(d.hook, d.fd, tmp, flags, perm)
	if err != nil {
		return "", -1, &StepError{"create temp", err}
	}
	fail := func(step string, err error) (string, int, error) {
		d.dropTemp(fd, tmp)
		return "", -1, &StepError{step, err}
	}
	for off := 0; off < len(data); {
		n, err := sys.write(d.hook, fd, data[off:])
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
	if step, err := d.keepOwnerAndMode(fd, &opts); err != nil {
		return fail(step, err)
	}
	return tmp, fd, nil
}

// closeTemp closes the temporary file fd, fsynced first if sync is set.
// Without that fsync (or another flush of its file system) a rename may
// reach the disk before the data does, and a crash would leave an empty
// or partial file under the target's name. On error the file is removed.
func (d *Dir) closeTemp(fd int, tmp string, sync bool) error {
	if sync {
		if err := sys.fsync(d.hook, fd); err != nil {
			d.dropTemp(fd, tmp)
			return &StepError{"fsync", err}
		}
	}
	if err := unix.Close(fd); err != nil {
		sys.unlinkat(d.hook, d.fd, tmp, 0)
		return &StepError{"close temp", err}
	}
	return nil
}

// dropTemp closes and removes the temporary file fd, on a path that
// already failed.
func (d *Dir) dropTemp(fd int, tmp string) {
	unix.Close(fd)
	sys.unlinkat(d.hook, d.fd, tmp, 0)
}

// keepOwnerAndMode gives the temporary file fd the owner and mode opts
// ask for; it returns the step that failed, if one did.
func (d *Dir) keepOwnerAndMode(fd int, opts *Options) (string, error) {
	if opts.UID >= 0 && opts.GID >= 0 {
		// The replacement must keep the file's owner: giving the file
		// to the caller would widen what the caller may do with it.
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return "fstat temp", err
		}
		if int(st.Uid) != opts.UID || int(st.Gid) != opts.GID {
			if err := unix.Fchown(fd, opts.UID, opts.GID); err != nil {
				return "chown", fmt.Errorf("%w: the file belongs to uid %d gid %d and the replacement cannot: %v", ErrOwner, opts.UID, opts.GID, err)
			}
		}
	}
	if opts.Mode != 0 || opts.ExactMode {
		// fchmod after fchown: chown clears setuid/setgid bits.
		if err := sys.fchmod(d.hook, fd, unixMode(opts.Mode)); err != nil {
			return "chmod", err
		}
	}
	return "", nil
}

// ErrOwner reports that a replacement could not be given the owner of the
// file it replaces.
var ErrOwner = errors.New("atomicfile: cannot keep the file's owner")

// ErrNotWritable reports a target the caller could not write in place: a
// rename needs only a writable directory, and must not let anyone change
// what they could not change with a plain write.
var ErrNotWritable = errors.New("atomicfile: file is not writable by the caller")

// checkWritable refuses a target that the caller's effective IDs may not
// open for writing (access(2) with AT_EACCESS).
func (d *Dir) checkWritable(name string) error {
	err := unix.Faccessat(d.fd, name, unix.W_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
	switch err {
	case nil:
		return nil
	case unix.EACCES, unix.EPERM:
		return &StepError{"access", ErrNotWritable}
	case unix.EROFS:
		return &StepError{"access", err}
	}
	// Some systems do not support AT_SYMLINK_NOFOLLOW here (EINVAL); the
	// caller verified the target is a regular file under its lock.
	if err := unix.Faccessat(d.fd, name, unix.W_OK, unix.AT_EACCESS); err == unix.EACCES || err == unix.EPERM {
		return &StepError{"access", ErrNotWritable}
	} else if err == unix.EROFS {
		return &StepError{"access", err}
	}
	return nil
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

// Sync makes the directory's entry changes durable: the one directory fsync
// of editguard. Without it a crash after a rename may bring back the old
// name, or neither, and a created entry may vanish.
func (d *Dir) Sync() error { return d.syncDir() }

// SyncFS makes every write to the file system that holds d durable, the
// files' data and every directory's entries: one flush that costs what is
// dirty on the whole file system, for many files whose own fsyncs would
// cost more (Staged.SkipSync).
func (d *Dir) SyncFS() error {
	if err := sys.syncfs(d.hook, d.fd); err != nil {
		return &StepError{"syncfs", err}
	}
	return nil
}

// Device returns the number of the device that holds d: directories with
// the same one share a SyncFS.
func (d *Dir) Device() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return 0, err
	}
	return uint64(st.Dev), nil
}

func (d *Dir) syncDir() error {
	if err := sys.fsync(d.hook, d.fd); err != nil {
		return &StepError{"fsync dir", err}
	}
	return nil
}

// Replace atomically replaces the existing regular file name with data. want
// is the hex SHA-256 of the bytes the caller verified under its lock: with
// the exchange strategy the displaced bytes are re-hashed and, if they
// differ, the exchange is undone and a *RaceError (matching ErrRaced)
// returned. A target the caller could not write in place fails with
// ErrNotWritable, and one whose owner cannot be kept with ErrOwner; then
// nothing is written. It is the staged steps (Staged) for one file, back
// to back.
func (d *Dir) Replace(name string, data []byte, want string, opts Options) (Result, error) {
	s, err := d.StageReplace(name, data, want, opts)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

// Create atomically creates name, which must not exist, with data. If a file
// appeared there meanwhile it returns ErrExist and writes nothing: a
// no-replace rename lets exactly one of two creators win.
func (d *Dir) Create(name string, data []byte, opts Options) (Result, error) {
	s, err := d.StageCreate(name, data, opts)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

// Remove removes the regular file name if its bytes still hash to want. The
// file is first renamed to a temporary name, which is atomic, and hashed
// there; if it is not what the caller verified it is renamed back and
// ErrRaced returned. Bytes a writer that had the file open added after the
// check are returned in Result.Displaced.
func (d *Dir) Remove(name string, want string, opts Options) (Result, error) {
	s, err := d.StageRemove(name, want, opts)
	if err != nil {
		return Result{}, err
	}
	return s.run()
}

// verified is an open file whose bytes hashed to what the caller expected:
// n bytes, and its fstat taken before they were read, so any write after
// that shows as another size or mtime.
type verified struct {
	f  *FD
	st unix.Stat_t
	n  int64
}

// openHash opens name without following a symlink and hashes it. The file
// stays open, so its bytes can be read again after the name is gone.
func (d *Dir) openHash(name string) (*verified, string, error) {
	fd, err := sys.openat(d.hook, d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", err
	}
	v := &verified{f: &FD{fd: fd}}
	if err := unix.Fstat(fd, &v.st); err != nil {
		v.f.Close()
		return nil, "", err
	}
	h := sha256.New()
	buf := copyBufs.Get().(*[32 << 10]byte)
	v.n, err = io.CopyBuffer(h, v.f, buf[:])
	copyBufs.Put(buf)
	if err != nil {
		v.f.Close()
		return nil, "", err
	}
	return v, hex.EncodeToString(h.Sum(nil)), nil
}

// openVerify opens name without following a symlink and reports whether
// its bytes are the ones whose SHA-256 is want: by comparing them with
// expect when it is set (the caller guarantees it hashes to want), else by
// hashing them. The file stays open, as with openHash.
func (d *Dir) openVerify(name, want string, expect []byte) (*verified, bool, error) {
	if expect == nil {
		v, got, err := d.openHash(name)
		return v, err == nil && got == want, err
	}
	fd, err := sys.openat(d.hook, d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	return verifyFD(fd, expect, false)
}

// verifyFD takes fd, open on a file, as a verified file: its fstat, and
// whether it holds exactly expect (compared, unless trusted says its bytes
// are known to be expect's). On error fd is closed.
func verifyFD(fd int, expect []byte, trusted bool) (*verified, bool, error) {
	v := &verified{f: &FD{fd: fd}}
	if err := unix.Fstat(fd, &v.st); err != nil {
		v.f.Close()
		return nil, false, err
	}
	v.n = v.st.Size
	if trusted {
		return v, true, nil
	}
	same, err := equalContent(v.f, expect)
	if err != nil {
		v.f.Close()
		return nil, false, err
	}
	v.n = int64(len(expect))
	return v, same, nil
}

// equalContent reports whether f holds exactly expect, reading it from
// its start a piece at a time.
func equalContent(f *FD, expect []byte) (bool, error) {
	buf := copyBufs.Get().(*[32 << 10]byte)
	defer copyBufs.Put(buf)
	for off := 0; ; {
		n, err := f.ReadAt(buf[:], int64(off))
		if n > len(expect)-off || !bytes.Equal(buf[:n], expect[off:off+n]) {
			return false, nil // longer, or other bytes
		}
		off += n
		if err == io.EOF {
			return off == len(expect), nil
		}
		if err != nil {
			return false, err
		}
	}
}

// copyBufs holds the buffers openHash reads through: io.Copy would
// allocate 32 KiB per commit.
var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// removeVerified takes name, which v has open and verified to hash to want,
// off the directory: it parks it in park if given (see Options.Park), else
// unlinks it. It returns the file's bytes if a writer that had it open
// changed it before that: the caller must keep them. Without a park, a write
// into the file after this last look lands in an unlinked file and is the
// writer's to lose, as with any program that replaces files by rename.
func (d *Dir) removeVerified(name string, v *verified, want string, park *Dir) ([]byte, error) {
	defer v.f.Close()
	if err := d.takeOff(name, want, park); err != nil {
		return nil, &StepError{"unlink displaced", err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(v.f.fd, &st); err != nil {
		return nil, &StepError{"fstat displaced", err}
	}
	if st.Size == v.n && st.Mtim == v.st.Mtim {
		return nil, nil
	}
	data, err := io.ReadAll(io.NewSectionReader(v.f, 0, 1<<62))
	if err != nil {
		return nil, &StepError{"read displaced", err}
	}
	if s := sha256.Sum256(data); hex.EncodeToString(s[:]) == want {
		return nil, nil
	}
	return data, nil
}

// RaceError is the error of a commit undone because another program changed
// the target without taking the lock (it matches ErrRaced).
type RaceError struct {
	// Leftover holds the bytes found in our new file after the swap was
	// undone, when they are not what we wrote: the other program wrote into
	// it while it was in place. The file is gone; the caller keeps them.
	Leftover []byte
}

func (e *RaceError) Error() string { return ErrRaced.Error() }
func (e *RaceError) Unwrap() error { return ErrRaced }

// takeOff removes name from d: parked in park under ParkName(sum, name),
// or, without a park or if the move fails, unlinked.
func (d *Dir) takeOff(name, sum string, park *Dir) error {
	if park != nil {
		if err := sys.renameat(d.hook, d.fd, name, park.fd, ParkName(sum, name)); err == nil {
			return nil
		}
	}
	return sys.unlinkat(d.hook, d.fd, name, 0)
}

// undone removes tmp, our new file that a swap was undone for, and reports
// the race with whatever a writer added to it while it was in place.
func (d *Dir) undone(tmp string, data []byte, park *Dir) error {
	fd, err := sys.openat(d.hook, d.fd, tmp, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return &StepError{"open undone temp", err}
	}
	f := &FD{fd: fd}
	defer f.Close()
	s := sha256.Sum256(data)
	if err := d.takeOff(tmp, hex.EncodeToString(s[:]), park); err != nil {
		return &StepError{"unlink undone temp", err}
	}
	got, err := io.ReadAll(f)
	if err != nil {
		return &StepError{"read undone temp", err}
	}
	if bytes.Equal(got, data) {
		return &RaceError{}
	}
	return &RaceError{Leftover: got}
}

// hashAt hashes the regular file at name without following symlinks.
func (d *Dir) hashAt(name string) (string, error) {
	v, sum, err := d.openHash(name)
	if err != nil {
		return "", err
	}
	v.f.Close()
	return sum, nil
}

func (d *Dir) statName(name string) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Stat{}, &StepError{"stat result", err}
	}
	return statFrom(&st), nil
}

// Put creates or replaces name with data by rename, without checking what it
// displaces. It is for files the caller alone writes under its own lock
// (editguard's state), where there is nothing to verify.
func (d *Dir) Put(name string, data []byte, opts Options) (Result, error) {
	tmp, fd, err := d.createTemp(name, data, opts)
	if err != nil {
		return Result{}, err
	}
	if err := d.closeTemp(fd, tmp, !opts.Volatile); err != nil {
		return Result{}, err
	}
	if err := sys.renameat(d.hook, d.fd, tmp, d.fd, name); err != nil {
		sys.unlinkat(d.hook, d.fd, tmp, 0)
		return Result{}, &StepError{"rename", err}
	}
	if opts.Volatile {
		return Result{Strategy: Rename}, nil
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
	fd, err := sys.openat(d.hook, d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
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

// ErrNotDir reports a path element that is not a directory where one is
// needed: a file, a device, or a symlink (which OpenDir never follows).
var ErrNotDir = errors.New("atomicfile: not a directory")

// OpenDir opens the directory name (one path element) in d without following
// a symlink. With create set, a missing directory is created (0777 less the
// umask) and made durable before OpenDir returns: the new directory is
// fsynced, then d, so that a power loss cannot take away the directory and
// with it a file that is later committed into it. created reports whether
// this call made it. A symlink, file or device at name fails with an error
// wrapping ErrNotDir.
func (d *Dir) OpenDir(name string, create bool) (f *os.File, created bool, err error) {
	for {
		fd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			f = os.NewFile(uintptr(fd), name)
			if created {
				if err := sys.fsync(d.hook, fd); err != nil {
					f.Close()
					return nil, true, &StepError{"fsync new dir", err}
				}
				if err := d.syncDir(); err != nil {
					f.Close()
					return nil, true, err
				}
			}
			return f, created, nil
		}
		switch {
		case err == unix.ENOENT && create && !created:
			if err := unix.Mkdirat(d.fd, name, 0o777); err != nil && err != unix.EEXIST {
				return nil, false, &StepError{"mkdir", err}
			} else if err == nil {
				created = true
			}
			continue
		case err == unix.ELOOP || err == unix.ENOTDIR:
			return nil, false, &StepError{"open dir", fmt.Errorf("%w: %s", ErrNotDir, name)}
		}
		return nil, false, &StepError{"open dir", err}
	}
}

// Lstat describes the entry name in d without following a symlink.
// A missing entry has Exists false and no error.
func (d *Dir) Lstat(name string) (Stat, error) {
	st, _, _, err := d.lstat(name)
	return st, err
}

// Fd returns the directory's descriptor, valid while the directory is open.
func (d *Dir) Fd() int { return d.fd }

// Unlink removes the entry name (a symlink itself, never its target).
func (d *Dir) Unlink(name string) error {
	if err := sys.unlinkat(d.hook, d.fd, name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: name, Err: err}
	}
	return nil
}

// TempName returns a fresh temporary name for target name, of the form
// tempName gives (so IsTemp knows it): for a caller that puts a file of
// its own under it before swapping it into place.
func TempName(name string) string { return tempName(name) }
