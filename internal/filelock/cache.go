//go:build unix

package filelock

import (
	"context"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Cache takes locks on the lock files of one directory, as AcquireAt does,
// but keeps their descriptors open between acquisitions, so that a lock
// taken again costs a flock and a stat instead of an open, an fstat, a
// flock and a close.
//
// A descriptor serves one acquisition at a time: a lock is held by the open
// file description, so two holders sharing one would not exclude each
// other (and an exclusive flock on it would convert a shared one). The
// Cache keeps only unlocked descriptors, at most max of them, the least
// recently used closed first.
//
// A kept descriptor may outlive its name: a lock file removed and created
// again, or replaced, is a file that others lock and we would not. So a
// lock taken on a kept descriptor is checked once it is held: if the name
// no longer denotes the locked file, the lock is released and the name
// opened afresh. Locks taken on a fresh descriptor are exactly AcquireAt's.
type Cache struct {
	dir *os.File
	max int

	mu     sync.Mutex
	idle   []*cached // unlocked, least recently used first
	closed bool
}

// cached is an open lock file.
type cached struct {
	fd   int
	name string
	key  fileKey
}

// NewCache returns a Cache for the lock files in dir, keeping at most max
// of them open (max < 1 keeps none). dir must stay open until Close.
func NewCache(dir *os.File, max int) *Cache {
	return &Cache{dir: dir, max: max}
}

// Acquire locks the lock file name in the Cache's directory, creating it
// (mode 0644) if needed, never through a symlink: a symlink or anything but
// a regular file at name is refused, as by AcquireAt. Unlock gives the
// descriptor back to the Cache.
func (c *Cache) Acquire(ctx context.Context, name string, opts *Options) (*Lock, error) {
	o := options(opts)
	dirfd := int(c.dir.Fd())
	for {
		cf, kept := c.get(name)
		if cf == nil {
			var err error
			if cf, err = openAt(dirfd, name); err != nil {
				return nil, err
			}
		}
		l, err := acquire(ctx, cf.fd, name, cf.key, o)
		if err != nil {
			unix.Close(cf.fd)
			return nil, err
		}
		l.c, l.cf = c, cf
		if !kept {
			return l, nil
		}
		var st unix.Stat_t
		err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && (fileKey{uint64(st.Dev), st.Ino}) == cf.key {
			return l, nil
		}
		// Not the file the name denotes now: drop it and open the name.
		l.c = nil
		l.owned = true
		l.Unlock()
	}
}

// get takes a kept descriptor of name out of the Cache; kept is false when
// there is none.
func (c *Cache) get(name string) (cf *cached, kept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.idle) - 1; i >= 0; i-- {
		if cf := c.idle[i]; cf.name == name {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return cf, true
		}
	}
	return nil, false
}

// put keeps an unlocked descriptor, closing the least recently used one
// beyond max, or this one if the Cache is closed.
func (c *Cache) put(cf *cached) {
	c.mu.Lock()
	if c.closed || c.max < 1 {
		c.mu.Unlock()
		unix.Close(cf.fd)
		return
	}
	c.idle = append(c.idle, cf)
	var evict *cached
	if len(c.idle) > c.max {
		evict = c.idle[0]
		c.idle = append(c.idle[:0], c.idle[1:]...)
	}
	c.mu.Unlock()
	if evict != nil {
		unix.Close(evict.fd)
	}
}

// Close closes the kept descriptors. Locks still held stay held; their
// Unlock closes their descriptors.
func (c *Cache) Close() error {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	var err error
	for _, cf := range idle {
		if cerr := unix.Close(cf.fd); err == nil && cerr != nil {
			err = &os.PathError{Op: "close", Path: cf.name, Err: cerr}
		}
	}
	return err
}
