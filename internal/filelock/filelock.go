//go:build unix

// Package filelock takes flock(2) locks on open files and directories. It is
// the one lock implementation of editguard: the commit lock on a target's
// parent directory; the 1,024 stripe locks that order each file's changes
// (.editguard/locks/file-NNNN.lock); the locks of publish and pull
// (sync.lock), of the checkpoints (checkpoints/lock) and of the transaction
// journals (tx/journal.lock); and the sidecar locks of the history store,
// the ledger and the session files. docs/ARCHITECTURE.md gives the order in
// which they are taken.
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
	"runtime"
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
	fd    int
	name  string   // for errors
	f     *os.File // the caller's file (Acquire), kept alive while held
	owned bool     // Unlock closes fd
	held  bool
	g     *gate
	c     *Cache  // the cache fd came from and returns to, if any
	cf    *cached // fd as the cache knows it
}

// Acquire takes a lock on the open file or directory f, waiting at most the
// timeout or until ctx is done. The caller keeps ownership of f, which must
// stay open while the lock is held.
func Acquire(ctx context.Context, f *os.File, opts *Options) (*Lock, error) {
	fd := int(f.Fd())
	o := options(opts)
	var key fileKey
	if !o.Shared {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
		}
		key = fileKey{uint64(st.Dev), st.Ino}
	}
	l, err := acquire(ctx, fd, f.Name(), key, o)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// options returns opts with its defaults applied.
func options(opts *Options) Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// acquire takes the lock on fd, whose device and inode are key (used only
// for an exclusive lock): first this process's gate for the file, then the
// flock.
func acquire(ctx context.Context, fd int, name string, key fileKey, o Options) (*Lock, error) {
	var deadline time.Time
	if o.Timeout > 0 {
		deadline = time.Now().Add(o.Timeout)
	}
	var g *gate
	if !o.Shared {
		var err error
		if g, err = enter(ctx, key, deadline); err != nil {
			return nil, fmt.Errorf("filelock: %s: %w", name, err)
		}
	}
	how := unix.LOCK_EX
	if o.Shared {
		how = unix.LOCK_SH
	}
	if err := flockWait(ctx, fd, name, how, deadline); err != nil {
		g.leave()
		return nil, err
	}
	return &Lock{fd: fd, name: name, held: true, g: g}, nil
}

// AcquireAt opens (creating it, mode 0644, if needed) the lock file at path in
// dir without following a symlink, and locks it. The returned Lock owns the
// descriptor: Unlock closes it. A symlink or anything but a regular file at
// path is refused, so a lock can never create or open a file elsewhere.
func AcquireAt(ctx context.Context, dir *os.File, path string, opts *Options) (*Lock, error) {
	cf, err := openAt(int(dir.Fd()), path)
	if err != nil {
		return nil, err
	}
	l, err := acquire(ctx, cf.fd, path, cf.key, options(opts))
	if err != nil {
		unix.Close(cf.fd)
		return nil, err
	}
	l.owned = true
	return l, nil
}

// openAt opens the lock file path in the directory dirfd as AcquireAt does.
// The descriptor is a bare one, not an *os.File: a lock file is only ever
// flocked, and an *os.File would cost an fcntl and a poller registration
// (which fails for a regular file) at every open. O_NONBLOCK keeps a FIFO
// planted at path from blocking the open; it changes nothing for a regular
// file.
func openAt(dirfd int, path string) (*cached, error) {
	fd, err := unix.Openat(dirfd, path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o644)
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
	return &cached{fd: fd, name: path, key: fileKey{uint64(st.Dev), st.Ino}}, nil
}

// Unlock releases the lock. Closing an owned descriptor releases the flock
// even if the explicit unlock fails, so the lock is never leaked. A
// descriptor from a Cache goes back to it if the unlock succeeded, and is
// closed otherwise.
func (l *Lock) Unlock() error {
	if l == nil || !l.held {
		return nil
	}
	err := unix.Flock(l.fd, unix.LOCK_UN)
	switch {
	case l.c != nil && err == nil:
		l.c.put(l.cf)
	case l.c != nil || l.owned:
		if cerr := unix.Close(l.fd); err == nil && cerr != nil {
			err = &os.PathError{Op: "close", Path: l.name, Err: cerr}
		}
	}
	runtime.KeepAlive(l.f)
	l.held, l.f = false, nil
	l.g.leave()
	return err
}

// flockWait takes the flock, polling with a growing pause until deadline
// (zero: forever). A non-blocking attempt comes first, since the lock is
// usually free.
func flockWait(ctx context.Context, fd int, name string, how int, deadline time.Time) error {
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
			return &os.PathError{Op: "flock", Path: name, Err: err}
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			return fmt.Errorf("%w: %s", ErrBusy, name)
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
	// A free gate is taken whatever the deadline, as flockWait takes a
	// free flock: a select with ctx already done would pick at random.
	select {
	case g.ch <- struct{}{}:
		return g, nil
	default:
	}
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
