package editguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
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
func (s *Session) Move(ctx context.Context, src, dst string, opts *MoveOptions) (*Result, error) {
	var o MoveOptions
	if opts != nil {
		o = *opts
	}
	m := &moveRun{ctx: ctx, o: o, srcPath: src, dstPath: dst, args: moveArgs(src, dst, &o),
		changeSet: &changeSet{s: s, whenPrepare: "while the destination's directory was created", whenApprove: "while the move awaited approval"}}
	m.a = newAttempt(s, opMove, src, m.args, o.Precondition)
	err := s.w.eng.RunMove(ctx, m, opMove, s.name)
	return m.out, err
}

// moveRun is one move on its way through the engine (engine.Engine.RunMove),
// and the session's decisions at each step: its engine.MoveDecider.
type moveRun struct {
	*changeSet
	ctx              context.Context
	o                MoveOptions
	srcPath, dstPath string
	src, dst         *txFile
	args             any
	a                *attempt // the source's record
	res              *Result
	// Once the intents are written: the destination's record; and once
	// the file is moved, the source's side, for its record.
	srcRes *Result
	dstRec *attempt
	out    *Result // what Move returns
}

// Targets is StepTarget (engine.Step) for both names. Either being a
// symlink is refused before it is resolved, which would follow the link.
func (m *moveRun) Targets() ([]*target, error) {
	if err := m.ctx.Err(); err != nil {
		return nil, err
	}
	err := m.resolve()
	return m.targets(), err
}

func (m *moveRun) resolve() error {
	src, dst := m.srcPath, m.dstPath
	w := m.s.w
	if err := w.checkNotLink(src); err != nil {
		return err
	}
	if err := w.checkNotLink(dst); err != nil {
		return err
	}
	var err error
	if m.src, err = m.add(src); err != nil {
		return err
	}
	m.a.rec.Path = m.src.t.Resolved
	if m.dst, err = m.add(dst); err != nil {
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

// Check is StepObserve and StepCheck (engine.Step) for both names
// (checkMove), and describes the move; a dry run ends here.
func (m *moveRun) Check() ([]*observation, bool, error) {
	ts, td := m.src.t, m.dst.t
	obsS, obsD, base, err := m.s.checkMove(ts, td, &m.o, m.a)
	if err != nil {
		return nil, false, err
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
	} else {
		warnings, err := m.s.w.checkNames(td.Path, td.Resolved, ts.Resolved)
		m.res.Warnings = append(m.res.Warnings, warnings...)
		if err != nil {
			return nil, false, err
		}
	}
	m.res.DryRun = m.o.DryRun
	return m.observations(), m.o.DryRun, nil
}

// Approve is StepApprove: the session's approver, with the locks let go
// (unlock, relock: the engine's).
func (m *moveRun) Approve(ctx context.Context, unlock func(), relock func() error) error {
	preview := func() *Preview {
		return &Preview{Tool: opMove, Path: m.srcPath + " -> " + m.dstPath, Diff: m.res.Diff, Created: m.res.Created}
	}
	return m.s.approve(ctx, m.a, preview, refusal{m.srcPath, "the move was declined", "ask the user what to do instead"}, unlock, relock)
}

// Prepare: a move asks for no room (it writes no new content).
func (m *moveRun) Prepare() error { return nil }

// Intents makes the intents of both names durable before the move: a
// process killed after it and before the outcome records is accounted
// for by the next Open (resolveIntents), as a single change is.
func (m *moveRun) Intents() error {
	s, res := m.s, m.res
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

// Moved takes the rename's result (StepSwap): an error after the rename
// is a warning.
func (m *moveRun) Moved(ar atomicfile.Result, kept string, err error) error {
	ts, td, res := m.src.t, m.dst.t, m.res
	if err != nil {
		if ar.Strategy == "" {
			m.srcRes = nil
			return m.s.w.moveError(ts, td, err)
		}
		res.warn("the file was moved, but %v", err)
	}
	res.Strategy, m.srcRes.Strategy = ar.Strategy, ar.Strategy
	if kept != "" {
		res.warn("another program wrote into the destination while it was replaced; the %d bytes it left are kept in history as %s", len(ar.Displaced), kept)
	}
	return nil
}

// Follow is StepFollow: the session's baseline moves with the file.
func (m *moveRun) Follow() {
	s, ts, td, res, obsS := m.s, m.src.t, m.dst.t, m.res, m.src.obs
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

// Outcome is StepRecord: the records, one for each name once its intent is
// written: the source's displaced content and the destination's, each
// with its history version, or the error of a move that stopped after its
// intents, so that neither intent is left without its outcome.
func (m *moveRun) Outcome(err error) error {
	w := m.s.w
	var res *Result
	if err == nil {
		res = m.res
	}
	if err != nil || res.DryRun {
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
	m.out = res
	return err
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
