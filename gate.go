package editguard

import (
	"errors"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
)

// Group commit.
//
// A change costs fsyncs of three kinds (RELIABILITY.md has the table): its
// new content under the temporary name and its intent in the ledger before
// the swap, and the directory after it. Each fsync is a device flush here,
// and concurrent ones do not merge: a flush is issued per fsync call. The
// temporary file is the change's own, but the ledger and the directory are
// shared, and one fsync of either covers every change written to it before
// the fsync began. So the commits of a process go through a gate before
// their fsyncs: the gate lets them through in batches, and a batch's
// intents share one ledger fsync and its swaps one fsync of each
// directory.
//
// A batch of several commits shares the new contents' flush as well: each
// temporary file was written before its commit arrived, so one syncfs(2)
// of their file system, begun once the batch opens, makes all of them
// durable (syncTemp), where each would otherwise pay an fsync of its own.
// A syncfs costs what is dirty on the whole file system, other programs'
// writes included; a commit that goes through alone keeps its own fsync.
//
// The gate waits only when there are commits to wait for. A commit that
// arrives with no other commit in progress, after a batch of one, goes
// through at once: a lone agent never waits. Once commits overlap (another
// commit is in progress when one arrives, or the last batch had several),
// a batch collects arrivals for gateWait and then opens. A batch of one
// ends that: load that falls away costs one wait. A commit in progress
// counts from when it holds its file's lock: one waiting for that lock
// may wait for a commit at the gate.
//
// After the swap, a batch's directory fsync waits for the batch's other
// swaps (at most swapWait): one fsync then covers them all.
//
// The waits are bounded, and a commit waiting at the gate holds its file's
// lock and nothing else: the gate changes when fsyncs start, not what they
// cover, their order, or what they guarantee.

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

// commitGate groups the commits of one Workspace (see above).
type commitGate struct {
	mu      sync.Mutex
	active  int           // commits in progress that have not arrived
	forming *gateBatch    // the batch that arrivals join, if any
	lastN   int           // commits in the last batch that opened
	wait    time.Duration // gateWait, unless a test sets it
}

// gateBatch is a batch of commits waiting at the gate.
type gateBatch struct {
	g       *commitGate
	open    chan struct{} // closed when the batch opens
	n       int           // commits that joined
	early   bool          // opens as soon as no commit in progress is still to come
	timer   *time.Timer
	members []*gatePass
	// unswapped counts the commits of the opened batch that have
	// neither swapped nor given up; swapsDone is closed when it falls
	// to zero.
	unswapped int
	swapsDone chan struct{}
	// syncs are the batch's shared syncfs calls, by device (syncTemp).
	syncs map[uint64]*sharedSync
}

// sharedSync is one syncfs that the commits of a batch on one file system
// wait for.
type sharedSync struct {
	done chan struct{} // closed when err is set
	err  error
}

// gatePass is one commit's passage through the gate.
type gatePass struct {
	g        *commitGate
	arrived  bool       // arrived at the gate, or left without arriving
	batch    *gateBatch // the batch it went through with, if any
	swapDone bool       // swapped, or gave up: off its batch's count
}

func (g *commitGate) waitFor() time.Duration {
	if g.wait != 0 {
		return g.wait
	}
	return gateWait
}

// enter registers a commit in progress: arrivals wait for it while their
// batch opens early.
func (g *commitGate) enter() *gatePass {
	g.mu.Lock()
	g.active++
	g.mu.Unlock()
	return &gatePass{g: g}
}

// quiet reports whether a commit in progress, the only one, would go
// through the gate at once.
func (g *commitGate) quiet() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.aloneLocked(g.active - 1)
}

// aloneLocked reports whether an arrival with others other commits still
// in progress goes through the gate at once. The caller holds g.mu.
func (g *commitGate) aloneLocked(others int) bool {
	return g.forming == nil && others <= 0 && g.lastN <= 1
}

// arrive waits at the gate until the commit's batch opens. It is called
// once the commit's intent and new content are written, before their
// fsyncs; later calls return at once.
func (p *gatePass) arrive() {
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
		b = &gateBatch{g: g, open: make(chan struct{}), early: g.lastN <= 1}
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

// leave ends a commit's passage: a commit that never arrived (refused, or
// failed before its fsyncs) stops being waited for, and one that arrived
// but did not swap stops holding back its batch's directory fsync. It may
// be called more than once.
func (p *gatePass) leave() {
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

// swapped records that the commit's swap is done (or will not be made).
func (p *gatePass) swapped() {
	if p == nil {
		return
	}
	p.g.mu.Lock()
	p.g.swappedLocked(p)
	p.g.mu.Unlock()
}

// openLocked opens the batch b, if it is still forming. The caller holds
// g.mu.
func (b *gateBatch) openLocked() {
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
func (g *commitGate) swappedLocked(p *gatePass) {
	b := p.batch
	if b == nil || p.swapDone {
		return
	}
	p.swapDone = true
	if b.unswapped--; b.unswapped == 0 {
		close(b.swapsDone)
	}
}

// syncTemp makes the commit's temporary file, written in directory d
// before the commit arrived at the gate, durable together with those of
// its batch: the first of the batch's commits on d's file system calls
// syncfs, which began after every one of them had arrived, and the others
// wait for its result. It reports false, and does nothing, for a commit
// that went through alone or where there is no such call
// (atomicfile.FileSystemSync): the file then needs its own fsync.
func (p *gatePass) syncTemp(d *atomicfile.Dir) (bool, error) {
	if !atomicfile.FileSystemSync || p == nil || p.batch == nil || p.batch.n < 2 {
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
	if !ok {
		var se *atomicfile.StepError
		if err := d.SyncFS(); errors.As(err, &se) {
			s.err = se.Err // the caller's step error names the syncfs
		} else {
			s.err = err
		}
		close(s.done)
	}
	<-s.done
	return true, s.err
}

// awaitSwaps waits, at most swapWait, until every commit of the caller's
// batch has swapped or given up, so that one directory fsync covers them.
// The caller's own swap is done.
func (p *gatePass) awaitSwaps() {
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
