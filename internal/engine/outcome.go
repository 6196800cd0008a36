package engine

import (
	"sync"
	"time"

	"github.com/editguard/editguard/internal/ledger"
)

// A change's outcome: its ledger record, written while the caller holds
// the file's lock, so that one file's records are in the order of its
// changes, and made durable after the lock is let go, so that its fsync is
// shared with concurrent commits (the ledger's group fsync). A committed
// change whose intent is durable is reported without waiting for its
// outcome's fsync: the intent accounts for the change should power be cut
// first, and the next Open appends its outcome (resolveIntent). A failed
// attempt waits: its error says that nothing changed, and the intent alone
// would leave that to be judged from the file.

// outcomeSyncDelay is how long a committed change's outcome record waits
// before its own fsync: under load, a later change's intent fsync makes it
// durable first, and then the wait costs nothing.
const outcomeSyncDelay = 100 * time.Millisecond

// An Outcome is a change's ledger record, written but perhaps not yet
// durable.
type Outcome struct {
	e    *Engine
	rec  *ledger.Record
	p    *ledger.Pending
	err  error
	lazy bool // the record's fsync is not waited for: its intent is durable
}

// WriteOutcome writes rec, the outcome of a change whose intent is in (nil
// for none), and links it to the intent.
func (e *Engine) WriteOutcome(rec *ledger.Record, in *Intent) *Outcome {
	if in != nil {
		// Seq is cleared if the intent's write failed or was cut, which
		// Durable waits to know.
		in.Durable()
		rec.Intent = in.Rec.Seq
	}
	o := &Outcome{e: e, rec: rec}
	o.lazy = rec.Outcome == "ok" && in.Durable() && rec.Intent != 0
	o.p, o.err = e.cfg.Led.Write(rec)
	return o
}

// Wait returns once the record is durable, or at once if its change is
// committed and its intent durable: its fsync then runs in the background,
// after outcomeSyncDelay, so that a later commit's intent fsync usually
// covers it (FlushOutcomes hurries it). The error is the record's write or
// fsync's. Once the record is durable, the history version it names is
// linked to it; the ledger is the authority, so a failure of that link
// loses nothing.
func (o *Outcome) Wait() error {
	e, rec := o.e, o.rec
	if o.err == nil && o.lazy {
		ticket := e.finals.Add()
		bell := e.finalsDue.bell()
		go func() {
			defer e.finals.Done(ticket)
			sleep(outcomeSyncDelay, bell)
			if o.p.Wait() == nil && rec.HistoryVersion != "" {
				e.cfg.Hist.SetLedgerSeq(rec.Path, rec.HistoryVersion, rec.Seq)
			}
		}()
		return nil
	}
	if o.err == nil {
		o.err = o.p.Wait()
	}
	if o.err == nil && rec.HistoryVersion != "" {
		e.cfg.Hist.SetLedgerSeq(rec.Path, rec.HistoryVersion, rec.Seq)
	}
	return o.err
}

// FlushOutcomes cuts short the wait of the outcome records whose fsync
// runs in the background and returns once those running now are done:
// before Close, and before history is listed (they link versions to their
// records).
func (e *Engine) FlushOutcomes() {
	e.finalsDue.ring()
	e.finals.Wait()
}

// alarm cuts short, at once, every sleep on a bell it handed out.
type alarm struct {
	mu sync.Mutex
	ch chan struct{}
}

// bell returns the channel the next ring closes.
func (a *alarm) bell() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ch == nil {
		a.ch = make(chan struct{})
	}
	return a.ch
}

// ring ends the sleeps on every bell handed out so far.
func (a *alarm) ring() {
	a.mu.Lock()
	if a.ch != nil {
		close(a.ch)
		a.ch = nil
	}
	a.mu.Unlock()
}

// sleep returns after d, or once bell is closed.
func sleep(d time.Duration, bell <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-bell:
	}
}

// Running counts background work and lets a caller wait for the work
// running when it asks, not for work started after: under a steady stream
// of commits there may never be a moment when none runs.
type Running struct {
	mu      sync.Mutex
	last    uint64              // the last ticket handed out
	pending map[uint64]struct{} // tickets of the work running
	changed *sync.Cond
}

// Add counts one piece of work; Done, with the ticket Add returns, ends it.
func (r *Running) Add() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[uint64]struct{}{}
	}
	r.last++
	r.pending[r.last] = struct{}{}
	return r.last
}

// Done ends the work of ticket.
func (r *Running) Done(ticket uint64) {
	r.mu.Lock()
	delete(r.pending, ticket)
	if r.changed != nil {
		r.changed.Broadcast()
	}
	r.mu.Unlock()
}

// Wait returns once the work running when it was called has ended.
func (r *Running) Wait() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = sync.NewCond(&r.mu)
	}
	upTo := r.last
	for r.before(upTo) {
		r.changed.Wait()
	}
}

// before reports whether work with a ticket up to t is running. The
// caller holds mu.
func (r *Running) before(t uint64) bool {
	for k := range r.pending {
		if k <= t {
			return true
		}
	}
	return false
}
