package editguard

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
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
func (s *Session) ApplyPatch(ctx context.Context, text string, opts *PatchOptions) (res *PatchResult, err error) {
	var o PatchOptions
	if opts != nil {
		o = *opts
	}
	ops, perr := patch.Parse(text)
	a := newAttempt(s, opApplyPatch, "", patchArgs(text, &o), nil)
	a.text = &text // kept with a refusal or a commit, not a dry run's result
	cs := &changeSet{s: s}
	defer func() { res, err = s.w.finishTx(a, cs, res, err) }()
	if perr != nil {
		var se *patch.SyntaxError
		e := newError(CodeInvalidArgument, "", "the patch does not parse: "+perr.Error(), "fix the patch and send it again", perr)
		if errors.As(perr, &se) && se.Line > 0 {
			e.Details["line"] = se.Line
		}
		return nil, e
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res = &PatchResult{TxID: strings.ToLower(rand.Text()[:12]), DryRun: o.DryRun}
	if err := s.resolvePatch(cs, ops, res); err != nil {
		return nil, err
	}
	if err := cs.lock(ctx); err != nil {
		return nil, err
	}
	if err := s.planPatch(ops, cs.files, res, &o); err != nil {
		return nil, err
	}
	if err := s.checkPatchNames(cs.files, res); err != nil {
		return nil, err
	}
	if o.DryRun {
		return res, nil
	}
	if err := cs.makeParents(ctx, "while the new files' directories were made"); err != nil {
		return nil, err
	}
	if err := cs.approve(ctx, a, res.preview(opApplyPatch), refusal{"", "the patch was declined", "ask the user what to change instead"},
		"while the patch awaited approval"); err != nil {
		return nil, err
	}
	if err := s.w.ensureTxSpace(cs.files); err != nil {
		return nil, err
	}
	if err := s.keepPatchContents(a, cs.files); err != nil {
		return nil, err
	}
	if err := s.commitTx(a, opApplyPatch, cs, res); err != nil {
		if len(cs.files) > 0 {
			newSize, oldSize := txNeeds(cs.files)
			err = s.w.withSpace(cs.files[0].t, newSize, oldSize, err)
		}
		return nil, err
	}
	return res, nil
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

// commitTx commits a checked transaction: what each name holds goes to
// history, then the engine puts the new contents in place
// (engine.Engine.CommitTx: temporary files and history lines made durable
// together, the journal, the swaps, one fsync per directory); then the
// records (the commit) and the journal's removal. A failing step before
// the records rolls back at once. The baselines follow the files. The
// caller holds every file's lock.
func (s *Session) commitTx(a *attempt, op string, cs *changeSet, res *PatchResult) error {
	files := cs.files
	histPaths, err := cs.saveVersions(op)
	if err != nil {
		return err
	}
	tx := make([]*engine.TxFile, len(files))
	for i, f := range files {
		if res.Files[f.out].BackupVersion == "" {
			res.Files[f.out].BackupVersion = f.version
		}
		tx[i] = &engine.TxFile{T: f.t, Obs: f.obs, Data: f.data, Remove: f.remove}
	}
	j := journalFor(res.TxID, op, s.name, files)
	settled, err := s.w.eng.CommitTx(tx, j, histPaths, s.name, opPatchUndone)
	if err != nil {
		return s.w.commitTxError(files, err)
	}
	res.Warnings = append(res.Warnings, settledWarnings(settled)...)
	for i, f := range files {
		if m := tx[i].MtimeMS; m != 0 {
			f.mtimeMS = m
		}
	}
	// The commit point: the records, durable before the journal goes, so
	// that a transaction without its journal has its records. A process
	// killed between the two is rolled forward at the next Open.
	if !s.w.txRecords(a, files, res) {
		// The journal stays: the next Open writes the missing records if
		// one was written (rollForward), else puts every file back, so
		// that no change is left without its record.
		res.Warnings = append(res.Warnings, "the files are changed, but not every ledger record of the transaction was written: its journal is kept, and the next open of the workspace finishes it (it writes the missing records, or, if none was written, puts the files back as they were)")
	} else if err := s.w.eng.RemoveJournal(j.ID); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the files are changed and recorded, but removing the transaction's journal failed (%v): the next open of the workspace finishes it", err))
	}
	s.followTx(files, res)
	return nil
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

// lockTargets takes the locks of every target, then the commit locks of
// their directories (engine.Engine.LockTx).
func (w *Workspace) lockTargets(ctx context.Context, files []*txFile) ([]*filelock.Lock, error) {
	targets := make([]*target, len(files))
	for i, f := range files {
		targets[i] = f.t
	}
	locks, err := w.eng.LockTx(ctx, targets)
	if err != nil {
		return nil, lockTxError(err)
	}
	return locks, nil
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

// finishTx ends a patch or an undo at whatever step it stopped: the record
// of a refused or dry-run one (finishPatch), then the locks go.
func (w *Workspace) finishTx(a *attempt, cs *changeSet, res *PatchResult, err error) (*PatchResult, error) {
	res, err = w.finishPatch(a, cs.files, res, err)
	cs.close()
	if err == nil && !res.DryRun {
		w.afterCommit()
		w.eng.SweepParkedSoon()
	}
	return res, err
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

// changeSet is the names a change of several files acts on (a move, a
// patch, an undo) and the steps of the protocol they share, named as a
// single file's change names them (engine.Step, internal/engine/run.go):
// target, lock, prepare (missing parents), approve, snapshot. Unlike a
// single file's change, a change of several names holds the commit locks
// of all their directories from lock to the end, so that no other commit
// comes between its files.
type changeSet struct {
	s     *Session
	files []*txFile
	locks []*filelock.Lock
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

// lock is StepLock: every file's lock, then the commit locks of every
// directory, each class in its fixed order (lockTargets), held to the end.
func (cs *changeSet) lock(ctx context.Context) error {
	locks, err := cs.s.w.lockTargets(ctx, cs.files)
	cs.locks = locks
	return err
}

// unlock lets every lock go, in the reverse order.
func (cs *changeSet) unlock() {
	for i := len(cs.locks) - 1; i >= 0; i-- {
		cs.locks[i].Unlock()
	}
	cs.locks = nil
}

// relock takes the locks again after they were let go, and checks that no
// file changed meanwhile; when says while what.
func (cs *changeSet) relock(ctx context.Context, when string) error {
	cs.unlock()
	if err := cs.lock(ctx); err != nil {
		return err
	}
	for _, f := range cs.files {
		if err := cs.s.w.unchanged(f.t, f.obs, when); err != nil {
			return err
		}
	}
	return nil
}

// makeParents creates the missing directories of new files, durably, with
// the locks let go, then locks again (a directory just made is locked now
// too) and checks the files.
func (cs *changeSet) makeParents(ctx context.Context, when string) error {
	if !slices.ContainsFunc(cs.files, func(f *txFile) bool { return f.t.Dir == nil }) {
		return nil
	}
	cs.unlock()
	for _, f := range cs.files {
		if f.t.Dir == nil {
			if err := cs.s.w.makeParent(f.t); err != nil {
				return err
			}
		}
	}
	return cs.relock(ctx, when)
}

// approve is the session's approval step (Session.approve), with the
// locks let go while the approver decides and the files checked after.
func (cs *changeSet) approve(ctx context.Context, a *attempt, preview func() *Preview, r refusal, when string) error {
	return cs.s.approve(ctx, a, preview, r, cs.unlock, func() error { return cs.relock(ctx, when) })
}

// snapshot saves what each name holds (or that it does not exist) to
// history, durably, before any file changes: guarantee 4. The versions'
// index lines are written first and made durable together after
// (engine.Engine.SyncVersions). Contents kept as objects are durable as
// Save writes them.
func (cs *changeSet) snapshot(op string) error {
	paths, err := cs.saveVersions(op)
	if err != nil {
		return err
	}
	if err := cs.s.w.eng.SyncVersions(paths); err != nil {
		return historyFailed(cs.files[0].t.Path, err)
	}
	return nil
}

// saveVersions is snapshot without the sync: it writes the versions and
// returns the paths whose index lines the caller makes durable.
func (cs *changeSet) saveVersions(op string) ([]string, error) {
	w := cs.s.w
	paths := make([]string, 0, len(cs.files))
	for _, f := range cs.files {
		v, err := w.hist.Save(f.t.Resolved, f.obs.Data, !f.obs.Stat.Exists, f.obs.Sum, history.Meta{Op: op, Session: cs.s.name, Lazy: true})
		if err != nil {
			return nil, historyFailed(f.t.Path, err)
		}
		f.version = v.ID
		paths = append(paths, f.t.Resolved)
	}
	return paths, nil
}

// close lets the locks go and closes every name's directory.
func (cs *changeSet) close() {
	cs.unlock()
	for _, f := range cs.files {
		f.t.Close()
	}
}
