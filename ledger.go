package editguard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
)

// LogFilter selects ledger records; empty fields match everything.
type LogFilter struct {
	Path    string // as given; resolved like any tool path
	Session string
	Tool    string
	// Last, if above zero, keeps only the last Last records that match.
	// They are read from the ledger's end, so the cost does not grow with
	// the ledger's length; an intent whose outcome is missing then comes
	// in its place by seq, not after the others.
	Last int
	// Since, if set, keeps only the records made at or after it.
	Since time.Time
	// Before, if set, keeps only the records with a lower seq. With Last,
	// the ledger is read back from that record, found by bisecting the
	// file, so a page far from the end costs only the page.
	Before uint64
}

// Log calls fn for each ledger record that matches f, oldest first.
func (w *Workspace) Log(f LogFilter, fn func(*LedgerRecord) error) error {
	m := ledger.Match{Session: f.Session, Tool: f.Tool, Since: f.Since, Before: f.Before}
	if f.Path != "" {
		resolved, err := w.resolve(f.Path)
		if err != nil {
			return err
		}
		m.Path = resolved
	}
	if f.Last > 0 {
		return readError("read ledger", ledger.Tail(w.state, ledgerName, m, f.Last, fn))
	}
	if f.Session != "" {
		ix := ledger.Index{Path: w.ledgerIndex(), Sessions: []string{f.Session}}
		return readError("read ledger", ledger.FilterIndexed(w.state, ledgerName, m, ix, fn))
	}
	return readError("read ledger", ledger.Filter(w.state, ledgerName, m, fn))
}

// ledgerIndex is where the session index of the workspace's ledger is kept
// (ledger.Index): in the user's cache directory, outside the workspace so
// that a repository cannot ship one, named after the root's path; "" if
// there is no cache directory, and the ledger is then read in full.
func (w *Workspace) ledgerIndex() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(w.dir))
	return filepath.Join(cache, "editguard", "ledger-index", hex.EncodeToString(sum[:12]))
}

// readError maps a failure to read the ledger to a §5 error, except a
// *LedgerVerifyError, which names the bad record itself, and fn's own
// errors, which pass through.
func readError(what string, err error) error {
	var ve *LedgerVerifyError
	if err == nil || errors.As(err, &ve) || !errors.Is(err, statedir.ErrUnsafe) && !isFSError(err) {
		return err
	}
	return stateError(what, err)
}

// isFSError reports whether err came from the file system.
func isFSError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe)
}

// LedgerVerifyError names the first ledger record that fails verification.
type LedgerVerifyError = ledger.VerifyError

// VerifyLedger checks the ledger's hash chain and its head anchor and
// returns how many records it holds. If any record was edited, deleted,
// reordered or inserted, or records were cut from the end, the error is a
// *LedgerVerifyError naming the first bad sequence number. It changes
// nothing.
func (w *Workspace) VerifyLedger() (int, error) {
	n, err := ledger.Verify(w.state, ledgerName)
	return n, readError("verify ledger", err)
}

// VerifyDir verifies the ledger of the workspace rooted at dir like
// VerifyLedger, without opening the workspace: it only reads. Open repairs
// a torn final line (after saving it to the quarantine), creates the state
// directory and writes its files; VerifyDir does none of that, so what it
// reports is the ledger as it was found. A workspace without a state
// directory or ledger has no records. A state directory that editguard
// did not write for this user on this machine (see trust.go), or an entry
// of it that is a symlink or of the wrong type, fails with UNSAFE_STATE:
// its chain would only say that whoever wrote it chained it. Once the ledger
// verifies, every history version is checked against the ledger record of
// the commit that saved it and against its object's hash (UNSAFE_STATE
// names the first that does not verify).
func VerifyDir(dir string) (int, error) {
	n, _, err := VerifyDirFrom(dir, LedgerMark{})
	return n, err
}

// A LedgerMark names a ledger record by its seq and hash: where a
// verification ended, from which a later one may start (VerifyDirFrom).
type LedgerMark = ledger.Mark

// VerifyDirFrom is VerifyDir for what was recorded after from, and
// returns a mark of the last record it verified. With from.Hash set, the
// record from.Seq must still have that hash: every record's hash covers
// the one before it, so that proves the ledger up to it unchanged since
// the mark was taken, and only the records after it are read. With only
// from.Seq set, nothing up to it is checked at all. The history versions
// checked are those the records after from.Seq saved, and those no record
// names.
func VerifyDirFrom(dir string, from LedgerMark) (n int, last LedgerMark, err error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return 0, from, fmt.Errorf("editguard: verify: %w", err)
	}
	// O_DIRECTORY: a FIFO named as the workspace fails the open, not
	// blocks it.
	root, err := os.OpenFile(real, os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return 0, from, fmt.Errorf("editguard: verify: %w", err)
	}
	defer root.Close()
	state, err := statedir.Lookup(root, "", StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, from, nil
	}
	if err != nil {
		return 0, from, stateError("open state directory", err)
	}
	defer state.Close()
	if err := checkOwner(state, real); err != nil {
		return 0, from, err
	}
	n, last, err = ledger.VerifyFrom(state, ledgerName, from)
	if err != nil {
		return n, last, readError("verify ledger", err)
	}
	return n, last, verifyHistory(state, from.Seq)
}

// verifyHistory checks every history index entry against the ledger record
// of the commit that saved it (whose sha256_before, or observed state for
// "did not exist", the hash chain protects), and every object against its
// hash. It reads only. Versions no ledger record names (bytes rescued from
// a lock-free writer or a crashed writer's temporary file) are checked
// against their objects only. Versions saved by a record up to since are
// skipped: a verification from a mark checks what came after it.
func verifyHistory(state *statedir.Dir, since uint64) error {
	hd, err := state.Sub("history", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return stateError("open history", err)
	}
	defer hd.Close()
	hs, err := history.Lookup(hd)
	if err != nil {
		return stateError("open history", err)
	}
	defer hs.Close()
	type key struct{ path, version string }
	saved := map[key]*LedgerRecord{}
	if err := ledger.ScanFrom(state, ledgerName, since+1, func(r *LedgerRecord) error {
		if r.Outcome == "ok" && r.HistoryVersion != "" {
			saved[key{r.Path, r.HistoryVersion}] = r
		}
		return nil
	}); err != nil {
		return readError("read ledger", err)
	}
	paths, err := hs.Paths()
	if err != nil {
		return stateError("read history", err)
	}
	for _, p := range paths {
		vs, err := hs.List(p)
		if err != nil {
			return stateError("read history", err)
		}
		for _, v := range vs {
			if v.LedgerSeq != 0 && v.LedgerSeq <= since {
				continue
			}
			why := disagreement(v, saved[key{p, v.ID}])
			if why == "" && !v.Absent {
				if _, _, err := hs.Load(p, v.ID); err != nil {
					why = err.Error()
				}
			}
			if why != "" {
				return versionMismatch(p, v, why)
			}
		}
	}
	return nil
}

// What a change puts in the ledger: its attempt and its record, the
// operations' names, and the calls' arguments.

// LedgerRecord is one ledger entry: a mutation attempt, accepted or refused.
type LedgerRecord = ledger.Record

// LedgerRecovery describes a torn final ledger line cut at Open.
type LedgerRecovery = ledger.Recovery

// attempt collects what the ledger records about one mutation attempt.
type attempt struct {
	rec ledger.Record
	// intent is the record written before the change was made, if any
	// (a move's, engine.Engine.SavedIntent; a single file's change keeps
	// its own within engine.Engine.Run).
	intent *engine.Intent
	// start is when the attempt began; the durations are the parts of its
	// time that ledger.Timing names, summed over the steps that spend
	// them (a change relocks after an approval).
	start                              time.Time
	lockWait, check, approval, durable time.Duration
	// text is a patch's text, kept in history and named by the record
	// (keepText) when the patch is refused or committed; nil for other
	// calls.
	text *string
}

// Timing is how long a change took and where the time went (see
// ledger.Timing): in a change's ledger record, and in its Result.
type Timing = ledger.Timing

// timing returns the attempt's Timing as of now.
func (a *attempt) timing() *Timing {
	return &Timing{TotalMS: ms(time.Since(a.start)), LockWaitMS: ms(a.lockWait), CheckMS: ms(a.check),
		ApprovalMS: ms(a.approval), DurableMS: ms(a.durable)}
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func newAttempt(s *Session, tool, path string, args any, pre *Precondition) *attempt {
	a := &attempt{rec: ledger.Record{Session: s.name, Tool: tool, Path: path, Approval: "auto"}, start: time.Now()}
	if args != nil {
		a.rec.Args, _ = json.Marshal(args)
	}
	if !pre.empty() {
		a.rec.Precondition, _ = json.Marshal(pre)
	}
	return a
}

func ledgerState(fs FileState) *ledger.FileState {
	return &ledger.FileState{Exists: fs.Exists, SHA256: fs.SHA256, Size: fs.Size, MtimeMS: fs.MtimeMS}
}

// baselineState is the ledger's form of the session's read b: its
// content's state and how it was read (ledger.Read), so that the record
// holds all its decision rests on. version is the history version that
// holds the content read, when the decision used it (a merge); else "".
func baselineState(b *baseline, version string) *ledger.FileState {
	fs := ledgerState(FileState{Exists: true, SHA256: b.SHA256, Size: b.Size, MtimeMS: b.MtimeMS})
	fs.Read = &ledger.Read{Full: b.FullRead, Diffed: b.Diffed, Shown: b.Shown, Encoding: b.Encoding, Version: version}
	if !b.FullRead {
		fs.Read.FromLine, fs.Read.ToLine, fs.Read.TotalLines = b.FromLine, b.ToLine, b.TotalLines
	}
	return fs
}

// finish appends the attempt to the ledger with its outcome and waits for
// the record to be durable: record, then wait. A change whose bytes are in
// place is reported as committed even if the append fails: the result
// carries a warning, and the displaced content is in history.
func (w *Workspace) finish(a *attempt, res *Result, err error) (*Result, error) {
	return w.record(a, res, err).wait()
}

// recorded is an attempt whose ledger record is written but perhaps not yet
// durable (engine.Outcome).
type recorded struct {
	res  *Result
	err  error
	o    *engine.Outcome
	lerr error // the record's write or fsync's, once wait has returned
}

// recordError sets r's outcome to the error err: its code, reason and
// the error object; an error that is not an *Error is a cancellation.
func recordError(r *LedgerRecord, err error) {
	r.Outcome = "error"
	var e *Error
	if errors.As(err, &e) {
		r.ErrorCode = string(e.Code)
		r.ErrorReason, _ = e.Details["reason"].(string)
		r.Result, _ = json.Marshal(e)
	} else {
		r.ErrorCode = "CANCELED"
		r.Result, _ = json.Marshal(map[string]string{"message": err.Error()})
	}
}

// outcome is the attempt's ledger record with its outcome: the error err,
// or a result res, and its timing.
func outcome(a *attempt, res *Result, err error) *LedgerRecord {
	r := &a.rec
	switch {
	case err != nil:
		recordError(r, err)
	case res.DryRun:
		r.Outcome = "dry_run"
	default:
		r.Outcome = "ok"
		r.SHA256After = res.SHA256
		r.Strategy = res.Strategy
		r.HistoryVersion = res.BackupVersion
	}
	r.Timing = a.timing()
	if res != nil {
		res.Timing = r.Timing
		stored := *res
		stored.Diff = ""    // the diff follows from history and is often large
		stored.Timing = nil // the record holds it
		r.Result, _ = json.Marshal(&stored)
	}
	return r
}

// record writes the attempt's ledger record with its outcome
// (engine.Engine.WriteOutcome). The caller holds the file's lock
// (internal/engine/locks.go), so records of one file are in the order of
// its changes; it releases the lock and then calls wait, so that the
// fsync is not paid under the lock and is shared with concurrent commits.
// A single file's change does the same within engine.Engine.Run.
func (w *Workspace) record(a *attempt, res *Result, err error) *recorded {
	return &recorded{res: res, err: err, o: w.eng.WriteOutcome(outcome(a, res, err), a.intent)}
}

// wait returns the attempt's result once its record is durable (or, for a
// committed change with a durable intent, at once: engine.Outcome.Wait),
// as recordedResult says.
func (rc *recorded) wait() (*Result, error) {
	rc.lerr = rc.o.Wait()
	return recordedResult(rc.res, rc.err, rc.lerr)
}

// recordedResult is an attempt's result and error once its record is
// written, given lerr, the record's write or fsync's error: with a
// warning (for a committed change) or a detail (for a failed one) if the
// record could not be made durable.
func recordedResult(res *Result, err, lerr error) (*Result, error) {
	if lerr != nil {
		if err == nil {
			if !res.DryRun {
				res.warn("the change is in place, but appending it to the ledger failed: %v", lerr)
			}
			return res, nil
		}
		// The attempt failed anyway; say that it is not in the ledger either.
		var e *Error
		if errors.As(err, &e) && e.Details != nil {
			e.Details["ledger_error"] = lerr.Error()
		}
		return nil, err
	}
	return res, err
}

func nonEmpty(p *Precondition) *Precondition {
	if p.empty() {
		return nil
	}
	return p
}

// The operations the ledger records (a record's "tool") and history keeps
// versions for (a version's "op"). An operation an agent tool offers is
// recorded under that tool's name, so that a record reads as the call
// that made it; the others have names of their own. These are the only
// places the package names them.
const (
	opWrite       = "write_file"
	opEdit        = "edit_file"
	opDelete      = "delete_file"
	opRestore     = "restore_file"
	opMove        = "move_file"
	opApplyPatch  = "apply_patch"
	opUndoPatch   = "undo_patch"
	opRewind      = "rewind"
	opPublish     = "publish"
	opPull        = "pull"
	opRecover     = "recover"            // a transaction rolled back at Open
	opPatchUndone = "apply_patch_undone" // a file a failing transaction put back
	opExec        = "exec"               // a shell command's changes, when no client names its shell tool
	opBeginTurn   = "begin_turn"         // a turn's start: a mark with no path, no change
)

// The ops of history versions that no change displaced (history.go:
// keepContent).
const (
	opMergeBase    = "merge_base"    // the session's read a merge was decided against
	opPatchRefused = "patch_refused" // the file a refused patch's hunks were applied to
)

// The ledger keeps each call's arguments, so that the log says what was
// asked, package internal/replay can decide the call again, and the
// tests' Replayer can check that a replayed call is the recorded one. A
// call is its positional arguments and its options struct, embedded: the
// options' JSON names are the tools' argument names, and a field added to
// an options struct is recorded, and compared on replay, with no further
// code. write_file's content is kept as its SHA-256 and size, so the
// ledger stays small. A precondition that states nothing is left out, as
// if none had been given.
type (
	writeCall struct {
		Path          string `json:"path"`
		ContentSHA256 string `json:"content_sha256"`
		ContentBytes  int    `json:"content_bytes"`
		WriteOptions
	}
	editCall struct {
		Path  string `json:"path"`
		Edits []Edit `json:"edits"`
		EditOptions
	}
	restoreCall struct {
		Path    string `json:"path"`
		Version string `json:"version"`
		RestoreOptions
	}
	deleteCall struct {
		Path string `json:"path"`
		DeleteOptions
	}
	moveCall struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
		MoveOptions
	}
)

func writeArgs(p, content string, o *WriteOptions) *writeCall {
	c := &writeCall{Path: p, ContentSHA256: sha256String(content), ContentBytes: len(content), WriteOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func editArgs(p string, edits []Edit, o *EditOptions) *editCall {
	c := &editCall{Path: p, Edits: edits, EditOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func restoreArgs(p, version string, o *RestoreOptions) *restoreCall {
	c := &restoreCall{Path: p, Version: version, RestoreOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func deleteArgs(p string, o *DeleteOptions) *deleteCall {
	c := &deleteCall{Path: p, DeleteOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func moveArgs(src, dst string, o *MoveOptions) *moveCall {
	c := &moveCall{Source: src, Destination: dst, MoveOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}
