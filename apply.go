package editguard

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/patch"
)

// PatchOptions control ApplyPatch.
type PatchOptions struct {
	DryRun bool
	// Preconditions, by path as the patch names it, replace the
	// session's baseline for those files.
	Preconditions map[string]*Precondition
	// NoMerge refuses with STALE_FILE an update of a file changed since
	// the session's read, even where its hunks could merge over that
	// change (see planMerge).
	NoMerge bool
}

// PatchResult is what ApplyPatch did, file by file.
type PatchResult struct {
	TxID   string      `json:"tx"`
	DryRun bool        `json:"dry_run,omitempty"`
	Files  []PatchFile `json:"files"`
	// Warnings say what failed after the transaction committed, and
	// which names it created are not portable (Options.Names).
	Warnings []string `json:"warnings,omitempty"`
}

// PatchFile is one file of a patch.
type PatchFile struct {
	Path          string   `json:"path"`
	Op            string   `json:"op"` // add, delete, update, move
	MovedTo       string   `json:"moved_to,omitempty"`
	SHA256        string   `json:"sha256,omitempty"` // the new content's
	SizeBytes     int64    `json:"size_bytes,omitempty"`
	BackupVersion string   `json:"backup_version,omitempty"` // history version of what the file held
	Matched       []string `json:"matched,omitempty"`        // per hunk: exact, trailing_whitespace, quotes, line_numbers
	Diff          string   `json:"diff,omitempty"`
	// Merged says the file had changed since the session's read and the
	// hunks were applied over that change, which ExternalDiff shows (from
	// the read to the file as it was found).
	Merged       bool   `json:"merged,omitempty"`
	ExternalDiff string `json:"external_diff,omitempty"`
}

// txFile is one name a transaction changes: a file updated, added or
// deleted, or one side of a move (the source deleted, the destination
// added).
type txFile struct {
	t       *target
	obs     *observation
	base    *baseline
	data    []byte // the new content; nil with remove
	sum     string
	remove  bool
	enc     string
	version string        // history version of the displaced content
	merged  bool          // the hunks were merged over a change since the read
	pre     *Precondition // the caller's, for this file; nil for the baseline
	seen    []byte        // the session's read a merge was decided against
	// seenVersion is the history version holding the session's read a
	// merge was decided against.
	seenVersion string
	// externalDiff is that change, from the read to the file as found.
	externalDiff string
	mtimeMS      int64 // of the new file, once committed
	out          int   // index in the result's Files
}

// ApplyPatch applies a multi-file patch (Codex's apply_patch grammar or a
// unified diff) entirely or not at all, even across a crash.
//
// Every file is checked before any is written, under the locks of all the
// files (their stripes, ascending) and then of all their directories, taken
// in (device, inode) order: each existing file the
// patch changes needs the session's baseline (a partial read is enough to
// update or move it, a delete needs a full one) or a precondition; adding a
// file, or moving one, onto an existing path is refused; every hunk must
// match exactly one place; the names that added and moved files create are
// checked against the workspace's name policy (Options.Names). Any refusal
// changes nothing.
//
// Then every displaced content goes to history, a journal of the
// transaction is made durable in .editguard/tx/, each file is replaced
// (exchange and verify, as a single change), the transaction's ledger
// records are made durable (one per name), and the journal is removed. If
// the process dies before the first record is written, the next Open of the
// workspace rolls every file back to what it held; if it dies after, the
// next Open completes the records. If a step fails, this call rolls back at
// once. A reader that takes no lock may see
// some files changed and others not while the transaction runs.
func (s *Session) ApplyPatch(ctx context.Context, text string, opts *PatchOptions) (*PatchResult, error) {
	var o PatchOptions
	if opts != nil {
		o = *opts
	}
	ops, perr := patch.Parse(text)
	a := newAttempt(s, opApplyPatch, "", patchArgs(text, &o), nil)
	a.text = &text // kept with a refusal or a commit, not a dry run's result
	r := &txRun{a: a, op: opApplyPatch, space: true,
		changeSet: &changeSet{s: s, whenPrepare: "while the new files' directories were made", whenApprove: "while the patch awaited approval"},
		refusal:   refusal{"", "the patch was declined", "ask the user what to change instead"}}
	r.resolve = func() error {
		if perr != nil {
			var se *patch.SyntaxError
			e := newError(CodeInvalidArgument, "", "the patch does not parse: "+perr.Error(), "fix the patch and send it again", perr)
			if errors.As(perr, &se) && se.Line > 0 {
				e.Details["line"] = se.Line
			}
			return e
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.res = &PatchResult{TxID: strings.ToLower(rand.Text()[:12]), DryRun: o.DryRun}
		return s.resolvePatch(r.changeSet, ops, r.res)
	}
	r.plan = func() error {
		if err := s.planPatch(ops, r.files, r.res, &o); err != nil {
			return err
		}
		return s.checkPatchNames(r.files, r.res)
	}
	r.prepare = func() error {
		if err := s.w.ensureTxSpace(r.files); err != nil {
			return err
		}
		return s.keepPatchContents(a, r.files)
	}
	err := s.w.eng.RunTx(ctx, r, opApplyPatch, opPatchUndone, s.name)
	return r.out, err
}

// keepPatchContents keeps in history what the records of a patch about to
// be committed name beside the displaced contents: the patch's text, and
// the session's reads that merged files were decided against.
func (s *Session) keepPatchContents(a *attempt, files []*txFile) error {
	if err := s.w.keepText(a); err != nil {
		return historyFailed("", err)
	}
	for _, f := range files {
		if f.seen == nil {
			continue
		}
		v, err := s.w.keepContent(f.t.Resolved, f.seen, f.base.SHA256, opMergeBase, s.name)
		if err != nil {
			return historyFailed(f.t.Path, err)
		}
		f.seenVersion = v.ID
	}
	return nil
}

// patchArgs are the arguments a patch's records hold: the text's hash and
// size (the text itself is kept in history: keepText), and the options
// that change the decision.
func patchArgs(text string, o *PatchOptions) map[string]any {
	args := map[string]any{"patch_sha256": sha256String(text), "patch_bytes": len(text), "dry_run": o.DryRun}
	if o.NoMerge {
		args["no_merge"] = true
	}
	return args
}

// preview shows the files of a patch or an undo to the approver.
func (r *PatchResult) preview(tool string) func() *Preview {
	return func() *Preview {
		var paths, diffs []string
		for _, pf := range r.Files {
			paths = append(paths, pf.Path)
			diffs = append(diffs, pf.Diff)
		}
		return &Preview{Tool: tool, Path: strings.Join(paths, ", "), Diff: strings.Join(diffs, "")}
	}
}

// resolvePatch is StepTarget (engine.Step) for every name the patch acts on (a move is two
// names), in the patch's order, with one PatchFile per operation.
func (s *Session) resolvePatch(cs *changeSet, ops []patch.FileOp, res *PatchResult) error {
	add := func(p string, out int) (*txFile, error) {
		f, err := cs.add(p)
		if errors.Is(err, errSameFile) {
			return nil, newError(CodeInvalidArgument, p, "the patch changes this file twice (under two names)", "", nil)
		}
		if err != nil {
			return nil, err
		}
		f.out = out
		return f, nil
	}
	for _, op := range ops {
		pf := PatchFile{Path: op.Path, Op: op.Kind.String()}
		// A symlink is a name: deleting or moving it must not act on
		// the file it points to.
		if op.Kind == patch.Delete || op.MoveTo != "" {
			if err := s.w.checkNotLink(op.Path); err != nil {
				return err
			}
		}
		if op.MoveTo != "" {
			if err := s.w.checkNotLink(op.MoveTo); err != nil {
				return err
			}
		}
		f, err := add(op.Path, len(res.Files))
		if err != nil {
			return err
		}
		f.remove = op.Kind == patch.Delete || op.MoveTo != ""
		if op.MoveTo != "" {
			pf.Op, pf.MovedTo = "move", op.MoveTo
			if _, err := add(op.MoveTo, len(res.Files)); err != nil {
				return err
			}
		}
		res.Files = append(res.Files, pf)
	}
	return nil
}

// txRun is a patch or an undo on its way through the engine
// (engine.Engine.RunTx), and the session's decisions at each step: its
// engine.TxDecider. resolve, plan and prepare are what a patch and an
// undo do differently at StepTarget, StepCheck and StepPrepare.
type txRun struct {
	*changeSet
	a                      *attempt
	op                     string
	resolve, plan, prepare func() error
	refusal                refusal
	// space makes a failure to write the files say how much room the
	// transaction needs (withSpace): a patch's, whose room was checked.
	space bool
	res   *PatchResult
	out   *PatchResult // what the call returns
}

// Targets is StepTarget (engine.Step) for every name.
func (r *txRun) Targets() ([]*target, error) {
	err := r.resolve()
	return r.targets(), err
}

// Check is StepObserve, StepCheck and StepBuild for every name (plan); a
// dry run ends here.
func (r *txRun) Check() ([]*observation, bool, error) {
	if err := r.plan(); err != nil {
		return nil, false, err
	}
	return r.observations(), r.res.DryRun, nil
}

// Approve is StepApprove: the session's approver, with the locks let go
// (unlock, relock: the engine's).
func (r *txRun) Approve(ctx context.Context, unlock func(), relock func() error) error {
	return r.s.approve(ctx, r.a, r.res.preview(r.op), r.refusal, unlock, relock)
}

// Prepare is the session's part of StepPrepare: a patch's room on the file
// system and the contents its records name; nothing for an undo.
func (r *txRun) Prepare() error {
	if r.prepare == nil {
		return nil
	}
	return r.prepare()
}

// Fail is changeSet.Fail, with a patch's room on the file system said
// when what failed is saving to history (withSpace).
func (r *txRun) Fail(step engine.Step, i int, err error) error {
	err = r.changeSet.Fail(step, i, err)
	if step == engine.StepSnapshot {
		err = r.withSpace(err)
	}
	return err
}

// withSpace adds to err, the error of a transaction that wrote nothing,
// the room its files need, for a patch.
func (r *txRun) withSpace(err error) error {
	if !r.space || len(r.files) == 0 {
		return err
	}
	newSize, oldSize := txNeeds(r.files)
	return r.s.w.withSpace(r.files[0].t, newSize, oldSize, err)
}

// Changes is what the engine's transaction writes (StepSnapshot): the
// journal and each name's new content.
func (r *txRun) Changes() (*engine.Journal, []*engine.Change) {
	chs := make([]*engine.Change, len(r.files))
	for i, f := range r.files {
		if r.res.Files[f.out].BackupVersion == "" {
			r.res.Files[f.out].BackupVersion = f.version
		}
		chs[i] = &engine.Change{Data: f.data, Remove: f.remove}
	}
	return journalFor(r.res.TxID, r.op, r.s.name, r.files), chs
}

// Swapped takes the result of the engine's transaction (StepSwap): a
// failure before or at a swap is the caller's error (commitTxError), and
// changed nothing or was rolled back; one after the swaps is a warning.
func (r *txRun) Swapped(settled []error, mtimesMS []int64, err error) error {
	if err != nil {
		return r.withSpace(r.s.w.commitTxError(r.files, err))
	}
	r.res.Warnings = append(r.res.Warnings, settledWarnings(settled)...)
	for i, f := range r.files {
		if m := mtimesMS[i]; m != 0 {
			f.mtimeMS = m
		}
	}
	return nil
}

// Commit is the commit point: the records, durable before the journal
// goes, so that a transaction without its journal has its records. A
// process killed between the two is rolled forward at the next Open.
func (r *txRun) Commit() bool { return r.s.w.txRecords(r.a, r.files, r.res) }

// Follow is StepFollow: the baselines follow the files. A record that
// failed left the journal: the next Open writes the missing records if
// one was written (rollForward), else puts every file back, so that no
// change is left without its record.
func (r *txRun) Follow(recorded bool, removeErr error) {
	res := r.res
	if !recorded {
		res.Warnings = append(res.Warnings, "the files are changed, but not every ledger record of the transaction was written: its journal is kept, and the next open of the workspace finishes it (it writes the missing records, or, if none was written, puts the files back as they were)")
	} else if removeErr != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the files are changed and recorded, but removing the transaction's journal failed (%v): the next open of the workspace finishes it", removeErr))
	}
	r.s.followTx(r.files, res)
}

// Outcome is StepRecord: the record of a refused or dry-run patch or undo
// (finishPatch); a committed one has its records already (Commit).
func (r *txRun) Outcome(err error) error {
	res := r.res
	if err != nil {
		res = nil
	}
	r.out, err = r.s.w.finishPatch(r.a, r.files, res, err)
	return err
}

// followTx moves the session's baselines with a committed transaction's
// files.
func (s *Session) followTx(files []*txFile, res *PatchResult) {
	for _, f := range files {
		var err error
		if f.remove {
			err = s.dropBaseline(f.t.Resolved)
		} else {
			// After a merge the session saw the other change only as a
			// diff: its read is partial, as after edit_file's merge.
			err = s.setBaseline(f.t.Lexical, baseline{Path: f.t.Resolved, SHA256: f.sum, Size: int64(len(f.data)),
				MtimeMS: f.mtimeMS, FullRead: !f.merged, CapturedAt: time.Now(), Encoding: f.enc})
			if err == nil {
				s.remember(f.sum, f.data)
			}
		}
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the session could not record %s as read (%v): read it before changing it again", f.t.Path, err))
		}
	}
}

// planPatch observes and checks every file under the locks and computes
// the new contents.
func (s *Session) planPatch(ops []patch.FileOp, files []*txFile, res *PatchResult, o *PatchOptions) error {
	fi := 0
	for _, op := range ops {
		f := files[fi]
		fi++
		obs, err := s.w.observe(f.t)
		if err != nil {
			return err
		}
		f.obs = obs
		pf := &res.Files[f.out]
		if op.Kind == patch.Add {
			if err := planAdd(f, op, pf); err != nil {
				return err
			}
			continue
		}
		if !obs.Stat.Exists {
			return newError(CodeNotFound, f.t.Path, "the patch changes this file, but it does not exist", "check the path", nil)
		}
		if !obs.Stat.Regular() {
			return notAFile(f.t.Path, obs)
		}
		f.pre = o.Preconditions[op.Path]
		base, err := s.check(f.t, f.pre, obs, op.Kind == patch.Delete)
		f.base = base
		seen, staleErr, err := s.mergeableStale(op, base, obs, o, err)
		if err != nil {
			return err
		}
		if base != nil {
			f.enc = base.Encoding
		}
		doc, err := decode(f.t.Path, obs.Data, f.enc)
		if err != nil {
			return err
		}
		if op.Kind == patch.Delete {
			pf.Diff = unifiedDiff(f.t.Path, doc.Text, "", false, true)
			continue
		}
		newText, err := patchedText(f, op, doc.Text, seen, staleErr, pf)
		if err != nil {
			return err
		}
		data, err := doc.Encode(newText, "")
		if err != nil {
			return codecError(f.t.Path, err)
		}
		if op.MoveTo == "" {
			if string(data) == string(obs.Data) {
				return newError(CodeNoChange, f.t.Path, "the patch leaves this file as it is", "", nil)
			}
			f.data, f.sum = data, sha256Hex(data)
			pf.SHA256, pf.SizeBytes = f.sum, int64(len(data))
			pf.Diff = unifiedDiff(f.t.Path, doc.Text, newText, false, false)
			continue
		}
		// A move: the source goes, the destination gets the content.
		dst := files[fi]
		fi++
		if dst.obs, err = s.w.observe(dst.t); err != nil {
			return err
		}
		if dst.obs.Stat.Exists {
			e := stale(dst.t.Path, ReasonCreated, dst.obs)
			e.Message = "the patch moves a file here, but this path exists"
			return e
		}
		dst.data, dst.sum, dst.enc = data, sha256Hex(data), f.enc
		pf.SHA256, pf.SizeBytes = dst.sum, int64(len(data))
		pf.Diff = udiffMove(f.t.Path, dst.t.Path, doc.Text, newText)
	}
	return nil
}

// checkPatchNames applies the workspace's name policy to the names that
// the files a patch adds (or moves to) create: a refusal, or warnings in
// res.
func (s *Session) checkPatchNames(files []*txFile, res *PatchResult) error {
	var gone, created []string
	for _, f := range files {
		if f.remove {
			gone = append(gone, f.t.Resolved)
		}
	}
	for _, f := range files {
		if f.remove || f.obs == nil || f.obs.Stat.Exists {
			continue
		}
		created = append(created, f.t.Resolved)
		warnings, err := s.w.checkNames(f.t.Path, f.t.Resolved, gone...)
		if err != nil {
			return err
		}
		res.Warnings = append(res.Warnings, warnings...)
	}
	warnings, err := s.w.checkTwinsAmong(created)
	res.Warnings = append(res.Warnings, warnings...)
	return err
}

// planAdd plans the file op adds, f, which must not exist.
func planAdd(f *txFile, op patch.FileOp, pf *PatchFile) error {
	obs := f.obs
	if obs.Stat.Exists && !obs.Stat.Regular() {
		return notAFile(f.t.Path, obs)
	}
	if obs.Stat.Exists {
		e := stale(f.t.Path, ReasonCreated, obs)
		e.Message = "the patch adds this file, but it exists"
		e.RecoveryHint = "read it and change it with an Update, or add the file under another path"
		return e
	}
	f.data = []byte(op.Content)
	f.sum = sha256Hex(f.data)
	pf.SHA256, pf.SizeBytes = f.sum, int64(len(f.data))
	pf.Diff = unifiedDiff(f.t.Path, "", op.Content, true, false)
	return nil
}

// mergeableStale sorts err, what checking op's file against the session's
// read (or op's precondition) returned: the STALE_FILE of an update in
// place that may merge over the change since that read comes back as
// stale, with no error, and with seen, the content of that read; anything
// else as it is.
func (s *Session) mergeableStale(op patch.FileOp, base *baseline, obs *observation, o *PatchOptions, err error) (seen []byte, stale, rest error) {
	if err != nil && op.Kind == patch.Update && op.MoveTo == "" && !o.NoMerge && o.Preconditions[op.Path] == nil {
		if seen, ok := s.seenForMerge(base, obs, err); ok {
			return seen, err, nil
		}
	}
	return nil, nil, err
}

// patchedText returns the text op's hunks make of text, f's as it is now:
// merged over the change since the session's read (seen) when staleErr,
// that change's STALE_FILE, is set; else applied to it as they match.
func patchedText(f *txFile, op patch.FileOp, text string, seen []byte, staleErr error, pf *PatchFile) (string, error) {
	switch {
	case staleErr != nil:
		newText, err := planMerge(f, op, text, seen, staleErr)
		if err != nil {
			return "", err
		}
		pf.Merged, pf.ExternalDiff = true, f.externalDiff
		return newText, nil
	case len(op.Hunks) > 0:
		r, err := patch.Apply(text, op.Hunks)
		if err != nil {
			return "", hunkError(f.t.Path, err)
		}
		pf.Matched = r.Matched
		return r.Text, nil
	}
	return text, nil
}

// planMerge applies op's hunks, written against seen, the session's read
// of f, to cur, the file's text now, when the change since that read (stale,
// its STALE_FILE) leaves the lines they replace alone: each hunk is an
// exact edit of its context and removed lines (merge.go's rules). A hunk
// that only adds lines, or is anchored at the end of the file, replaces
// nothing to check, so the patch does not merge. Otherwise stale is the
// error, saying why not.
func planMerge(f *txFile, op patch.FileOp, cur string, seen []byte, stale error) (string, error) {
	var e *Error
	errors.As(stale, &e)
	refuse := func(why string) (string, error) {
		e.Details["not_merged"] = why
		return "", stale
	}
	edits := make([]Edit, 0, len(op.Hunks))
	for i, h := range op.Hunks {
		if h.EndOfFile || h.Old() == "" {
			return refuse(fmt.Sprintf("hunk %d replaces no lines (it only adds, or is anchored at the end of the file), so nothing shows where it goes in the changed file", i+1))
		}
		edits = append(edits, Edit{OldString: h.Old(), NewString: h.New()})
	}
	text, ext, _, err := mergeEdits(seen, f.enc, cur, edits)
	if nm, ok := isNoMerge(err); ok {
		why := strings.NewReplacer("old_string does not occur", "old lines do not occur", "an old_string", "a hunk's old lines",
			"edit ", "hunk ", "the edits do not", "the hunks do not").Replace(nm.why)
		return refuse(why)
	}
	if err != nil {
		return "", err
	}
	f.merged, f.externalDiff, f.seen = true, ext, seen
	return text, nil
}

func udiffMove(from, to, oldText, newText string) string {
	d := unifiedDiff(to, oldText, newText, false, false)
	if d == "" {
		return fmt.Sprintf("rename from %s\nrename to %s\n", from, to)
	}
	return strings.Replace(d, "--- a/"+to, "--- a/"+from, 1)
}

// hunkError maps a hunk that does not apply.
func hunkError(p string, err error) error {
	var (
		ne *patch.NoMatchError
		ae *patch.AmbiguousError
		oe *patch.OverlapError
	)
	switch {
	case errors.As(err, &ne):
		e := newError(CodeNoMatch, p, err.Error(), "read the file again and copy the context lines exactly", err)
		e.Details["hunk"] = ne.Hunk + 1
		return e
	case errors.As(err, &ae):
		e := newError(CodeAmbiguousMatch, p, err.Error(), "add context lines, or an @@ line naming the function or section, so the hunk matches one place", err)
		e.Details["hunk"] = ae.Hunk + 1
		e.Details["lines"] = ae.Lines
		return e
	case errors.As(err, &oe):
		e := newError(CodeInvalidArgument, p, err.Error(), "merge the overlapping hunks into one", err)
		e.Details["hunk"] = oe.Second + 1
		return e
	}
	return newError(CodeInvalidArgument, p, err.Error(), "", err)
}

// journalFor is the journal of a transaction of files (engine.Journal).
func journalFor(id, op, session string, files []*txFile) *engine.Journal {
	j := &engine.Journal{ID: id, Op: op, Session: session}
	for _, f := range files {
		j.Files = append(j.Files, engine.JournalFile{
			Path: f.t.Resolved, BeforeExists: f.obs.Stat.Exists, BeforeSHA256: f.obs.Sum, Version: f.version,
			AfterExists: !f.remove, AfterSHA256: f.sum,
		})
	}
	return j
}

// finishPatch appends the ledger record of a refused or dry-run patch; a
// committed one has its records already (see txRecords).
func (w *Workspace) finishPatch(a *attempt, files []*txFile, res *PatchResult, err error) (*PatchResult, error) {
	if err != nil || res == nil || res.DryRun {
		var r *Result
		if res != nil && res.DryRun {
			r = &Result{DryRun: true}
		}
		if p := w.failedPath(files, err); p != "" {
			a.rec.Path = p
		}
		if err != nil {
			w.refusedPatch(a, files, err)
		}
		if _, ferr := w.finish(a, r, err); ferr != nil {
			return nil, ferr
		}
		return res, err
	}
	return res, nil
}

// refusedPatch completes the record of a patch refused with err: what it
// checked of each file it got to (the caller's expectation and what was
// there), the failing file's observation, and, kept in history, the
// patch's text and, for a refusal decided on the file's text, that file's
// content. A content that cannot be kept leaves the record without it.
func (w *Workspace) refusedPatch(a *attempt, files []*txFile, err error) {
	w.keepText(a)
	for _, f := range files {
		if f.obs == nil {
			continue
		}
		c := ledger.FileCheck{Path: f.t.Resolved, Observed: f.obs.LedgerState()}
		if f.base != nil {
			version := ""
			if f.seen != nil {
				// Merged before the refusal: the read it merged over.
				v, _ := w.keepContent(f.t.Resolved, f.seen, f.base.SHA256, opMergeBase, a.rec.Session)
				version = v.ID
			}
			c.Baseline = baselineState(f.base, version)
		}
		if !f.pre.empty() {
			c.Precondition, _ = json.Marshal(f.pre)
		}
		a.rec.Files = append(a.rec.Files, c)
		if f.t.Resolved != a.rec.Path {
			continue
		}
		a.rec.Observed, a.rec.Baseline, a.rec.SHA256Before = c.Observed, c.Baseline, f.obs.Sum
		if f.obs.Stat.Exists && f.obs.Stat.Regular() && decidedOnText(err) {
			w.keepContent(f.t.Resolved, f.obs.Data, f.obs.Sum, opPatchRefused, a.rec.Session)
		}
	}
}

// decidedOnText reports whether err is a refusal that rests on a file's
// text, not only its hash: replay needs the text to decide it again.
func decidedOnText(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Code {
	case CodeNoMatch, CodeAmbiguousMatch, CodeNoChange, CodeInvalidArgument, CodeEncoding, CodeBinaryFile:
		return true
	case CodeStaleFile:
		_, tried := e.Details["not_merged"]
		return tried
	}
	return false
}

// failedPath is the path the record of a failed patch names: the file the
// error names, resolved, or, for a name the patch did not get to add (a
// protected path, a symlink), cleaned as the caller gave it; else the
// patch's first file.
func (w *Workspace) failedPath(files []*txFile, err error) string {
	var p string
	if e := (*Error)(nil); errors.As(err, &e) {
		p, _ = e.Details["path"].(string)
		if q, ok := e.Details["file"].(string); ok {
			p = q
		}
	}
	if p != "" {
		for _, f := range files {
			if f.t.Path == p || f.t.Resolved == p {
				return f.t.Resolved
			}
		}
		if len(p) <= maxErrPath {
			if l := w.lexical(p); l != "" {
				return l
			}
			return p
		}
	}
	if len(files) > 0 {
		return files[0].t.Resolved
	}
	return ""
}

// txRecords appends the transaction's ledger records, one for each name it
// changed (so that each history version is checked against the hash chain
// like any other), and waits until they are durable: one fsync for all.
func (w *Workspace) txRecords(a *attempt, files []*txFile, res *PatchResult) (ok bool) {
	var written []*recorded
	for _, f := range files {
		rec := &attempt{rec: a.rec}
		rec.rec.Path = f.t.Resolved
		rec.rec.Observed = f.obs.LedgerState()
		rec.rec.SHA256Before = f.obs.Sum
		if f.base != nil {
			rec.rec.Baseline = baselineState(f.base, f.seenVersion)
		}
		if !f.pre.empty() {
			rec.rec.Precondition, _ = json.Marshal(f.pre)
		}
		r := &Result{Path: f.t.Path, SHA256: f.sum, SizeBytes: int64(len(f.data)), Created: !f.obs.Stat.Exists, Deleted: f.remove,
			BackupVersion: f.version, Strategy: "transaction " + res.TxID}
		written = append(written, w.record(rec, r, nil))
	}
	ok = true
	for _, rc := range written {
		r, _ := rc.wait()
		if r != nil {
			res.Warnings = append(res.Warnings, r.Warnings...)
		}
		ok = ok && rc.lerr == nil
	}
	return ok
}

// changeSet is the names a change of several names acts on (a move, a
// patch, an undo), which the engine takes through the steps of the
// protocol (engine.Engine.RunMove and RunTx, internal/engine/set.go),
// and the session's side of the steps they share: StepTarget for one name
// (add), the versions history saved (Saved), the errors of the engine's
// steps (Fail), and the work after a commit (Done).
type changeSet struct {
	s     *Session
	files []*txFile
	// whenPrepare and whenApprove say, in the STALE_FILE of a name that
	// changed while the locks were let go, while what: its parents made
	// (StepPrepare), or the approver asked (StepApprove).
	whenPrepare, whenApprove string
}

// errSameFile is add's answer for a name that resolves to a file the
// change already has.
var errSameFile = errors.New("the same file under two names")

// add is StepTarget for one name: resolved inside the root, not protected by
// policy, and not a file the change already has (errSameFile).
func (cs *changeSet) add(p string) (*txFile, error) {
	t, err := cs.s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	if err := cs.s.w.checkChangeable(t); err != nil {
		t.Close()
		return nil, err
	}
	for _, f := range cs.files {
		if f.t.Resolved == t.Resolved {
			t.Close()
			return nil, errSameFile
		}
	}
	f := &txFile{t: t}
	cs.files = append(cs.files, f)
	return f, nil
}

// targets are the names' targets, which the engine closes.
func (cs *changeSet) targets() []*target {
	ts := make([]*target, len(cs.files))
	for i, f := range cs.files {
		ts[i] = f.t
	}
	return ts
}

// observations are what the names held when checked.
func (cs *changeSet) observations() []*observation {
	obs := make([]*observation, len(cs.files))
	for i, f := range cs.files {
		obs[i] = f.obs
	}
	return obs
}

// Saved takes the history versions of what each name held (StepSnapshot).
func (cs *changeSet) Saved(versions []string) {
	for i, f := range cs.files {
		f.version = versions[i]
	}
}

// Done is the session's work after a committed change: history's pruning.
func (cs *changeSet) Done() { cs.s.w.afterCommit() }

// Fail turns the error of the engine's part of step, at the i-th name,
// into the caller's.
func (cs *changeSet) Fail(step engine.Step, i int, err error) error {
	if step == engine.StepLock {
		return lockTxError(err)
	}
	f := cs.files[i]
	var ce *engine.ChangedError
	switch {
	case step == engine.StepObserve:
		return observeError(f.t, err)
	case errors.As(err, &ce) && step == engine.StepApprove:
		return changed(f.t, f.obs, ce.Now, cs.whenApprove)
	case errors.As(err, &ce):
		return changed(f.t, f.obs, ce.Now, cs.whenPrepare)
	case step == engine.StepPrepare:
		return parentError(f.t.Path, err)
	case step == engine.StepSnapshot:
		return historyFailed(f.t.Path, err)
	}
	return ioError(f.t.Path, err)
}

// Undoing a patch: UndoPatch, a transaction of its own (txRun).

// UndoOptions control UndoPatch.
type UndoOptions struct {
	DryRun bool
}

// UndoPatch puts back every file of the patch transaction txid (from
// ApplyPatch's result, or the ledger) as it was before the patch, as one
// transaction of its own: all or nothing, even across a crash, like
// ApplyPatch. Each file must still be exactly what the patch left, as the
// ledger records it; a file changed since fails the whole undo with
// STALE_FILE, so no later work is destroyed. It needs no read: the ledger's
// hash chain vouches for what the patch wrote. What the undo replaces goes
// to history, so the undo can itself be undone.
func (s *Session) UndoPatch(ctx context.Context, txid string, opts *UndoOptions) (*PatchResult, error) {
	var o UndoOptions
	if opts != nil {
		o = *opts
	}
	a := newAttempt(s, opUndoPatch, "", map[string]any{"tx": txid, "dry_run": o.DryRun}, nil)
	r := &txRun{a: a, op: opUndoPatch,
		changeSet: &changeSet{s: s, whenPrepare: "while the undo was prepared", whenApprove: "while the undo awaited approval"},
		refusal:   refusal{"", "the undo was declined", "ask the user what to do instead"}}
	var recs []*LedgerRecord
	r.resolve = func() error {
		var err error
		if recs, err = s.w.patchTxRecords(txid); err != nil {
			return err
		}
		r.res = &PatchResult{TxID: strings.ToLower(rand.Text()[:12]), DryRun: o.DryRun}
		for _, rec := range recs {
			f, err := r.add(rec.Path)
			if errors.Is(err, errSameFile) {
				return newError(CodeInvalidArgument, rec.Path, "the transaction's records name this file twice", "", nil)
			}
			if err != nil {
				return err
			}
			f.out = len(r.res.Files)
			r.res.Files = append(r.res.Files, PatchFile{Path: rec.Path, Op: "undo"})
		}
		return nil
	}
	r.plan = func() error {
		for i, f := range r.files {
			if err := s.w.prepareUndo(f, recs[i], &r.res.Files[f.out]); err != nil {
				return err
			}
		}
		return nil
	}
	err := s.w.eng.RunTx(ctx, r, opUndoPatch, opPatchUndone, s.name)
	return r.out, err
}

// patchTxRecords returns the ledger's records of the patch transaction
// txid (ApplyPatch's or UndoPatch's): one per name it changed. No record
// fails with INVALID_ARGUMENT.
func (w *Workspace) patchTxRecords(txid string) ([]*LedgerRecord, error) {
	var recs []*LedgerRecord
	// Only lines that hold the strategy's text are decoded.
	err := ledger.Filter(w.state, ledgerName, ledger.Match{Mentions: "transaction " + txid}, func(r *LedgerRecord) error {
		if r.Outcome == "ok" && (r.Tool == opApplyPatch || r.Tool == opUndoPatch) && r.Strategy == "transaction "+txid {
			recs = append(recs, r)
		}
		return nil
	})
	if err != nil {
		return nil, readError("read ledger", err)
	}
	if len(recs) == 0 {
		return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("no patch transaction %q in the ledger", txid),
			"use the transaction id a patch's result names (editguard log lists them)", nil)
	}
	return recs, nil
}

// prepareUndo readies f, locked, to be put back as the patch transaction's
// record r of it says it was before: f must still be exactly what the patch
// left (else STALE_FILE), and the version r saved is loaded and checked
// against r. pf, f's entry in the result, gets the undo's diff.
func (w *Workspace) prepareUndo(f *txFile, r *LedgerRecord, pf *PatchFile) error {
	var err error
	if f.obs, err = w.observe(f.t); err != nil {
		return err
	}
	afterExists := r.SHA256After != ""
	if f.obs.Stat.Exists != afterExists || f.obs.Sum != r.SHA256After {
		e := stale(f.t.Path, ReasonModified, f.obs)
		if !f.obs.Stat.Exists {
			e = stale(f.t.Path, ReasonDeleted, f.obs)
		}
		e.Message = "the file changed after the patch; undoing the patch would destroy that change, so nothing was undone"
		e.RecoveryHint = "restore the files one by one with restore_file after reading them, or leave the patch in place"
		e.Details["expected"] = map[string]any{"sha256": r.SHA256After}
		return e
	}
	v, data, err := w.loadVersion(f.t.Path, f.t.Resolved, r.HistoryVersion)
	if err != nil {
		return err
	}
	// r saved the version (it is the transaction's record of this
	// file): checked against it, as checkVersion would after reading
	// the whole ledger again for each file.
	if why := disagreement(v, r); why != "" {
		return versionMismatch(f.t.Path, v, why)
	}
	if v.Absent {
		f.remove = true
		pf.Diff = unifiedDiff(f.t.Path, textOf(f.obs.Data, ""), "", false, true)
	} else {
		f.data, f.sum = data, v.SHA256
		pf.SHA256, pf.SizeBytes = f.sum, int64(len(data))
		pf.Diff = unifiedDiff(f.t.Path, textOf(f.obs.Data, ""), textOf(data, ""), !f.obs.Stat.Exists, false)
	}
	return nil
}
