package editguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/udiff"
)

// This file is the session's side of a single file's change: the
// decisions of the protocol that internal/engine runs, step by step
// (engine.Step, numbered in internal/engine/run.go; docs/ARCHITECTURE.md
// §2.1). commitRun is the engine.Decider of one change: it resolves the
// path and applies policy (StepTarget), says what the session remembers
// of the file (StepObserve), checks the change against the session's read
// or a precondition (StepCheck), builds the new content (StepBuild), asks
// the approver (StepApprove), makes room (StepPrepare), follows the change
// with the session's baseline (StepFollow) and fills in the ledger
// record (StepRecord); it turns the engine's errors into *Error. Once the
// swap has put the new bytes in place, the change is reported as
// committed whatever fails later: the ledger records it as ok and the
// result carries warnings. The end of the file opens and observes targets
// for every kind of change (openTarget, checkNotLink, observe).

// Result describes a change, committed or (with DryRun) previewed.
type Result struct {
	Path          string   `json:"path"`
	SHA256        string   `json:"sha256"`
	SizeBytes     int64    `json:"size_bytes"`
	BytesWritten  int64    `json:"bytes_written"`
	Created       bool     `json:"created"`
	Deleted       bool     `json:"deleted,omitempty"`
	Diff          string   `json:"diff"`
	BackupVersion string   `json:"backup_version,omitempty"`
	MtimeMS       int64    `json:"mtime_ms,omitempty"`
	DryRun        bool     `json:"dry_run,omitempty"`
	Replacements  int      `json:"replacements,omitempty"`
	MatchedWith   []string `json:"matched_with,omitempty"`
	Strategy      string   `json:"strategy,omitempty"`
	// Timing is how long the change took, and where the time went; the
	// ledger record holds it too.
	Timing *Timing `json:"timing,omitempty"`
	// Merged says the file had changed since the session's read and the
	// edit was applied over that change, which ExternalDiff shows (from
	// the read to the file before the edit); see merge.go.
	Merged       bool   `json:"merged,omitempty"`
	ExternalDiff string `json:"external_diff,omitempty"`
	// MovedFrom is the source of a move; Path is its destination, and
	// SourceVersion the history version that keeps what left the source.
	MovedFrom     string `json:"moved_from,omitempty"`
	SourceVersion string `json:"source_version,omitempty"`
	// Mode (octal, such as "0644"), EncodingUsed and LineEnding (lf,
	// crlf, mixed or none) describe the file a write left, or would
	// leave (a dry run's new file has a Mode only if the write gives one).
	Mode         string `json:"mode,omitempty"`
	EncodingUsed string `json:"encoding_used,omitempty"`
	LineEnding   string `json:"line_ending,omitempty"`
	// Warnings say what failed after the change was committed (its bytes
	// are in place): a directory fsync, the session's baseline, the
	// ledger; and the names the change created that are not portable
	// (Options.Names). The change stands; the warnings say what is not
	// assured.
	Warnings []string `json:"warnings,omitempty"`
}

func (r *Result) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// change is one guarded mutation.
type change struct {
	tool      string
	path      string
	pre       *Precondition
	dryRun    bool
	wholeFile bool
	// overAbsent lets the change create a missing file without a read even
	// when the session's baseline says it existed: it discards nothing
	// (restore_file over a deleted file).
	overAbsent bool
	// noRead lets the change proceed without a baseline: it discards
	// nothing (write_file with mode append). An explicit precondition
	// still applies.
	noRead bool
	// verify, when set, decides alone whether the change may proceed over
	// the observed file, under its lock: no baseline and no precondition
	// is consulted (a precondition, if any, is only recorded). Rewind
	// checks a file against the ledger this way.
	verify func(t *target, obs *observation) error
	// approved says that the caller already asked the session's approver
	// about this change (Rewind asks once for all its files), so the
	// commit does not ask again.
	approved bool
	// build computes the new content from what is on disk, given the
	// encoding remembered in the session's baseline.
	build func(t *target, obs *observation, enc string) (*plan, error)
	// args are the call's arguments as the ledger records them.
	args any
	// merge lets the change go on when the file changed since the
	// session's read, if build can merge over that change (merge.go):
	// seen is then the content of the read, for build.
	merge bool
	seen  []byte
	// newName makes a change that creates the file check the names it
	// creates against the workspace's policy (names.go).
	newName bool
	// fileInfo makes the result describe the file: mode, encoding and
	// line endings.
	fileInfo bool
}

// plan is the outcome of build.
type plan struct {
	data             []byte
	sum              string // SHA-256 of data, if already known
	remove           bool
	oldText, newText string
	encoding         string
	replacements     int
	matchedWith      []string
	// mode is the permission bits of a file the change creates (0: 0666
	// less the umask, unless exactMode); an existing file keeps its own.
	mode      os.FileMode
	exactMode bool
	// lineEnding is the line endings of data, if the change knows them.
	lineEnding string
	// frozen says that nothing writes to data, now or later, so the
	// session may keep it without a copy.
	frozen bool
	// externalDiff is set when the change was merged over another
	// writer's change since the session's read: that change, as a diff.
	externalDiff string
}

// commitRun is one single-file change on its way through the protocol
// (engine.Engine.Run), as the session decides it: what each step found,
// kept for the steps after it.
type commitRun struct {
	s    *Session
	c    *change
	a    *attempt
	t    *target
	obs  *observation
	base *baseline // the session's read the change was checked against
	enc  string    // the encoding the session read the file in
	// stale is the STALE_FILE error of an edit that may still merge over
	// the other change (merge.go); Build gives it back if it does not.
	stale error
	pl    *plan
	res   *Result
}

// mutate makes the change c (engine.Engine.Run, with commitRun's
// decisions) and records the attempt in the ledger, refused or not,
// before the file's lock is released.
func (s *Session) mutate(ctx context.Context, c *change) (*Result, error) {
	r := &commitRun{s: s, c: c, a: newAttempt(s, c.tool, c.path, c.args, c.pre)}
	if err := s.w.eng.Run(ctx, r, &s.w.gate, c.tool, s.name); err != nil {
		return nil, err
	}
	return r.res, nil
}

// Target is StepTarget: the path, inside the root, as a parent directory
// and one name in it; and the policy that may protect it.
func (r *commitRun) Target() (*target, error) {
	t, err := r.s.w.openTarget(r.c.path)
	if err != nil {
		return nil, err
	}
	r.t = t
	r.a.rec.Path = t.Resolved
	return t, r.s.w.checkChangeable(t)
}

// Expect is what the session remembers of the file, so that StepObserve
// compares equal bytes instead of hashing them.
func (r *commitRun) Expect() (string, []byte) { return r.s.expected(r.t.Resolved) }

// Check is StepCheck: the file, read and hashed under its lock, checked
// against what the change may act on (its own verify, a precondition or
// the session's read). The SHA-256 comparison here is the decision that
// no update is lost.
func (r *commitRun) Check(obs *observation) error {
	s, c := r.s, r.c
	r.obs = obs
	r.a.rec.Observed = obs.LedgerState()
	r.a.rec.SHA256Before = obs.Sum
	var err error
	switch {
	case c.verify != nil:
		err = c.verify(r.t, obs)
	case c.overAbsent && !obs.Stat.Exists && c.pre.empty():
	case c.noRead && c.pre.empty():
		if b, ok := s.baseline(r.t.Resolved); ok {
			r.base = &b // for the encoding it was read in
		}
	default:
		r.base, err = s.check(r.t, c.pre, obs, c.wholeFile)
	}
	if err != nil {
		err = r.mayMerge(err)
	}
	if b := r.base; b != nil {
		r.enc = b.Encoding
		r.a.rec.Baseline = baselineState(b, "")
	}
	return err
}

// mayMerge returns nil for a stale edit that may merge over the other
// change (merge.go), keeping the staleness in r.stale and the session's
// read in c.seen for build; it returns any other error as it is.
func (r *commitRun) mayMerge(err error) error {
	if !r.c.merge {
		return err
	}
	seen, ok := r.s.seenForMerge(r.base, r.obs, err)
	if !ok {
		return err
	}
	r.c.seen, r.stale = seen, err
	return nil
}

// Prepare is the session's part of StepPrepare: room on the file system,
// and the read a merge was decided against kept.
func (r *commitRun) Prepare() error {
	if err := r.ensureSpace(); err != nil {
		return err
	}
	return r.keepRead()
}

// ensureSpace is the check of a full file system before anything is
// written (space.go): room for the change, after editguard's own leftovers
// are removed, or NO_SPACE.
func (r *commitRun) ensureSpace() error {
	return r.s.w.ensureSpace(r.t, int64(len(r.pl.data)), int64(len(r.obs.Data)))
}

// keepRead keeps in history the session's read that a merge was decided
// against, and names its version in the record's baseline, so that the
// record holds all the merge's decision rests on (keepContent, history.go).
func (r *commitRun) keepRead() error {
	if r.c.seen == nil || r.res == nil || !r.res.Merged || r.a.rec.Baseline == nil {
		return nil
	}
	v, err := r.s.w.keepContent(r.t.Resolved, r.c.seen, r.base.SHA256, opMergeBase, r.s.name)
	if err != nil {
		return historyFailed(r.c.path, err)
	}
	r.a.rec.Baseline.Read.Version = v.ID
	return nil
}

// Build is StepBuild: the new content from what is on disk, its size
// checked, and the change described, diff included: all a dry run returns
// (with no change for the engine to make).
func (r *commitRun) Build() (*engine.Change, error) {
	if err := r.plan(); err != nil {
		return nil, err
	}
	if r.c.dryRun {
		r.res.DryRun, r.res.BytesWritten = true, 0
		return nil, nil
	}
	pl := r.pl
	return &engine.Change{Data: pl.data, Remove: pl.remove, Mode: pl.mode, ExactMode: pl.exactMode}, nil
}

// plan computes the new content and the result that describes it.
func (r *commitRun) plan() error {
	c := r.c
	pl, err := c.build(r.t, r.obs, r.enc)
	if nm, ok := isNoMerge(err); ok && r.stale != nil {
		// Not mergeable: the stale file's error, saying why not.
		var e *Error
		errors.As(r.stale, &e)
		e.Details["not_merged"] = nm.why
		return r.stale
	}
	if err != nil {
		return err
	}
	if int64(len(pl.data)) > r.s.w.opts.MaxFileSize {
		e := newError(CodeTooLarge, c.path, "the new content is larger than the file size limit", "", nil)
		e.Details["size_bytes"] = len(pl.data)
		e.Details["limit_bytes"] = r.s.w.opts.MaxFileSize
		return e
	}
	created := !r.obs.Stat.Exists
	res := &Result{
		Path: c.path, Created: created, Deleted: pl.remove,
		Diff:         unifiedDiff(c.path, pl.oldText, pl.newText, created, pl.remove),
		Replacements: pl.replacements, MatchedWith: pl.matchedWith,
		Merged: pl.externalDiff != "", ExternalDiff: pl.externalDiff,
	}
	if !pl.remove {
		sum := pl.sum
		if sum == "" {
			sum = sha256Hex(pl.data)
		}
		res.SHA256, res.SizeBytes, res.BytesWritten = sum, int64(len(pl.data)), int64(len(pl.data))
	}
	r.pl, r.res = pl, res
	return r.describe(created)
}

// describe adds what the change asks of the file it leaves to the result:
// its mode, encoding and line endings (fileInfo), and the name policy's
// warnings for the names it creates (newName), unless the policy refuses
// them.
func (r *commitRun) describe(created bool) error {
	c, pl, res := r.c, r.pl, r.res
	if c.fileInfo {
		res.EncodingUsed, res.LineEnding = pl.encoding, pl.lineEnding
		switch {
		case !created:
			res.Mode = octalMode(r.obs.Stat.Mode)
		case pl.exactMode || pl.mode != 0:
			res.Mode = octalMode(pl.mode)
		}
	}
	if !c.newName || !created || pl.remove {
		return nil
	}
	warnings, err := r.s.w.checkNames(c.path, r.t.Resolved)
	res.Warnings = append(res.Warnings, warnings...)
	return err
}

// octalMode is m's permission bits, with setuid, setgid and sticky, in
// octal as chmod takes them ("0644").
func octalMode(m os.FileMode) string {
	bits := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		bits |= 0o1000
	}
	return fmt.Sprintf("%04o", bits)
}

// Approve is StepApprove: the session's approver, if any, asked without
// the file's lock (a person may take minutes; unlock and relock are the
// engine's), then a check that the file is still what the person approved
// a change to.
func (r *commitRun) Approve(ctx context.Context, unlock func(), relock func() error) error {
	if r.c.approved {
		r.a.rec.Approval = "accepted"
		return nil
	}
	preview := func() *Preview {
		return &Preview{Tool: r.c.tool, Path: r.c.path, Diff: r.res.Diff, Created: r.res.Created, Deleted: r.pl.remove}
	}
	return r.s.approve(ctx, r.a, preview, refusal{r.c.path, "the change was declined", "ask the user what to change instead"},
		unlock, func() error {
			if err := relock(); err != nil {
				return err
			}
			return r.s.w.unchanged(r.t, r.obs, "while the change awaited approval")
		})
}

// Intent is the record the change's intent is written from (StepSnapshot).
func (r *commitRun) Intent() (LedgerRecord, string) { return r.a.rec, r.res.SHA256 }

// Swapped takes the result of StepSwap: the history's version, and the
// swap's error as the caller's. Once the new content is in place the
// change is committed, and what fails after is a warning, not an error.
func (r *commitRun) Swapped(sw engine.Swapped, err error) error {
	if err != nil {
		err = r.s.w.singleError(r.t, r.obs, r.c.path, err, sw.Leftover)
	}
	if sw.Version != "" {
		r.res.BackupVersion = sw.Version
	}
	if sw.SettleErr != nil {
		r.res.warn("history's version of the displaced content may change with the file: %v", sw.SettleErr)
	}
	if err != nil {
		if sw.Strategy == "" {
			return r.s.w.withSpace(r.t, int64(len(r.pl.data)), int64(len(r.obs.Data)), err)
		}
		r.res.warn("the change is in place, but %v", err)
	}
	r.res.Strategy = sw.Strategy
	if r.res.Merged {
		r.res.Strategy = strategyMerged
	}
	if sw.Kept != "" {
		r.res.warn("another program wrote into the file while it was replaced; the %d bytes it left in the old file are kept in history as %s", len(sw.Displaced), sw.Kept)
	}
	return nil
}

// Follow is StepFollow: the session's baseline follows the change.
func (r *commitRun) Follow(ar atomicfile.Result) {
	s, c, res, base := r.s, r.c, r.res, r.base
	if c.fileInfo && ar.Stat.Exists {
		res.Mode = octalMode(ar.Stat.Mode)
	}
	var err error
	switch {
	case r.pl.remove:
		err = s.dropBaseline(r.t.Resolved)
	case c.noRead && (base == nil || base.SHA256 != r.obs.Sum):
		// The session did not know what it appended to: its read (if
		// any) stays as it was, and the file must be read before a
		// change that discards any of it.
		res.MtimeMS = ar.Stat.MtimeNS / 1e6
	default:
		res.MtimeMS = ar.Stat.MtimeNS / 1e6
		// A whole-file change leaves the session knowing the whole file;
		// an edit, only as much as its read did. After a merge the session
		// has seen the other change only as a diff, perhaps cut. Edits may
		// go on either way; a whole-file change then needs a read first.
		full := !res.Merged && (c.wholeFile || base == nil || base.FullRead)
		diffed := !full && base != nil && (base.FullRead || base.Diffed)
		err = s.setBaseline(r.t.Lexical, baseline{
			Path: r.t.Resolved, SHA256: res.SHA256, Size: res.SizeBytes, MtimeMS: res.MtimeMS,
			FullRead: full, Diffed: diffed, CapturedAt: time.Now(), Encoding: encodingToRemember(r.enc, r.pl.encoding),
		})
		if err == nil {
			s.rememberFrozen(res.SHA256, r.pl.data, r.pl.frozen)
		}
	}
	if err != nil {
		res.warn("the session could not record the change as read (%v): read the file before changing it again", err)
	}
}

// result is what the change returns, given its error: its Result unless
// it failed.
func (r *commitRun) result(err error) *Result {
	if err != nil {
		return nil
	}
	return r.res
}

// Outcome is the attempt's ledger record with its outcome (StepRecord),
// and where its time went.
func (r *commitRun) Outcome(err error, tm engine.Times) *LedgerRecord {
	a := r.a
	a.lockWait += tm.LockWait
	a.check += tm.Check
	a.durable += tm.Durable
	if !r.c.approved && a.rec.Approval != "auto" {
		// The time a person took, without the relock after it.
		a.approval += tm.Approval
	}
	return outcome(a, r.result(err), err)
}

// Recorded is the change's error once its record is written
// (StepRecord): a committed change whose record failed carries a warning.
// A committed change may start history's pruning.
func (r *commitRun) Recorded(lerr, err error) error {
	res, err := recordedResult(r.result(err), err, lerr)
	if err == nil && !res.DryRun {
		r.s.w.afterCommit()
	}
	return err
}

// checkChangeable refuses targets that policy protects.
func (w *Workspace) checkChangeable(t *target) error {
	if pat, ok := w.denied(t.Resolved); ok {
		e := newError(CodeProtectedPath, t.Path, "path is protected from changes by policy", "", nil)
		e.Details["pattern"] = pat
		return e
	}
	return nil
}

// unchanged re-observes t and fails with STALE_FILE if it is not what obs
// saw; when says when it may have changed.
func (w *Workspace) unchanged(t *target, obs *observation, when string) error {
	now, err := w.observe(t)
	if err != nil {
		return err
	}
	if now.Same(obs) {
		return nil
	}
	return changed(t, obs, now, when)
}

// changed is the STALE_FILE error of t, observed as obs and now holding
// now; when says when it may have changed.
func changed(t *target, obs, now *observation, when string) error {
	reason := ReasonModified
	switch {
	case !now.Stat.Exists:
		reason = ReasonDeleted
	case !obs.Stat.Exists:
		reason = ReasonCreated
	}
	e := stale(t.Path, reason, now)
	e.Message = "file changed " + when + "; " + e.Message
	return e
}

func encodingToRemember(remembered, used string) string {
	if remembered != "" || (used != "utf-8" && used != "") {
		return used
	}
	return ""
}

// makeParent creates the missing parent directories of a new file and
// opens the parent (engine.Engine.MakeParent).
func (w *Workspace) makeParent(t *target) error {
	if err := w.eng.MakeParent(t); err != nil {
		return parentError(t.Path, err)
	}
	return nil
}

// unifiedDiff returns a unified diff between two texts, labelled with p.
func unifiedDiff(p, oldText, newText string, created, deleted bool) string {
	return udiff.File(p, oldText, newText, created, deleted)
}

// target and observation are the engine's (internal/engine): an opened
// parent directory with the final element of a resolved path, and what was
// on disk at one moment.
type (
	target      = engine.Target
	observation = engine.Observation
)

// stateOf describes what obs saw as a FileState.
func stateOf(obs *observation) FileState {
	if !obs.Stat.Exists {
		return FileState{}
	}
	return FileState{Exists: true, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS()}
}

// openTarget resolves p and opens its parent directory through the root.
func (w *Workspace) openTarget(p string) (*target, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	if resolved == "." {
		return nil, newError(CodeNotAFile, p, "the workspace root is a directory", "", nil)
	}
	t, err := w.eng.OpenTarget(p, w.lexical(p), resolved)
	if err != nil {
		return nil, targetError(p, err)
	}
	return t, nil
}

// checkNotLink returns a NOT_A_FILE error if the last element of p, as the
// caller wrote it, names a symbolic link, and nil otherwise: when it names
// anything else, nothing, or cannot be looked at (then openTarget reports
// why). Symlinks before the last element are followed as resolve follows
// them; a trailing slash is ignored, so "link/" is the link too. Delete and
// move call it before openTarget, which would follow the link: they act on
// names, and neither the link's target (another name) nor the link itself
// (history keeps bytes, and a restore would bring back a regular file) is
// what they may change. The check and the later open are two looks at the
// disk: a link put in place between them is followed as any other
// operation follows it.
func (w *Workspace) checkNotLink(p string) error {
	dir, base, err := w.resolveParent(p)
	if err != nil {
		return nil
	}
	name := path.Join(dir, base)
	fi, err := w.root.Lstat(name)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	raw, err := w.root.Readlink(name)
	if err != nil {
		raw = ""
	}
	to, target, isFile := w.describeLink(p, raw)
	e := newError(CodeNotAFile, p,
		"a symbolic link (to "+to+"), not a regular file: delete and move do not follow a link at the end of a path, nor remove or rename links; nothing was changed",
		"to remove, rename or replace the link itself, use a shell command (rm, mv)", nil)
	if target != "" {
		e.Details["link_target"] = shortPath(target)
	}
	if isFile {
		e.RecoveryHint = "to delete or move the file it points to, name it by its own path (" + shortPath(target) + "); " + e.RecoveryHint
	}
	return e
}

// describeLink says what the symlink p, whose stored target is raw, points
// to, for a message: the target's path relative to the root and what is
// there, or that it leaves the root or cannot be resolved. target is that
// path relative to the root, or "" if there is none, and isFile says
// whether a regular file is there.
func (w *Workspace) describeLink(p, raw string) (to, target string, isFile bool) {
	resolved, err := w.resolve(p)
	switch {
	case err == nil && resolved == ".":
		return "the workspace root", "", false
	case err == nil:
		what := "which does not exist"
		if fi, err := w.root.Lstat(resolved); err == nil {
			switch {
			case fi.Mode().IsRegular():
				what, isFile = "a file", true
			case fi.IsDir():
				what = "a directory"
			default:
				what = "not a regular file"
			}
		}
		return strconv.Quote(shortPath(resolved)) + ", " + what, resolved, isFile
	case errors.Is(err, ErrOutsideRoot):
		return "a path outside the workspace root", "", false
	}
	// A target that cannot be resolved (a loop, a protected path): its
	// text as stored, unless that is an absolute path, which would name
	// the host's directories.
	raw = filepath.ToSlash(raw)
	if raw == "" || path.IsAbs(raw) || filepath.IsAbs(raw) {
		return "a path that cannot be resolved", "", false
	}
	return strconv.Quote(shortPath(raw)) + ", which cannot be resolved", "", false
}

// observe reads the target under whatever lock the caller holds.
func (w *Workspace) observe(t *target) (*observation, error) {
	obs, err := w.eng.Observe(t)
	if err != nil {
		return nil, observeError(t, err)
	}
	return obs, nil
}
