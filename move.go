package editguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
)

// MoveOptions control Move.
type MoveOptions struct {
	// Overwrite lets the move replace an existing destination, which must
	// then have been read in full by the session, like a file write_file
	// replaces.
	Overwrite bool `json:"overwrite,omitempty"`
	// Precondition states what the source must be; without one the
	// session's baseline of the source applies (a partial read is enough:
	// a move discards nothing of the source).
	Precondition *Precondition `json:"precondition,omitempty"`
	DryRun       bool          `json:"dry_run,omitempty"`
}

// Move renames the file src to dst, guarded: the session must have read the
// source (or give a precondition) and it must not have changed since; an
// existing destination is refused unless Overwrite is set and the session
// has read it in full. Both names are locked (their directories, in a
// fixed order), and the rename is atomic: after any crash the content is
// whole under exactly one of the two names. The source's history records
// the content that left it, the destination's what it displaced (or that
// it did not exist), so restore_file can undo either side; the session's
// baseline follows the file. Moves across file systems are refused, and so
// is a source or destination whose last element is a symbolic link
// (NOT_A_FILE): Move neither renames a link nor follows one at the end of
// either path.
func (s *Session) Move(ctx context.Context, src, dst string, opts *MoveOptions) (res *Result, err error) {
	var o MoveOptions
	if opts != nil {
		o = *opts
	}
	args := moveArgs(src, dst, &o)
	a := newAttempt(s, "move_file", src, args, o.Precondition)
	var (
		ts, td *target
		locks  []*filelock.Lock
		srcRes *Result // the source's side, for its ledger record
		dstRec *attempt
	)
	unlock := func() {
		for i := len(locks) - 1; i >= 0; i-- {
			locks[i].Unlock()
		}
		locks = nil
	}
	defer func() {
		if err != nil || res == nil || res.DryRun {
			res, err = s.w.finish(a, res, err)
		} else {
			// One record for each name: the source's displaced content
			// and the destination's, each with its history version.
			s.w.finish(a, srcRes, nil)
			res, err = s.w.finish(dstRec, res, nil)
			if srcRes != nil {
				res.Warnings = append(res.Warnings, srcRes.Warnings...)
			}
		}
		unlock()
		for _, t := range []*target{ts, td} {
			if t != nil {
				t.close()
			}
		}
		if err == nil && !res.DryRun {
			s.w.afterCommit()
			s.w.sweepParkedSoon()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Either name being a symlink is refused before it is resolved, which
	// would follow the link.
	if err := s.w.checkNotLink(src); err != nil {
		return nil, err
	}
	if err := s.w.checkNotLink(dst); err != nil {
		return nil, err
	}
	if ts, err = s.w.openTarget(src); err != nil {
		return nil, err
	}
	a.rec.Path = ts.resolved
	if td, err = s.w.openTarget(dst); err != nil {
		return nil, err
	}
	if ts.resolved == td.resolved {
		return nil, newError(CodeInvalidArgument, src, "source and destination are the same file", "", nil)
	}
	for _, t := range []*target{ts, td} {
		if err := s.w.checkChangeable(t); err != nil {
			return nil, err
		}
	}
	if ts.dir == nil {
		return nil, newError(CodeNotFound, src, "file does not exist", "check the path with list_directory", nil)
	}
	if locks, err = s.w.lockPair(ctx, ts, td); err != nil {
		return nil, err
	}
	obsS, obsD, base, err := s.checkMove(ts, td, &o, a)
	if err != nil {
		return nil, err
	}
	res = &Result{
		Path: dst, MovedFrom: src, SHA256: obsS.sum, SizeBytes: obsS.stat.Size, Created: !obsD.stat.Exists,
	}
	if obsD.stat.Exists {
		enc := ""
		if base != nil {
			enc = base.Encoding
		}
		res.Diff = unifiedDiff(dst, textOf(obsD.data, enc), textOf(obsS.data, enc), false, false)
	}
	if o.DryRun {
		res.DryRun = true
		return res, nil
	}
	relock := func(when string) error {
		if locks, err = s.w.lockPair(ctx, ts, td); err != nil {
			return err
		}
		if err := s.w.unchanged(ts, obsS, when); err != nil {
			return err
		}
		return s.w.unchanged(td, obsD, when)
	}
	if td.dir == nil {
		// The destination's missing directories are made now, durably,
		// and its directory locked too.
		unlock()
		if err := s.w.makeParent(td); err != nil {
			return nil, err
		}
		if err := relock("while the destination's directory was created"); err != nil {
			return nil, err
		}
	}
	preview := func() *Preview {
		return &Preview{Tool: "move_file", Path: src + " -> " + dst, Diff: res.Diff, Created: res.Created}
	}
	if err := s.approve(ctx, a, preview, refusal{src, "the move was declined", "ask the user what to do instead"},
		unlock, func() error { return relock("while the move awaited approval") }); err != nil {
		return nil, err
	}
	// What leaves each name goes to history first, durably.
	meta := history.Meta{Op: "move_file", Session: s.name}
	vs, err := s.w.hist.Save(ts.resolved, obsS.data, false, obsS.sum, meta)
	if err != nil {
		return nil, historyFailed(src, err)
	}
	vd, err := s.w.hist.Save(td.resolved, obsD.data, !obsD.stat.Exists, obsD.sum, meta)
	if err != nil {
		return nil, historyFailed(dst, err)
	}
	res.BackupVersion, res.SourceVersion = vd.ID, vs.ID
	srcRes = &Result{Path: src, Deleted: true, BackupVersion: vs.ID}
	dstRec = newAttempt(s, "move_file", dst, args, nil)
	dstRec.rec.Path = td.resolved
	dstRec.rec.Observed = ledgerState(obsD.state())
	dstRec.rec.SHA256Before = obsD.sum
	dstRec.rec.Approval = a.rec.Approval

	// The intents of both names, durable before the move: a process
	// killed after it and before the outcome records is accounted for
	// by the next Open (resolveIntents), as a single change is.
	s.w.savedIntent(a, "")
	s.w.savedIntent(dstRec, obsS.sum)
	if !dstRec.intent.durable() {
		ierr := dstRec.intent.err
		srcRes, dstRec = nil, nil
		return nil, ioError(src, ierr)
	}
	want := ""
	if obsD.stat.Exists {
		want = obsD.sum
	}
	ar, err := ts.dir.Move(ts.base, obsS.sum, td.dir, td.base, want, atomicfile.Options{Park: s.w.parks.at})
	if err != nil {
		if ar.Strategy == "" {
			srcRes, dstRec = nil, nil
			return nil, s.w.moveError(ts, td, err)
		}
		res.warn("the file was moved, but %v", err)
	}
	res.Strategy, srcRes.Strategy = ar.Strategy, ar.Strategy
	if len(ar.Displaced) > 0 {
		v := s.w.keepDisplaced(td, s.name, ar.Displaced)
		res.warn("another program wrote into the destination while it was replaced; the %d bytes it left are kept in history as %s", len(ar.Displaced), v)
	}
	// The session's baseline follows the file.
	if st, err := td.dir.Lstat(td.base); err == nil {
		res.MtimeMS = st.MtimeNS / 1e6
	}
	b := Baseline{Path: td.resolved, SHA256: obsS.sum, Size: obsS.stat.Size, MtimeMS: res.MtimeMS, FullRead: true, CapturedAt: time.Now()}
	if base != nil {
		b.FullRead, b.Encoding = base.FullRead, base.Encoding
	}
	err = s.dropBaseline(ts.resolved)
	if err == nil {
		err = s.setBaseline(td.lexical, b)
	}
	if err != nil {
		res.warn("the session could not record the move (%v): read the file before changing it again", err)
	}
	return res, nil
}

// checkMove observes both names under their locks and checks them: the
// source against the precondition or the session's baseline, an existing
// destination against Overwrite and the baseline (a full read).
func (s *Session) checkMove(ts, td *target, o *MoveOptions, a *attempt) (obsS, obsD *observation, base *Baseline, err error) {
	if obsS, err = s.w.observe(ts); err != nil {
		return nil, nil, nil, err
	}
	a.rec.Observed = ledgerState(obsS.state())
	a.rec.SHA256Before = obsS.sum
	if !obsS.stat.Exists {
		return nil, nil, nil, newError(CodeNotFound, ts.path, "file does not exist", "check the path with list_directory", nil)
	}
	if !obsS.stat.Regular() {
		return nil, nil, nil, notAFile(ts.path, obsS)
	}
	if base, err = s.check(ts, o.Precondition, obsS, false); err != nil {
		return nil, nil, base, err
	}
	if base != nil {
		a.rec.Baseline = ledgerState(FileState{Exists: true, SHA256: base.SHA256, Size: base.Size, MtimeMS: base.MtimeMS})
	}
	if obsD, err = s.w.observe(td); err != nil {
		return nil, nil, nil, err
	}
	if !obsD.stat.Exists {
		return obsS, obsD, base, nil
	}
	if !obsD.stat.Regular() {
		return nil, nil, nil, notAFile(td.path, obsD)
	}
	if !o.Overwrite {
		e := stale(td.path, ReasonCreated, obsD)
		e.Message = "the destination exists"
		e.RecoveryHint = fmt.Sprintf("choose another destination, or read %s in full and move again with overwrite", shortPath(td.path))
		return nil, nil, nil, e
	}
	if _, err := s.check(td, nil, obsD, true); err != nil {
		return nil, nil, nil, err
	}
	return obsS, obsD, base, nil
}

// lockPair takes the commit locks of both targets' directories (see
// lockTargets): one lock when they are the same directory, else both in
// (device, inode) order, so that two moves in opposite directions cannot
// deadlock.
func (w *Workspace) lockPair(ctx context.Context, a, b *target) ([]*filelock.Lock, error) {
	return w.lockTargets(ctx, []*txFile{{t: a}, {t: b}})
}

// moveError maps a failed atomicfile.Move, which changed nothing.
func (w *Workspace) moveError(ts, td *target, err error) error {
	switch {
	case errors.Is(err, atomicfile.ErrExist):
		now, _ := w.observe(td)
		if now == nil {
			now = &observation{}
		}
		e := stale(td.path, ReasonCreated, now)
		e.Message = "the destination was created by another program during the move; nothing was moved"
		return e
	case errors.Is(err, atomicfile.ErrRaced):
		now, _ := w.observe(ts)
		if now == nil {
			now = &observation{}
		}
		e := stale(ts.path, ReasonModified, now)
		e.Message = "a file was changed by another program during the move; nothing was moved"
		e.Err = err
		return e
	case errors.Is(err, atomicfile.ErrCrossDevice):
		return newError(CodeIO, ts.path, "the source and the destination are on different file systems, and a move between them cannot be atomic",
			"copy the file with write_file and delete the source with delete_file", err)
	}
	return ioError(ts.path, err)
}

// historyFailed is the error of a change refused because saving what it
// would displace to history failed; nothing was changed.
func historyFailed(p string, err error) *Error {
	e := ioError(p, err)
	e.Message = "saving the current content to history failed; nothing was changed: " + e.Message
	e.Details["step"] = "history"
	return e
}
