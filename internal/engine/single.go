package engine

import (
	"context"
	"errors"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/groupcommit"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// A single file's change from its snapshot to its swap: the steps
// StepSnapshot and StepSwap of Run (run.go, where the steps are numbered):
//
//   - snapshot: the change's intent goes to the ledger, and what it
//     displaces to history. With the intent durable before the swap,
//     every change that reaches the disk is in the ledger, and the
//     outcome's fsync need not come before the reply (outcome.go).
//     Guarantee 4: what is displaced goes to history, durably, before the
//     file changes. The history's writes and fsyncs run while the new
//     content is written and fsynced under its temporary name, and the
//     swap waits for both (ready): neither fsync orders the
//     other, so overlapping them takes nothing from either guarantee.
//     When the intent carries the displaced bytes, the history's index
//     line for them is not fsynced (lazy): the intent's fsync makes the
//     bytes durable, and the line is made durable later (histsync.go). A
//     large file being replaced is linked into history instead of
//     copied, when it can be held (held.go).
//   - swap: the new content under its temporary name, the swap and the
//     directory's fsync (commit, straight-line over atomicfile.Staged).
//     Once the new bytes are in place the change is committed, and what
//     fails after is reported alongside, not as the change's error.
//
// finish, on every path, waits for the history's save and settles a held
// file, so that no return leaves either running.

// single is one file's change between its snapshot and its outcome.
type single struct {
	e      *Engine
	t      *Target
	obs    *Observation
	ch     *Change
	intent *Intent
	lazy   bool // history saves the displaced bytes lazily

	// The history's save of the displaced bytes, which runs while the new
	// content is written, and the file held for it.
	saved   chan error
	waited  bool
	version history.Version
	histErr error // a *PathError, History set
	held    *atomicfile.Held
	linked  bool
	settled bool
}

// snapshot is StepSnapshot for the change ch of the file observed as obs at t,
// whose intent rec describes, leaving content whose SHA-256 is after; the
// history's version is saved under op and session. quiet, asked once the
// intent is written, says whether no batch waits at the gate to share the
// intent's fsync, which then starts at once. The caller holds the file's
// lock.
func (e *Engine) snapshot(t *Target, obs *Observation, ch *Change, rec ledger.Record, after, op, session string, quiet func() bool) *single {
	s := &single{e: e, t: t, obs: obs, ch: ch}
	s.intent, s.lazy = e.writeIntent(rec, after, obs)
	if quiet() {
		// No batch to share its fsync with: it starts now, alongside the
		// writing of the new content.
		s.intent.begin()
	}
	meta := history.Meta{Op: op, Session: session, Intent: s.intent.Seq, Lazy: s.lazy}
	s.held = e.hold(t, obs, ch.Remove, &meta, s.intent.Durable)
	ch.held = s.held
	meta.Linked = func() { s.linked = true }
	s.saved = make(chan error, 1)
	go func() {
		v, err := e.cfg.Hist.Save(t.Resolved, obs.Data, !obs.Stat.Exists, obs.Sum, meta)
		s.version = v
		s.saved <- err
	}()
	return s
}

// historyDurable waits for the history's save, once.
func (s *single) historyDurable() error {
	if !s.waited {
		err := <-s.saved
		s.waited = true
		if err != nil {
			s.histErr = &PathError{Path: s.t.Path, History: true, Err: err}
		}
	}
	return s.histErr
}

// settle makes a history object linked to the held file a copy unless no
// other name can change it (held.go), once.
func (s *single) settle() error {
	if s.settled {
		return nil
	}
	s.settled = true
	return s.e.settleHeld(s.t, s.obs, s.held, s.linked)
}

// finish waits for the history's save and settles a held file, if the
// change stopped before swap did.
func (s *single) finish() {
	if s == nil {
		return
	}
	s.historyDurable()
	s.settle()
}

// ready is commit's step before the commit lock and the swap: what the
// change displaces is durable in history, or carried by a durable intent.
// For a removal, which has no new content to fsync, it is where the change
// arrives at the gate (Change.arrive), starting the intent's fsync; a
// change with new content arrived before that content's fsync.
func (s *single) ready() error {
	s.ch.arrive() // a removal has no new content to fsync
	if err := s.historyDurable(); err != nil {
		return err
	}
	if !s.intent.Durable() && s.lazy {
		// The intent is not durable, so neither are the bytes it
		// carries: the line must be.
		if err := s.e.cfg.Hist.SyncIndex(s.t.Resolved); err != nil {
			s.histErr = &PathError{Path: s.t.Path, History: true, Err: err}
			return s.histErr
		}
	}
	return nil
}

// Swapped is what a swap did besides its error.
type Swapped struct {
	atomicfile.Result
	// Version is the history version that keeps what the change
	// displaced, or "" if it could not be made durable.
	Version string
	// SettleErr is the failure to settle a held file: history's version
	// may change with the file.
	SettleErr error
	// Leftover is the history version that keeps what another program
	// wrote into the new file while it was briefly in place, before the
	// swap was undone (atomicfile.RaceError), and Kept the one that keeps
	// bytes another program wrote into the displaced file.
	Leftover, Kept string
}

// swap is StepSwap, passing the gate with pass. An error with a
// Strategy in the result came after the new bytes were put in place: the
// change is committed. A failure before is a *PathError (Sweep or History
// set), or commit's.
func (s *single) swap(ctx context.Context, session string, pass *groupcommit.Pass) (Swapped, error) {
	e, t, ch := s.e, s.t, s.ch
	var sw Swapped
	tmp, err := e.sweepTemp(t, session)
	if err != nil {
		return sw, &PathError{Path: t.Path, Sweep: true, Err: err}
	}
	ch.pass = pass
	ch.arrive = func() {
		pass.Arrive()
		s.intent.begin()
	}
	if s.held != nil {
		ch.unhold = func() { e.unhold(t, s.obs, s.held, s.linked) }
	}
	sw.Result, err = e.commit(ctx, t, s.obs, ch, tmp, s.ready, false)
	if herr := s.historyDurable(); herr == nil {
		sw.Version = s.version.ID
	} else if err == nil {
		// commit calls ready before it changes anything.
		err = herr
	}
	if serr := s.settle(); serr != nil && (err == nil || sw.Strategy != "") {
		sw.SettleErr = serr
	}
	var re *atomicfile.RaceError
	if errors.As(err, &re) && len(re.Leftover) > 0 {
		sw.Leftover = e.keepDisplaced(t, session, re.Leftover)
	}
	if (err == nil || sw.Strategy != "") && len(sw.Displaced) > 0 {
		sw.Kept = e.keepDisplaced(t, session, sw.Displaced)
	}
	return sw, err
}
