package engine

import (
	"context"
	"errors"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
)

// A change that replaces a large file would copy the file's bytes into
// history before the swap: as many bytes written and fsynced again as the
// new content, for bytes that are on the disk already. Instead, the file is
// held under a write lease (atomicfile.Dir.Hold) and linked into history as
// the version's object:
//
//   - when the lease is taken, no other program has the file open, and
//     until it is released every open of the file waits; under it the
//     file is checked to be the one observed, with one name, holding the
//     bytes observed;
//   - the file's fsync makes its bytes durable, as a copy's would be,
//     before it is linked; it starts as soon as the file is held, beside
//     the intent's fsync and the new content's write, since under the
//     lease the bytes cannot change. The link is made once the change's
//     intent is durable (so Open can find a link a crash left behind);
//   - the swap checks that the file it displaced is the held one, whose
//     bytes could not change, and unlinks it from the directory rather
//     than parking it, since no one can have it open; that removal is
//     made durable before the change's outcome is recorded;
//   - at the end the object stays a link only if the file is history's
//     alone: the lease held throughout, and the object is its one name.
//     Otherwise (a failed swap leaves it the target's file, a broken lease
//     lets others open it) the object is replaced by a copy (Detach).
//
// Another program's open of the file during the hold waits, and breaks
// the lease: the displaced file is then parked as any other (the opener,
// which resolved the name before the swap, gets it), and the object
// becomes a copy. editguard's own opens, made with O_NONBLOCK, fail with
// EAGAIN instead of waiting, and retry (atomicfile.WaitLeased).
//
// A file that cannot be held (another program has it open, another file
// system, no leases) is copied, as before. A crash between the link and
// the swap leaves the object a second name of the target's file, and one
// after the swap may leave the displaced file under its temporary name;
// Open detaches the one and sweeps the other when it resolves the
// change's intent (resolveIntent, resolve.go).

// LinkMin is the smallest displaced content that is linked rather than
// copied: below it the copy costs less than holding the file.
const LinkMin = 128 << 10

// heldLockWait is how long a change that holds its file waits for the
// directory's commit lock before it gives the lease up: the lock is held
// only for a swap, and a swap of another workspace's commit of the same
// file verifies what it displaced by opening it, which waits for the lease.
const heldLockWait = 50 * time.Millisecond

var errIntentNotDurable = errors.New("the change's intent is not durable")

// hold holds the file a change replaces, if it is large enough to be
// worth linking into history and can be held, and sets meta to link it
// once durable reports the change's intent durable. remove says the change
// removes the file, which nothing then replaces.
func (e *Engine) hold(t *Target, obs *Observation, remove bool, meta *history.Meta, durable func() bool) *atomicfile.Held {
	if !obs.Stat.Exists || remove || len(obs.Data) < LinkMin || t.Dir == nil {
		return nil
	}
	h := t.Dir.Hold(t.Base, obs.Stat.Ino, obs.Data)
	if h == nil {
		return nil
	}
	h.StartSync()
	meta.Link = func(dirfd int, name string) error {
		if !durable() {
			return errIntentNotDurable
		}
		return h.Link(dirfd, name)
	}
	return h
}

// swapLockHeld is swapLock for a change that may hold its file: with
// unhold set, it waits heldLockWait at most with the lease held, then
// gives the lease up (unhold) and waits as swapLock does.
func (e *Engine) swapLockHeld(ctx context.Context, t *Target, obs *Observation, unhold func()) (*filelock.Lock, error) {
	if unhold == nil {
		return e.swapLock(ctx, t, obs)
	}
	sctx, cancel := context.WithTimeout(ctx, heldLockWait)
	l, err := e.swapLock(sctx, t, obs)
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return l, err
	}
	unhold()
	return e.swapLock(ctx, t, obs)
}

// unhold gives up the lease on h before the swap: the object linked from
// it, if any, becomes a copy first, since others may open the file now.
func (e *Engine) unhold(t *Target, obs *Observation, h *atomicfile.Held, linked bool) {
	if linked {
		e.cfg.Hist.Detach(t.Resolved, h.Dev(), h.Ino(), obs.Sum, obs.Sum, obs.Data)
	}
	h.Release()
}

// settleHeld ends the hold on h once the change is over: a linked object
// stays a link only if the file is now history's alone, and is made
// read-only, as every object is; otherwise it becomes a copy.
func (e *Engine) settleHeld(t *Target, obs *Observation, h *atomicfile.Held, linked bool) error {
	if h == nil {
		return nil
	}
	defer h.Close()
	if !linked {
		return nil
	}
	if h.Alone() {
		h.Chmod(0o444)
		return nil
	}
	return e.cfg.Hist.Detach(t.Resolved, h.Dev(), h.Ino(), obs.Sum, obs.Sum, obs.Data)
}
