package groupcommit

import (
	"sync"
	"sync/atomic"

	"github.com/editguard/editguard/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// DirSyncs shares directory fsyncs among the commits of one process: a
// commit that needs its directory's entries durable waits for an fsync of
// that directory that started after its swap, joining the next one to
// start if none has.
type DirSyncs struct {
	mu sync.Mutex
	m  map[dirKey]*dirSync
	// swaps numbers the swaps of this process: a round of fsync covers
	// every swap numbered before it started, in its directory.
	swaps atomic.Uint64
}

type dirKey struct{ dev, ino uint64 }

// dirSync is the state of one directory: the fsync running, if any, the
// one that will start after it, which new callers join, and the last one
// that succeeded.
type dirSync struct {
	refs    int
	running *syncRound
	next    *syncRound
	last    *syncRound
}

// dirSyncsKept is how many directories DirSyncs remembers the last fsync
// of while no caller uses them.
const dirSyncsKept = 64

type syncRound struct {
	done   chan struct{}
	err    error
	covers uint64 // the last swap made before the fsync started
}

// Swapped numbers a swap just made (its rename returned), for Sync.
func (s *DirSyncs) Swapped() uint64 { return s.swaps.Add(1) }

// Sync makes the entries of d durable, sharing the fsync with concurrent
// callers for the same directory. swap is the number Swapped gave the
// caller's swap, or 0 to cover every change made before the call.
func (s *DirSyncs) Sync(d *atomicfile.Dir, swap uint64) error {
	if swap == 0 {
		swap = s.Swapped()
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.Fd(), &st); err != nil {
		return d.Sync()
	}
	k := dirKey{uint64(st.Dev), st.Ino}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[dirKey]*dirSync{}
	}
	ds := s.m[k]
	if ds == nil {
		if len(s.m) >= dirSyncsKept {
			for k, ds := range s.m {
				if ds.refs == 0 {
					delete(s.m, k)
				}
			}
		}
		ds = &dirSync{}
		s.m[k] = ds
	}
	if last := ds.last; last != nil && last.covers >= swap {
		// A round that started after the caller's swap has succeeded.
		s.mu.Unlock()
		return nil
	}
	ds.refs++
	defer func() {
		s.mu.Lock()
		ds.refs--
		s.mu.Unlock()
	}()
	if cur := ds.running; cur != nil && cur.covers >= swap {
		// The running fsync started after the caller's swap.
		s.mu.Unlock()
		<-cur.done
		return cur.err
	}
	if r := ds.next; r != nil {
		// A round is waiting to start: it starts after this call, so it
		// covers this caller's changes.
		s.mu.Unlock()
		<-r.done
		return r.err
	}
	r := &syncRound{done: make(chan struct{})}
	if cur := ds.running; cur != nil {
		// The running fsync may have started before this caller's change:
		// wait for it, then run the next round, for everyone who joined.
		ds.next = r
		s.mu.Unlock()
		<-cur.done
		s.mu.Lock()
	}
	ds.running, ds.next = r, nil
	r.covers = s.swaps.Load()
	s.mu.Unlock()
	r.err = d.Sync()
	s.mu.Lock()
	ds.running = nil
	if r.err == nil {
		ds.last = r
	}
	s.mu.Unlock()
	close(r.done)
	return r.err
}
