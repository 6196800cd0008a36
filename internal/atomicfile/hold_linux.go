package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Held is a file frozen by a write lease (fcntl F_SETLEASE, F_WRLCK): when
// the lease was taken no other open file description of the file existed,
// in any process, and until it is released every open of the file and
// every truncate(2) of it waits. So while the lease holds, no one can
// change the file's bytes, and once its only name is one the caller owns,
// no one can open it to change them later. Renames and links do not wait:
// the file's names may change. The kernel breaks a lease that an opener
// has waited lease-break-time for (45 s by default); Intact says whether it
// still holds.
type Held struct {
	d        *Dir
	name     string
	fd       FD
	st       unix.Stat_t
	released bool
	// synced is closed once the fsync StartSync began has returned, with
	// its error in syncErr.
	synced  chan struct{}
	syncErr error
}

// Hold opens name, leases it, and checks under the lease that it is the
// file the caller read: a regular file with inode ino, no other name, and
// bytes equal to expect. It returns nil if any of that fails, or if the
// lease cannot be had: another process has the file open, or the file
// system or the caller's rights refuse leases.
func (d *Dir) Hold(name string, ino uint64, expect []byte) *Held {
	fd, err := sys.openat(d.hook, d.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	h := &Held{d: d, name: name, fd: FD{fd: fd}}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		h.fd.Close()
		return nil
	}
	if unix.Fstat(fd, &h.st) != nil || h.st.Mode&unix.S_IFMT != unix.S_IFREG || h.st.Ino != ino || h.st.Nlink != 1 ||
		h.st.Size != int64(len(expect)) {
		h.Close()
		return nil
	}
	if same, err := equalContent(&h.fd, expect); err != nil || !same {
		h.Close()
		return nil
	}
	return h
}

// Dev and Ino are the held file's device and inode numbers.
func (h *Held) Dev() uint64 { return uint64(h.st.Dev) }

// Ino: see Dev.
func (h *Held) Ino() uint64 { return h.st.Ino }

// Intact reports whether the lease still holds: nothing has opened or
// changed the file since Hold.
func (h *Held) Intact() bool {
	if h.released {
		return false
	}
	t, err := unix.FcntlInt(uintptr(h.fd.fd), unix.F_GETLEASE, 0)
	return err == nil && t == unix.F_WRLCK
}

// Alone reports whether the lease still holds and the file has one name.
func (h *Held) Alone() bool {
	var st unix.Stat_t
	return h.Intact() && unix.Fstat(h.fd.fd, &st) == nil && st.Nlink == 1
}

// StartSync starts making the held file's bytes durable, in the
// background: under the lease they cannot change meanwhile, so the fsync
// need not wait for anything Link waits for, and its device flush can
// share one with the caller's other fsyncs. Link waits for it; calling it
// again does nothing.
func (h *Held) StartSync() {
	if h.synced != nil {
		return
	}
	h.synced = make(chan struct{})
	go func() {
		defer close(h.synced)
		h.syncErr = sys.fsync(h.d.hook, h.fd.fd)
	}()
}

// Link makes the held file's bytes durable (StartSync), then gives the
// file the name newname in the directory dirfd; the caller makes the name
// durable. It fails, adding no name, if the fsync fails or the held
// file's name no longer names it.
func (h *Held) Link(dirfd int, newname string) error {
	h.StartSync()
	<-h.synced
	if h.syncErr != nil {
		return h.syncErr
	}
	if err := sys.linkat(h.d.hook, h.d.fd, h.name, dirfd, newname); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, newname, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Dev != h.st.Dev || st.Ino != h.st.Ino {
		unix.Unlinkat(dirfd, newname, 0)
		if err == nil {
			err = errors.New("atomicfile: the held file's name names another file")
		}
		return err
	}
	return nil
}

// Chmod sets the held file's permission bits.
func (h *Held) Chmod(mode uint32) error { return unix.Fchmod(h.fd.fd, mode) }

// Release gives the lease up; the file stays open.
func (h *Held) Release() {
	if h != nil && !h.released {
		unix.FcntlInt(uintptr(h.fd.fd), unix.F_SETLEASE, unix.F_UNLCK)
		h.released = true
	}
}

// Close releases the lease and closes the file. A nil Held does nothing.
func (h *Held) Close() {
	if h != nil {
		h.Release()
		if h.synced != nil {
			<-h.synced // the descriptor is the fsync's
		}
		h.fd.Close()
	}
}

// verifyHeld is openVerify for a Replace whose target is held: the file
// at name must be the held one, and while the lease is intact its bytes
// are the ones Hold compared; after a break they are compared again,
// through the held descriptor (opening the file by name would wait for
// this very lease).
func (d *Dir) verifyHeld(name string, h *Held, expect []byte) (*verified, bool, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, false, err
	}
	if st.Dev != h.st.Dev || st.Ino != h.st.Ino {
		return nil, false, nil
	}
	fd, err := unix.FcntlInt(uintptr(h.fd.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, false, err
	}
	return verifyFD(fd, expect, h.Intact())
}
