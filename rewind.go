package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// RewindOptions control Rewind. Without ToSeq or ToTime every change of the
// session is rewound.
type RewindOptions struct {
	// ToSeq rewinds only the changes recorded in ledger record ToSeq and
	// later: each file goes back to what it held just before the session's
	// first change to it at or after that record.
	ToSeq uint64
	// ToTime rewinds only the changes made at ToTime or later.
	ToTime time.Time
	DryRun bool
	// Force also rewinds changes recorded as made by a writer unknown
	// (CommandChange.WriterUnknown: while a command ran, by the command or
	// by someone else), which a rewind otherwise refuses.
	Force bool
}

// RewindResult is what Rewind did, or with DryRun would do, file by file.
// Every file the session changed is in exactly one of the three lists.
type RewindResult struct {
	Session string `json:"session"` // the session rewound
	DryRun  bool   `json:"dry_run,omitempty"`
	// Rewound are the files put back as they were.
	Rewound []RewindFile `json:"rewound"`
	// Unchanged are the files that already hold what they held before the
	// session's changes (the session changed them back itself, or someone
	// else did): there is nothing to put back.
	Unchanged []RewindFile `json:"unchanged"`
	// Refused are the files left as they are, each with the reason.
	Refused []RewindRefusal `json:"refused"`
}

// RewindFile is one file a rewind put back, or found already back.
type RewindFile struct {
	Path string `json:"path"`
	// ToSHA256 is the content the file was put back to; "" when the
	// session created the file, which the rewind deletes.
	ToSHA256 string `json:"to_sha256,omitempty"`
	Deleted  bool   `json:"deleted,omitempty"`
	// Version is the history version put back: the one the session's
	// first change to the file displaced.
	Version string `json:"version,omitempty"`
	// BackupVersion keeps what the rewind displaced: restoring it undoes
	// the rewind of this file.
	BackupVersion string `json:"backup_version,omitempty"`
	// Changes are the sequence numbers of the session's ledger records
	// that the rewind undoes.
	Changes  []uint64 `json:"changes"`
	Diff     string   `json:"diff,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// RewindRefusal is a file a rewind left as it is, and why.
type RewindRefusal struct {
	Path    string   `json:"path"`
	Error   *Error   `json:"error"`
	Changes []uint64 `json:"changes"`
}

// rewinds reports whether r is a rewind's change undoing session's changes.
func rewinds(r *LedgerRecord, session string) bool {
	if r.Tool != opRewind {
		return false
	}
	var c rewindCall
	return json.Unmarshal(r.Args, &c) == nil && c.Session == session
}

// rewindPath is one file a session changed, as the ledger tells it.
type rewindPath struct {
	path string          // as resolved inside the root
	recs []*LedgerRecord // the session's changes to it in the range (and rewinds of them), oldest first
	// gap is the first of recs whose content before is not what the
	// session's previous change left: someone else changed the file in
	// between.
	gap *LedgerRecord
	// unknown are the seqs of recs recorded as made by a writer unknown
	// (commandArgs.WriterUnknown).
	unknown []uint64
}

func (rp *rewindPath) first() *LedgerRecord { return rp.recs[0] }
func (rp *rewindPath) last() *LedgerRecord  { return rp.recs[len(rp.recs)-1] }

func (rp *rewindPath) seqs() []uint64 {
	s := make([]uint64, len(rp.recs))
	for i, r := range rp.recs {
		s[i] = r.Seq
	}
	return s
}

// Rewind puts every file that session changed back as it was before the
// session's first change to it (or, with ToSeq or ToTime, its first change
// in that range): turn-level undo. It works from the ledger alone, so it
// works for every session whatever made its changes (the library, the
// MCP server, the CLI, an agent's own tools through Guard and Record) and
// in any later process.
//
// For each file the session's successful changes in the range are taken
// in ledger order, with the changes of earlier rewinds of the session (so
// that turns can be rewound one after another): what the first displaced
// (sha256_before, kept in history, or "did not exist") is the target, what
// the last left (sha256_after) is what the file must hold now. Each file is then its
// own guarded change, recorded in the ledger under this session's name
// with tool "rewind": under the file's lock,
//
//   - a file that already holds the target is Unchanged, whoever put it
//     back;
//   - a file that holds anything but what the session's last change left
//     was changed since by someone else (another session, a person, a
//     formatter) and is Refused with STALE_FILE, so their work is kept;
//   - so is a file that someone else changed between two of the session's
//     changes (the session's later change started from content the
//     earlier one had not left): going back past that change would
//     destroy it. Rewinding from a later record (ToSeq) still works;
//   - so is a file one of whose changes in the range was recorded as
//     made by a writer unknown (while a command ran, by the command or by
//     someone else: CommandChange.WriterUnknown), with STALE_FILE and
//     reason writer_unknown, unless Force: it may be someone else's work;
//   - otherwise the target is written back, or, for a file that did not
//     exist, the file is deleted (its directory stays). What the rewind
//     displaces goes to history first, as with any change, so restoring
//     BackupVersion undoes the rewind of that file.
//
// The files are independent: a refused file does not stop the others, so
// the result may be partial, and it says so file by file. A move changes
// two names and has a record for each, so it is rewound as two files: the
// source comes back and the destination goes back to what it was (or
// away); if one side is refused the other is still rewound, and both
// contents are then on disk, nothing lost.
//
// With DryRun nothing changes; each file is checked as it would be and the
// result carries the diffs. With an approver set on s, Rewind checks every
// file as a dry run would, asks once with all the diffs, and then commits
// only the files it showed, each only if it still holds what the session
// left (what the diff was made from); the others are reported as the
// check found them. The check is in the ledger as a dry run. A no fails
// with REJECTED, recorded, and changes nothing.
//
// It fails with INVALID_ARGUMENT if the ledger holds no change by session.
// If ctx is cancelled Rewind stops between files and returns what it did
// so far with ctx's error.
func (s *Session) Rewind(ctx context.Context, session string, opts *RewindOptions) (*RewindResult, error) {
	var o RewindOptions
	if opts != nil {
		o = *opts
	}
	if session == "" {
		return nil, newError(CodeInvalidArgument, "", "no session to rewind", "name the session whose changes to undo (editguard log lists them)", nil)
	}
	paths, err := s.w.sessionChanges(session, &o)
	if err != nil {
		return nil, err
	}
	ap := s.getApprover()
	if ap == nil || o.DryRun {
		return s.rewindFiles(ctx, session, paths, &o, false)
	}
	// Check every file and ask once; then commit what was shown.
	preview := o
	preview.DryRun = true
	pr, err := s.rewindFiles(ctx, session, paths, &preview, false)
	if err != nil || len(pr.Rewound) == 0 {
		pr.DryRun = false
		return pr, err
	}
	if err := s.approveRewind(ctx, session, &o, pr); err != nil {
		return nil, err
	}
	var shown []*rewindPath
	for _, rp := range paths {
		if slices.ContainsFunc(pr.Rewound, func(f RewindFile) bool { return f.Path == rp.path }) {
			shown = append(shown, rp)
		}
	}
	res, err := s.rewindFiles(ctx, session, shown, &o, true)
	res.Unchanged = append(res.Unchanged, pr.Unchanged...)
	res.Refused = append(res.Refused, pr.Refused...)
	slices.SortFunc(res.Unchanged, func(a, b RewindFile) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(res.Refused, func(a, b RewindRefusal) int { return strings.Compare(a.Path, b.Path) })
	return res, err
}

// sessionChanges reads the session's successful changes in the range from
// the ledger, grouped by file, in order of path. A rewind of the session
// (by whichever session ran it) counts as one of its changes to a file it
// already changed in the range: it left the file as the session's earlier
// state, so rewinding further back starts from there.
func (w *Workspace) sessionChanges(session string, o *RewindOptions) ([]*rewindPath, error) {
	byPath := map[string]*rewindPath{}
	found := false
	// Only records that name the session, as their own or as the one a
	// rewind undid, are decoded; on a long ledger the session index names
	// the lines of the session's records and of rewinds, and only those
	// and the ledger's tail are read.
	ix := ledger.Index{Path: w.ledgerIndex(), Sessions: []string{session}, Tools: []string{opRewind}}
	err := readError("read ledger", ledger.FilterIndexed(w.state, ledgerName, ledger.Match{Mentions: session}, ix, func(r *LedgerRecord) error {
		if r.Outcome != "ok" || r.Path == "" {
			return nil
		}
		own := r.Session == session
		if !own && !rewinds(r, session) {
			return nil
		}
		found = found || own
		if r.Seq < o.ToSeq || r.Time.Before(o.ToTime) {
			return nil
		}
		rp := byPath[r.Path]
		switch {
		case rp == nil && !own:
			return nil // a rewind of changes before the range
		case rp == nil:
			rp = &rewindPath{path: r.Path}
			byPath[r.Path] = rp
		case rp.gap == nil && r.SHA256Before != rp.last().SHA256After:
			rp.gap = r
		}
		rp.recs = append(rp.recs, r)
		if own && WriterUnknown(r) {
			rp.unknown = append(rp.unknown, r.Seq)
		}
		return nil
	}))
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("the ledger holds no change by session %q", session),
			"name a session that changed files (editguard log lists every record with its session)", nil)
	}
	out := make([]*rewindPath, 0, len(byPath))
	for _, rp := range byPath {
		out = append(out, rp)
	}
	slices.SortFunc(out, func(a, b *rewindPath) int { return strings.Compare(a.path, b.path) })
	return out, nil
}

// rewindFiles rewinds (or checks, with DryRun) each file. approved says
// that the session's approver approved these files' rewinds.
func (s *Session) rewindFiles(ctx context.Context, session string, paths []*rewindPath, o *RewindOptions, approved bool) (*RewindResult, error) {
	res := &RewindResult{Session: session, DryRun: o.DryRun, Rewound: []RewindFile{}, Unchanged: []RewindFile{}, Refused: []RewindRefusal{}}
	for _, rp := range paths {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		f, err := s.rewindFile(ctx, session, rp, o, approved)
		var e *Error
		switch {
		case err == nil:
			res.Rewound = append(res.Rewound, *f)
		case errors.Is(err, ErrNoChange):
			res.Unchanged = append(res.Unchanged, RewindFile{Path: rp.path, ToSHA256: rp.first().SHA256Before,
				Version: rp.first().HistoryVersion, Changes: rp.seqs()})
		case errors.As(err, &e):
			res.Refused = append(res.Refused, RewindRefusal{Path: rp.path, Error: e, Changes: rp.seqs()})
		default:
			return res, err
		}
	}
	return res, nil
}

// rewindFile is the guarded change that puts one file back.
func (s *Session) rewindFile(ctx context.Context, session string, rp *rewindPath, o *RewindOptions, approved bool) (*RewindFile, error) {
	first, last := rp.first(), rp.last()
	if first.SHA256Before == "" && first.Observed != nil && first.Observed.Exists {
		// The file existed, but its content was not kept (a command's
		// checkpoint does not copy files over the size limit): there is
		// nothing to put back, and "" would mean "did not exist".
		return nil, newError(CodeTooLarge, rp.path, "what the session's first change displaced was not kept (the file was over the size limit when it was checkpointed), so it cannot be put back",
			"leave the file as it is, or restore an older version with restore_file if history has one", nil)
	}
	want, expect := first.SHA256Before, last.SHA256After
	// The precondition the ledger implies: the file is what the session
	// left. It is recorded with the change; verify checks it.
	pre := &Precondition{ExpectedSHA256: expect, MustNotExist: expect == ""}
	var restored history.Version
	args := &rewindCall{Session: session, Path: rp.path, ToSeq: o.ToSeq, Changes: rp.seqs(), DryRun: o.DryRun, Force: o.Force}
	if !o.ToTime.IsZero() {
		args.ToTime = o.ToTime.UTC().Format(time.RFC3339Nano)
	}
	res, err := s.mutate(ctx, &change{
		tool: opRewind, path: rp.path, pre: pre, dryRun: o.DryRun, wholeFile: true, approved: approved,
		args: args,
		verify: func(t *target, obs *observation) error {
			if t.Resolved != rp.path {
				e := stale(rp.path, ReasonTypeChanged, obs)
				e.Message = "the path now leads to another file (a symlink was put in its place); it was left as it is"
				e.Details["current_path"] = t.Resolved
				return e
			}
			if holds(obs, want) {
				return newError(CodeNoChange, rp.path, "the file already holds what it held before the session's changes", "", nil)
			}
			if len(rp.unknown) > 0 && !o.Force {
				e := stale(rp.path, ReasonWriterUnknown, obs)
				e.Message = fmt.Sprintf("ledger record %d is a change made while session %s's command ran, by the command or by someone else (editguard could not tell which); rewinding it could destroy someone else's work, so the file was left as it is",
					rp.unknown[0], session)
				e.RecoveryHint = "look at the file and its history and decide; to put it back anyway, rewind with force (editguard rewind --force): what the file holds now goes to history first"
				e.Details["writer_unknown"] = rp.unknown
				return e
			}
			if rp.gap != nil {
				e := stale(rp.path, ReasonModified, obs)
				e.Message = fmt.Sprintf("someone else changed the file between session %s's changes to it (before ledger record %d); rewinding past that would destroy their change, so the file was left as it is",
					session, rp.gap.Seq)
				e.RecoveryHint = fmt.Sprintf("rewind only the later changes (from record %d), or look at the file's history and restore a version by hand", rp.gap.Seq)
				e.Details["between_records"] = []uint64{prevSeq(rp, rp.gap), rp.gap.Seq}
				return e
			}
			if err := checkExplicit(rp.path, pre, obs); err != nil {
				var e *Error
				if errors.As(err, &e) && e.Code == CodeStaleFile {
					e.Message = fmt.Sprintf("the file changed after session %s's last change to it (ledger record %d); rewinding it would destroy that change, so it was left as it is",
						session, last.Seq)
					e.RecoveryHint = "read the file and decide; what it held before is in its history, and restore_file puts a version back"
					e.Details["last_change"] = last.Seq
				}
				return err
			}
			return nil
		},
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if want == "" {
				return &plan{remove: true, oldText: textOf(obs.Data, enc)}, nil
			}
			v, data, err := s.w.versionWithContent(rp.path, t.Resolved, first, want)
			if err != nil {
				return nil, err
			}
			restored = v
			return &plan{data: data, sum: want, oldText: textOf(obs.Data, enc), newText: textOf(data, enc)}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	f := &RewindFile{Path: rp.path, ToSHA256: want, Deleted: res.Deleted, Version: first.HistoryVersion,
		BackupVersion: res.BackupVersion, Changes: rp.seqs(), Diff: res.Diff, Warnings: res.Warnings}
	if restored.ID != "" {
		f.Version = restored.ID
	}
	return f, nil
}

// holds reports whether obs is the state sum names: a regular file with
// that content, or, for "", no file.
func holds(obs *observation, sum string) bool {
	if sum == "" {
		return !obs.Stat.Exists
	}
	return obs.Stat.Exists && obs.Stat.Regular() && obs.Sum == sum
}

// prevSeq is the record of rp just before r.
func prevSeq(rp *rewindPath, r *LedgerRecord) uint64 {
	i := slices.Index(rp.recs, r)
	return rp.recs[i-1].Seq
}

// versionWithContent returns the history version of the file at resolved
// that holds content sum, and its bytes, checked against the ledger like
// any restore. It prefers the version first, the session's first change,
// saved (checked against first itself, with no new pass over the ledger);
// if retention has removed that one, any kept version with the same
// content will do.
func (w *Workspace) versionWithContent(p, resolved string, first *LedgerRecord, sum string) (history.Version, []byte, error) {
	id := first.HistoryVersion
	pick := id
	if v, err := w.hist.Get(resolved, id); err != nil || v.Absent || v.SHA256 != sum {
		pick = ""
		vs, err := w.hist.List(resolved)
		if err != nil {
			return history.Version{}, nil, ioError(p, err)
		}
		for _, v := range vs {
			if !v.Absent && v.SHA256 == sum {
				pick = v.ID
				break
			}
		}
		if pick == "" {
			return history.Version{}, nil, w.contentGone(p, id, sum, vs)
		}
	}
	v, data, err := w.loadVersion(p, resolved, pick)
	if err != nil {
		return v, nil, err
	}
	if pick == id && first.Outcome == "ok" && first.Path == resolved {
		if why := disagreement(v, first); why != "" {
			return v, nil, versionMismatch(p, v, why)
		}
	} else if err := w.checkVersion(p, resolved, v); err != nil {
		return v, nil, err
	}
	return v, data, nil
}

// contentGone is the error for a content no kept version holds: it says
// when retention retired the version that held it.
func (w *Workspace) contentGone(p, id, sum string, vs []history.Version) *Error {
	msg := fmt.Sprintf("the content the file held before the session's changes (sha256 %.12s) is no longer in its history", sum)
	retired := retiredBefore(id, vs)
	if retired {
		msg = fmt.Sprintf("the content the file held before the session's changes (sha256 %.12s, version %s) was retired from its history (%s)", sum, id, w.retentionRule())
	}
	e := newError(CodeNotFound, p, msg, "look at the file's history and restore a version by hand", nil)
	e.Details["version"] = id
	e.Details["sha256"] = sum
	if retired {
		e.Details["retired"] = true
	}
	return e
}

// approveRewind asks the session's approver once about every file of the
// preview pr; a no, or a failure to ask, is recorded and fails with
// REJECTED.
func (s *Session) approveRewind(ctx context.Context, session string, o *RewindOptions, pr *RewindResult) error {
	preview := func() *Preview {
		var diff strings.Builder
		for _, f := range pr.Rewound {
			diff.WriteString(f.Diff)
		}
		return &Preview{Tool: opRewind, Path: fmt.Sprintf("%d files changed by session %s", len(pr.Rewound), session),
			Diff: diff.String()}
	}
	a := newAttempt(s, opRewind, pr.Rewound[0].Path, &rewindCall{Session: session, ToSeq: o.ToSeq}, nil)
	err := s.approve(ctx, a, preview, refusal{"", "the rewind was declined; nothing was changed", "ask the user what to do instead"}, nil, nil)
	if err == nil {
		return nil
	}
	_, ferr := s.w.finish(a, nil, err)
	return ferr
}

// rewindCall is what the ledger records of a rewind's change to one file.
type rewindCall struct {
	Session string   `json:"session"` // the session rewound
	Path    string   `json:"path,omitempty"`
	ToSeq   uint64   `json:"to_seq,omitempty"`
	ToTime  string   `json:"to_time,omitempty"`
	Changes []uint64 `json:"changes,omitempty"` // its records undone
	DryRun  bool     `json:"dry_run,omitempty"`
	Force   bool     `json:"force,omitempty"` // changes by a writer unknown rewound too
}
