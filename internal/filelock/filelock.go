//go:build unix

// Package filelock takes flock(2) locks on open files and directories. It is
// the one lock implementation of editguard: the commit lock on a target's
// parent directory, and the sidecar locks of the history store, the ledger
// and the session files.
//
// A lock serialises a critical section across goroutines and across
// processes: flock locks belong to the open file description, so two
// descriptors opened separately exclude each other whether they are in one
// process or two. Within a process, waiters for the same file queue on a
// gate first (keyed by device and inode), so they take turns in order instead
// of polling the kernel lock against each other.
//
// Waits are bounded: a lock that is not granted within the timeout fails with
// ErrBusy, so a process that holds a lock forever (stopped with SIGSTOP, say)
// cannot make every other caller wait forever.
//
// Lock files are never deleted. Deleting a lock file while another process
// waits on its descriptor would let a third process lock a new file of the
// same name, and two holders would run at once.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultTimeout is how long Acquire waits when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// ErrBusy reports that a lock was not granted within the timeout.
var ErrBusy = errors.New("filelock: lock held by another process for too long")

// ErrNotRegular reports a lock path that names a symlink, directory or
// device instead of a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Options control Acquire. A nil *Options means an exclusive lock with
// DefaultTimeout.
type Options struct {
	Shared  bool          // a shared (read) lock; exclusive otherwise
	Timeout time.Duration // longest wait; 0 means DefaultTimeout, < 0 waits without limit
}

// Lock is a held lock. Unlock releases it.
type Lock struct {
	f     *os.File
	owned bool // Unlock closes f
	g     *gate
}

// Acquire takes a lock on the open file or directory f, waiting at most the
// timeout or until ctx is done. The caller keeps ownership of f, which must
// stay open while the lock is held.
func Acquire(ctx context.Context, f *os.File, opts *Options) (*Lock, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	var g *gate
	if !o.Shared {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
		}
		var err error
		if g, err = enter(ctx, fileKey{uint64(st.Dev), st.Ino}, deadline); err != nil {
			return nil, fmt.Errorf("filelock: %s: %w", f.Name(), err)
		}
	}
	how := unix.LOCK_EX
	if o.Shared {
		how = unix.LOCK_SH
	}
	if err := flockWait(ctx, f, how, deadline); err != nil {
		g.leave()
		return nil, err
	}
	return &Lock{f: f, g: g}, nil
}

// AcquireAt opens (creating it, mode 0644, if needed) the lock file at path in
// dir without following a symlink, and locks it. The returned Lock owns the
// descriptor: Unlock closes it. A symlink or anything but a regular file at
// path is refused, so a lock can never create or open a file elsewhere.
func AcquireAt(ctx context.Context, dir *os.File, path string, opts *Options) (*Lock, error) {
	fd, err := unix.Openat(int(dir.Fd()), path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, &os.PathError{Op: "open lock", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		if err == nil {
			err = ErrNotRegular
		}
		return nil, &os.PathError{Op: "open lock", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	l, err := Acquire(ctx, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.owned = true
	return l, nil
}

// Unlock releases the lock. Closing an owned descriptor releases the flock
// even if the explicit unlock fails, so the lock is never leaked.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	if l.owned {
		if cerr := l.f.Close(); err == nil {
			err = cerr
		}
	}
	l.f = nil
	l.g.leave()
	return err
}

// flockWait takes the flock, polling with a growing pause until deadline
// (zero: forever). A non-blocking attempt comes first, since the lock is
// usually free.
func flockWait(ctx context.Context, f *os.File, how int, deadline time.Time) error {
	fd := int(f.Fd())
	pause := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		case unix.EWOULDBLOCK:
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("%w: %s", ErrBusy, f.Name())
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// fileKey identifies a file: device and inode.
type fileKey struct{ dev, ino uint64 }

// gate queues this process's exclusive lockers of one file.
type gate struct {
	key  fileKey
	ch   chan struct{} // holds a token while a locker is inside
	refs int           // guarded by gates.mu
}

var gates = struct {
	mu sync.Mutex
	m  map[fileKey]*gate
}{m: map[fileKey]*gate{}}

func enter(ctx context.Context, k fileKey, deadline time.Time) (*gate, error) {
	gates.mu.Lock()
	g := gates.m[k]
	if g == nil {
		g = &gate{key: k, ch: make(chan struct{}, 1)}
		gates.m[k] = g
	}
	g.refs++
	gates.mu.Unlock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case g.ch <- struct{}{}:
		return g, nil
	case <-ctx.Done():
		g.release()
		return nil, ctx.Err()
	case <-timeout:
		g.release()
		return nil, ErrBusy
	}
}

func (g *gate) leave() {
	if g == nil {
		return
	}
	<-g.ch
	g.release()
}

func (g *gate) release() {
	gates.mu.Lock()
	if g.refs--; g.refs == 0 {
		delete(gates.m, g.key)
	}
	gates.mu.Unlock()
}
