package editguard

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// has read it in full. Both names are locked (their stripes, then their
// directories, each in a fixed order), and the rename is atomic: after any
// crash the content is
// whole under exactly one of the two names. The source's history records
// the content that left it, the destination's what it displaced (or that
// it did not exist), so restore_file can undo either side; the session's
// baseline follows the file. Moves across file systems are refused, and so
// is a source or destination whose last element is a symbolic link
// (NOT_A_FILE): Move neither renames a link nor follows one at the end of
// either path. The names a move to a new destination creates are checked
// against the workspace's name policy (Options.Names).
func (s *Session) Move(ctx context.Context, src, dst string, opts *MoveOptions) (res *Result, err error) {
	var o MoveOptions
	if opts != nil {
		o = *opts
	}
	m := &moveRun{cs: &changeSet{s: s}, args: moveArgs(src, dst, &o)}
	m.a = newAttempt(s, opMove, src, m.args, o.Precondition)
	defer func() { res, err = m.finish(res, err) }()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := m.resolve(src, dst); err != nil {
		return nil, err
	}
	if err := m.cs.lock(ctx); err != nil {
		return nil, err
	}
	if err := m.check(&o); err != nil {
		return nil, err
	}
	if o.DryRun {
		m.res.DryRun = true
		return m.res, nil
	}
	if err := m.cs.makeParents(ctx, "while the destination's directory was created"); err != nil {
		return nil, err
	}
	preview := func() *Preview {
		return &Preview{Tool: opMove, Path: src + " -> " + dst, Diff: m.res.Diff, Created: m.res.Created}
	}
	if err := m.cs.approve(ctx, m.a, preview, refusal{src, "the move was declined", "ask the user what to do instead"},
		"while the move awaited approval"); err != nil {
		return nil, err
	}
	// What leaves each name goes to history first, durably.
	if err := m.cs.snapshot(opMove); err != nil {
		return nil, err
	}
	if err := m.intents(); err != nil {
		return nil, err
	}
	if err := m.move(); err != nil {
		return nil, err
	}
	m.follow()
	return m.res, nil
}

// moveRun is one move on its way through the protocol.
type moveRun struct {
	cs       *changeSet
	src, dst *txFile
	args     any
	a        *attempt // the source's record
	res      *Result
	// Once the intents are written: the destination's record; and once
	// the file is moved, the source's side, for its record.
	srcRes *Result
	dstRec *attempt
}

// resolve is StepTarget (engine.Step) for both names. Either being a symlink is refused
// before it is resolved, which would follow the link.
func (m *moveRun) resolve(src, dst string) error {
	w := m.cs.s.w
	if err := w.checkNotLink(src); err != nil {
		return err
	}
	if err := w.checkNotLink(dst); err != nil {
		return err
	}
	var err error
	if m.src, err = m.cs.add(src); err != nil {
		return err
	}
	m.a.rec.Path = m.src.t.Resolved
	if m.dst, err = m.cs.add(dst); err != nil {
		if errors.Is(err, errSameFile) {
			return newError(CodeInvalidArgument, src, "source and destination are the same file", "", nil)
		}
		return err
	}
	if m.src.t.Dir == nil {
		return newError(CodeNotFound, src, "file does not exist", "check the path with list_directory", nil)
	}
	return nil
}

// check is StepObserve and StepCheck (engine.Step) for both names (checkMove), and describes the move.
func (m *moveRun) check(o *MoveOptions) error {
	ts, td := m.src.t, m.dst.t
	obsS, obsD, base, err := m.cs.s.checkMove(ts, td, o, m.a)
	if err != nil {
		return err
	}
	m.src.obs, m.dst.obs, m.src.base = obsS, obsD, base
	m.res = &Result{
		Path: td.Path, MovedFrom: ts.Path, SHA256: obsS.Sum, SizeBytes: obsS.Stat.Size, Created: !obsD.Stat.Exists,
	}
	if obsD.Stat.Exists {
		enc := ""
		if base != nil {
			enc = base.Encoding
		}
		m.res.Diff = unifiedDiff(td.Path, textOf(obsD.Data, enc), textOf(obsS.Data, enc), false, false)
		return nil
	}
	warnings, err := m.cs.s.w.checkNames(td.Path, td.Resolved, ts.Resolved)
	m.res.Warnings = append(m.res.Warnings, warnings...)
	return err
}

// intents makes the intents of both names durable before the move: a
// process killed after it and before the outcome records is accounted
// for by the next Open (resolveIntents), as a single change is.
func (m *moveRun) intents() error {
	s, res := m.cs.s, m.res
	res.BackupVersion, res.SourceVersion = m.dst.version, m.src.version
	m.srcRes = &Result{Path: m.src.t.Path, Deleted: true, BackupVersion: m.src.version}
	m.dstRec = newAttempt(s, opMove, m.dst.t.Path, m.args, nil)
	m.dstRec.rec.Path = m.dst.t.Resolved
	m.dstRec.rec.Observed = m.dst.obs.LedgerState()
	m.dstRec.rec.SHA256Before = m.dst.obs.Sum
	m.dstRec.rec.Approval = m.a.rec.Approval
	m.a.intent = s.w.eng.SavedIntent(m.a.rec, "")
	m.dstRec.intent = s.w.eng.SavedIntent(m.dstRec.rec, m.src.obs.Sum)
	if !m.dstRec.intent.Durable() {
		m.srcRes = nil
		return ioError(m.src.t.Path, m.dstRec.intent.Err())
	}
	return nil
}

// move renames the file, verified, and syncs both directories
// (engine.Engine.Move). An error after the rename is a warning.
func (m *moveRun) move() error {
	s, ts, td, res := m.cs.s, m.src.t, m.dst.t, m.res
	ar, kept, err := s.w.eng.Move(ts, td, m.src.obs, m.dst.obs, s.name)
	if err != nil {
		if ar.Strategy == "" {
			m.srcRes = nil
			return s.w.moveError(ts, td, err)
		}
		res.warn("the file was moved, but %v", err)
	}
	res.Strategy, m.srcRes.Strategy = ar.Strategy, ar.Strategy
	if kept != "" {
		res.warn("another program wrote into the destination while it was replaced; the %d bytes it left are kept in history as %s", len(ar.Displaced), kept)
	}
	return nil
}

// follow moves the session's baseline with the file.
func (m *moveRun) follow() {
	s, ts, td, res, obsS := m.cs.s, m.src.t, m.dst.t, m.res, m.src.obs
	if st, err := td.Dir.Lstat(td.Base); err == nil {
		res.MtimeMS = st.MtimeNS / 1e6
	}
	b := baseline{Path: td.Resolved, SHA256: obsS.Sum, Size: obsS.Stat.Size, MtimeMS: res.MtimeMS, FullRead: true, CapturedAt: time.Now()}
	if base := m.src.base; base != nil {
		b.FullRead, b.Encoding = base.FullRead, base.Encoding
	}
	err := s.dropBaseline(ts.Resolved)
	if err == nil {
		err = s.setBaseline(td.Lexical, b)
	}
	if err != nil {
		res.warn("the session could not record the move (%v): read the file before changing it again", err)
	}
}

// finish writes the records, one for each name once its intent is
// written: the source's displaced content and the destination's, each
// with its history version, or the error of a move that stopped after its
// intents, so that neither intent is left without its outcome; then lets
// the locks go.
func (m *moveRun) finish(res *Result, err error) (*Result, error) {
	w := m.cs.s.w
	if err != nil || res == nil || res.DryRun {
		res, err = w.finish(m.a, res, err)
		if m.dstRec != nil && err != nil {
			w.finish(m.dstRec, nil, err)
		}
	} else {
		w.finish(m.a, m.srcRes, nil)
		res, err = w.finish(m.dstRec, res, nil)
		if m.srcRes != nil {
			res.Warnings = append(res.Warnings, m.srcRes.Warnings...)
		}
	}
	m.cs.close()
	if err == nil && !res.DryRun {
		w.afterCommit()
		w.eng.SweepParkedSoon()
	}
	return res, err
}

// checkMove observes both names under their locks and checks them: the
// source against the precondition or the session's baseline, an existing
// destination against Overwrite and the baseline (a full read).
func (s *Session) checkMove(ts, td *target, o *MoveOptions, a *attempt) (obsS, obsD *observation, base *baseline, err error) {
	if obsS, err = s.w.observe(ts); err != nil {
		return nil, nil, nil, err
	}
	a.rec.Observed = obsS.LedgerState()
	a.rec.SHA256Before = obsS.Sum
	if !obsS.Stat.Exists {
		return nil, nil, nil, newError(CodeNotFound, ts.Path, "file does not exist", "check the path with list_directory", nil)
	}
	if !obsS.Stat.Regular() {
		return nil, nil, nil, notAFile(ts.Path, obsS)
	}
	if base, err = s.check(ts, o.Precondition, obsS, false); err != nil {
		return nil, nil, base, err
	}
	if base != nil {
		a.rec.Baseline = baselineState(base, "")
	}
	if obsD, err = s.w.observe(td); err != nil {
		return nil, nil, nil, err
	}
	if !obsD.Stat.Exists {
		return obsS, obsD, base, nil
	}
	if !obsD.Stat.Regular() {
		return nil, nil, nil, notAFile(td.Path, obsD)
	}
	if !o.Overwrite {
		e := stale(td.Path, ReasonCreated, obsD)
		e.Message = "the destination exists"
		e.RecoveryHint = fmt.Sprintf("choose another destination, or read %s in full and move again with overwrite", shortPath(td.Path))
		return nil, nil, nil, e
	}
	if _, err := s.check(td, nil, obsD, true); err != nil {
		return nil, nil, nil, err
	}
	return obsS, obsD, base, nil
}
