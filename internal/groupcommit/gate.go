package groupcommit

import (
	"errors"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
)

// gateWait is how long a batch collects commits once commits overlap: long
// against a device flush (0.2-0.5 ms on the disks measured), so that a
// batch holds several commits at the rates where flushes add up, and short
// against a tool call's round trip under such load (25-30 ms with 16 HTTP
// sessions on 2 cores). swapWait is how long a batch's first directory
// fsync waits for the batch's other swaps: on a busy machine a commit may
// take longer than gateWait to get there.
const (
	gateWait = 10 * time.Millisecond
	swapWait = 40 * time.Millisecond
)

// Gate groups the commits of one process's workspace (see the package
// documentation). The zero Gate is ready to use.
type Gate struct {
	mu      sync.Mutex
	active  int    // commits in progress that have not arrived
	forming *batch // the batch that arrivals join, if any
	lastN   int    // commits in the last batch that opened
	// Wait, if set, is how long a batch collects commits instead of
	// gateWait.
	Wait time.Duration
	// MaxDirty, if set, replaces maxDirty; below zero, no batch shares
	// a syncfs.
	MaxDirty int64
}

// batch is a batch of commits waiting at the gate.
type batch struct {
	g       *Gate
	open    chan struct{} // closed when the batch opens
	n       int           // commits that joined
	early   bool          // opens as soon as no commit in progress is still to come
	timer   *time.Timer
	members []*Pass
	// unswapped counts the commits of the opened batch that have
	// neither swapped nor given up; swapsDone is closed when it falls
	// to zero.
	unswapped int
	swapsDone chan struct{}
	// syncs are the batch's shared syncfs calls, by device (SyncTemp).
	syncs map[uint64]*sharedSync
}

// sharedSync is one syncfs that the commits of a batch on one file system
// wait for, or, when skip is set, none: each commit fsyncs its own file.
type sharedSync struct {
	done chan struct{} // closed when err is set
	err  error
	skip bool
}

// maxDirty is how much dirty data the machine may hold for a batch to
// share a syncfs: a syncfs writes back everything dirty on the file
// system, so past this much of other programs' writes each commit's own
// fsync costs less than waiting for theirs.
const maxDirty = 8 << 20

// fewDirty reports whether the machine holds at most g's MaxDirty bytes
// (maxDirty, unless set) dirty or under write-back.
func (g *Gate) fewDirty() bool {
	limit := g.MaxDirty
	if limit == 0 {
		limit = maxDirty
	}
	n, ok := dirtyBytes()
	return ok && n <= limit
}

// Pass is one commit's passage through the gate.
type Pass struct {
	g        *Gate
	arrived  bool   // arrived at the gate, or left without arriving
	batch    *batch // the batch it went through with, if any
	swapDone bool   // swapped, or gave up: off its batch's count
}

func (g *Gate) waitFor() time.Duration {
	if g.Wait != 0 {
		return g.Wait
	}
	return gateWait
}

// Enter registers a commit in progress: arrivals wait for it while their
// batch opens early.
func (g *Gate) Enter() *Pass {
	g.mu.Lock()
	g.active++
	g.mu.Unlock()
	return &Pass{g: g}
}

// Quiet reports whether a commit in progress, the only one, would go
// through the gate at once.
func (g *Gate) Quiet() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aloneLocked(g.active - 1)
}

// aloneLocked reports whether an arrival with others other commits still
// in progress goes through the gate at once. The caller holds g.mu.
func (g *Gate) aloneLocked(others int) bool {
	return g.forming == nil && others <= 0 && g.lastN <= 1
}

// Arrive waits at the gate until the commit's batch opens. It is called
// once the commit's intent and new content are written, before their
// fsyncs; later calls return at once.
func (p *Pass) Arrive() {
	if p == nil || p.arrived {
		return
	}
	p.arrived = true
	g := p.g
	g.mu.Lock()
	g.active--
	if g.aloneLocked(g.active) {
		// Alone: through at once.
		g.lastN = 1
		g.mu.Unlock()
		return
	}
	b := g.forming
	if b == nil {
		b = &batch{g: g, open: make(chan struct{}), early: g.lastN <= 1}
		g.forming = b
		b.timer = time.AfterFunc(g.waitFor(), func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			b.openLocked()
		})
	}
	b.n++
	b.members = append(b.members, p)
	if b.early && g.active == 0 {
		b.openLocked()
	}
	g.mu.Unlock()
	<-b.open
}

// Leave ends a commit's passage: a commit that never arrived (refused, or
// failed before its fsyncs) stops being waited for, and one that arrived
// but did not swap stops holding back its batch's directory fsync. It may
// be called more than once.
func (p *Pass) Leave() {
	if p == nil {
		return
	}
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if !p.arrived {
		p.arrived = true
		g.active--
		if b := g.forming; b != nil && b.early && g.active == 0 {
			b.openLocked()
		}
	}
	g.swappedLocked(p)
}

// Swapped records that the commit's swap is done (or will not be made).
func (p *Pass) Swapped() {
	if p == nil {
		return
	}
	p.g.mu.Lock()
	p.g.swappedLocked(p)
	p.g.mu.Unlock()
}

// openLocked opens the batch b, if it is still forming. The caller holds
// g.mu.
func (b *batch) openLocked() {
	g := b.g
	if g.forming != b {
		return
	}
	g.forming = nil
	b.timer.Stop()
	g.lastN = b.n
	b.unswapped, b.swapsDone = b.n, make(chan struct{})
	for _, p := range b.members {
		p.batch = b
	}
	close(b.open)
}

// swappedLocked takes p off its batch's count of commits still to swap.
// The caller holds g.mu.
func (g *Gate) swappedLocked(p *Pass) {
	b := p.batch
	if b == nil || p.swapDone {
		return
	}
	p.swapDone = true
	if b.unswapped--; b.unswapped == 0 {
		close(b.swapsDone)
	}
}

// SyncTemp makes the commit's temporary file, written in directory d
// before the commit arrived at the gate, durable together with those of
// its batch: the first of the batch's commits on d's file system calls
// syncfs, which began after every one of them had arrived, and the others
// wait for its result. It reports false, and does nothing, for a commit
// that went through alone, where a syncfs may not stand in for an fsync
// (atomicfile.Dir.SyncFSStandsIn: no syncfs(2), a kernel that does not
// report its errors, a file system not known to write back every file),
// or when the machine holds more than maxDirty bytes of dirty data, which
// the syncfs would write back first: the file then needs its own fsync.
func (p *Pass) SyncTemp(d *atomicfile.Dir) (bool, error) {
	if !atomicfile.FileSystemSync || p == nil || p.batch == nil || p.batch.n < 2 || !d.SyncFSStandsIn() {
		return false, nil
	}
	dev, err := d.Device()
	if err != nil {
		return false, nil
	}
	g, b := p.g, p.batch
	g.mu.Lock()
	s, ok := b.syncs[dev]
	if !ok {
		if b.syncs == nil {
			b.syncs = map[uint64]*sharedSync{}
		}
		s = &sharedSync{done: make(chan struct{})}
		b.syncs[dev] = s
	}
	g.mu.Unlock()
	if !ok && !g.fewDirty() {
		// Other programs' writes would make the syncfs slow: each
		// commit of the batch fsyncs its own file instead.
		s.skip = true
		close(s.done)
	} else if !ok {
		var se *atomicfile.StepError
		if err := d.SyncFS(); errors.As(err, &se) {
			s.err = se.Err // the caller's step error names the syncfs
		} else {
			s.err = err
		}
		close(s.done)
	}
	<-s.done
	if s.skip {
		return false, nil
	}
	return true, s.err
}

// AwaitSwaps waits, at most swapWait, until every commit of the caller's
// batch has swapped or given up, so that one directory fsync covers them.
// The caller's own swap is done.
func (p *Pass) AwaitSwaps() {
	if p == nil {
		return
	}
	g := p.g
	g.mu.Lock()
	b := p.batch
	g.swappedLocked(p)
	if b == nil || b.unswapped == 0 {
		g.mu.Unlock()
		return
	}
	done := b.swapsDone
	g.mu.Unlock()
	t := time.NewTimer(g.waitFor() * (swapWait / gateWait))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}
