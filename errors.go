package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/statedir"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
	"github.com/editguard/editguard/internal/udiff"
)

// Code names the kind of a failure. The same codes appear in the library, in
// MCP tool results and in the CLI's JSON output.
type Code string

// Error codes.
const (
	CodeNotRead         Code = "NOT_READ"          // existing file, no baseline, no precondition
	CodeStaleFile       Code = "STALE_FILE"        // content differs from what the caller saw
	CodeNoMatch         Code = "NO_MATCH"          // old_string not found
	CodeAmbiguousMatch  Code = "AMBIGUOUS_MATCH"   // old_string found more than once
	CodeNoChange        Code = "NO_CHANGE"         // the edit changes nothing
	CodeOutsideRoot     Code = "OUTSIDE_ROOT"      // path resolves outside the workspace
	CodeProtectedPath   Code = "PROTECTED_PATH"    // .editguard/ or a denied path
	CodeNotAFile        Code = "NOT_A_FILE"        // a directory, device or missing file where a file is needed
	CodeNotFound        Code = "NOT_FOUND"         // the file does not exist
	CodeBinaryFile      Code = "BINARY_FILE"       // not text
	CodeEncoding        Code = "ENCODING"          // bytes invalid in the encoding
	CodeTooLarge        Code = "TOO_LARGE"         // over the size limit
	CodeRejected        Code = "REJECTED"          // declined by the person approving
	CodePlaceholder     Code = "PLACEHOLDER"       // new content elides code with a placeholder
	CodeInvalidArgument Code = "INVALID_ARGUMENT"  // malformed call
	CodePermission      Code = "PERMISSION_DENIED" // the caller may not change the file (or keep its owner)
	CodeNoSpace         Code = "NO_SPACE"          // the file system or quota is full
	CodeReadOnly        Code = "READ_ONLY"         // the file system is mounted read-only
	CodeBusy            Code = "BUSY"              // another commit held the lock past the timeout
	CodeUnsafeState     Code = "UNSAFE_STATE"      // .editguard holds a symlink or an entry editguard did not make
	CodeGit             Code = "GIT"               // git is missing, the root is not in a git working tree, or a git command failed
	CodeRemote          Code = "REMOTE"            // the git remote could not be reached, lacks the branch, or refused the push
	CodeIO              Code = "IO"                // the file system failed otherwise
)

// Staleness reasons in Error.Details["reason"] of STALE_FILE.
const (
	ReasonModified    = "modified"
	ReasonDeleted     = "deleted"
	ReasonTypeChanged = "type_changed"
	ReasonCreated     = "created"
	// ReasonWriterUnknown: a rewind would undo a change made while a
	// command ran by a writer unknown (CommandChange.WriterUnknown), which
	// may be someone else's. It is also the reason of the NOT_READ of a
	// change to a file whose last known content is such a change's.
	ReasonWriterUnknown = "writer_unknown"
)

// Error is the structured failure of every editguard operation. Match kinds
// with errors.Is against the Err* values (errors.Is(err, editguard.ErrStaleFile)).
type Error struct {
	Code         Code           `json:"code"`
	Message      string         `json:"message"`
	Details      map[string]any `json:"details,omitempty"`
	RecoveryHint string         `json:"recovery_hint,omitempty"`
	// NextStep is RecoveryHint as a call a program can make: the tool and
	// its arguments. Left nil, it is derived from the code and the
	// details when the error is encoded (Next).
	NextStep *NextStep `json:"next_step,omitempty"`
	Err      error     `json:"-"` // the underlying cause, if any
}

// NextStep is the call that recovers from an error, in the tools' names
// and arguments (read_file, list_directory, file_history).
type NextStep struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// Next returns e's next step: NextStep if set, else the one its code
// implies for its path, or nil where only a person or a new decision can
// go on (REJECTED, PLACEHOLDER, NO_CHANGE, and the failures of the file
// system or of git).
//
//   - NOT_READ, NO_MATCH, AMBIGUOUS_MATCH, ENCODING, and STALE_FILE of a
//     file that is there: read_file of the path, to see what it holds now.
//   - STALE_FILE of a file deleted since it was read: file_history of the
//     path, whose versions keep what it held.
//   - NOT_FOUND: find_files of the path's last element, at any depth (of
//     its directory, with list_directory, for a name with glob
//     characters); NOT_A_FILE: list_directory of the path.
func (e *Error) Next() *NextStep {
	if e.NextStep != nil {
		return e.NextStep
	}
	p, _ := e.Details["path"].(string)
	if p == "" {
		return nil
	}
	step := func(tool, arg string) *NextStep {
		return &NextStep{Tool: tool, Arguments: map[string]any{"path": arg}}
	}
	switch e.Code {
	case CodeStaleFile:
		if e.Details["reason"] == ReasonDeleted {
			return step("file_history", p)
		}
		return step("read_file", p)
	case CodeNotRead, CodeNoMatch, CodeAmbiguousMatch, CodeEncoding:
		return step("read_file", p)
	case CodeNotFound:
		// Where a file of that name is, if anywhere; a name that a glob
		// would read as a pattern, the directory it was looked for in.
		if base := path.Base(p); !strings.ContainsAny(base, "*?[]{}\\") {
			return &NextStep{Tool: "find_files", Arguments: map[string]any{"pattern": base}}
		}
		return step("list_directory", path.Dir(p))
	case CodeNotAFile:
		return step("list_directory", p)
	}
	return nil
}

func (e *Error) Error() string {
	if p, ok := e.Details["path"]; ok {
		if s, ok := p.(string); ok {
			p = shortPath(s)
		}
		return fmt.Sprintf("%s: %s: %s", e.Code, p, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same code, so that
// errors.Is(err, ErrStaleFile) matches any stale-file error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.Details == nil
}

// MarshalJSON encodes the error object, with its next step (Next). A details.path set longer than
// maxErrPath after the error was built is encoded cut, as newError cuts it.
func (e *Error) MarshalJSON() ([]byte, error) {
	type plain Error
	c := *e
	c.NextStep = e.Next()
	if p, ok := e.Details["path"].(string); ok && len(p) > maxErrPath {
		c.Details = maps.Clone(e.Details)
		c.Details["path"] = shortPath(p)
	}
	return json.Marshal((*plain)(&c))
}

// Sentinels for errors.Is.
var (
	ErrNotRead         = &Error{Code: CodeNotRead}
	ErrStaleFile       = &Error{Code: CodeStaleFile}
	ErrNoMatch         = &Error{Code: CodeNoMatch}
	ErrAmbiguousMatch  = &Error{Code: CodeAmbiguousMatch}
	ErrNoChange        = &Error{Code: CodeNoChange}
	ErrOutsideRoot     = &Error{Code: CodeOutsideRoot}
	ErrProtectedPath   = &Error{Code: CodeProtectedPath}
	ErrNotAFile        = &Error{Code: CodeNotAFile}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrBinaryFile      = &Error{Code: CodeBinaryFile}
	ErrEncoding        = &Error{Code: CodeEncoding}
	ErrTooLarge        = &Error{Code: CodeTooLarge}
	ErrRejected        = &Error{Code: CodeRejected}
	ErrPlaceholder     = &Error{Code: CodePlaceholder}
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrPermission      = &Error{Code: CodePermission}
	ErrNoSpace         = &Error{Code: CodeNoSpace}
	ErrReadOnly        = &Error{Code: CodeReadOnly}
	ErrBusy            = &Error{Code: CodeBusy}
	ErrUnsafeState     = &Error{Code: CodeUnsafeState}
	ErrGit             = &Error{Code: CodeGit}
	ErrRemote          = &Error{Code: CodeRemote}
	ErrIO              = &Error{Code: CodeIO}
)

// IsConflict reports whether err is NOT_READ or STALE_FILE: the caller must
// read the file (again) before changing it.
func IsConflict(err error) bool {
	e, ok := err.(*Error)
	return ok && (e.Code == CodeNotRead || e.Code == CodeStaleFile)
}

// Bounds on what an error repeats of its caller's input: a path longer than
// maxErrPath bytes is carried as its first maxErrPath bytes and its length
// (see shortPath), and a message or hint longer than maxErrText bytes is cut
// the same way.
const (
	maxErrPath = 200
	maxErrText = 2048
)

// newError builds an *Error. It is where every error of the package is
// made, so it bounds what the error repeats: the path in details.path and
// every copy of it in msg and hint is shortPath(path), and msg and hint are
// each cut to maxErrText bytes.
func newError(code Code, path, msg, hint string, cause error) *Error {
	if len(path) > maxErrPath {
		short := shortPath(path)
		msg = strings.ReplaceAll(msg, path, short)
		hint = strings.ReplaceAll(hint, path, short)
		path = short
	}
	e := &Error{Code: code, Message: cutText(msg, maxErrText), RecoveryHint: cutText(hint, maxErrText), Err: cause, Details: map[string]any{}}
	if path != "" {
		e.Details["path"] = path
	}
	return e
}

// shortPath returns p if it is at most maxErrPath bytes long, else its
// first maxErrPath bytes or fewer, cut where a UTF-8 sequence starts,
// followed by "…(N bytes)", N being p's length: the form in which errors
// and messages repeat a caller's path.
func shortPath(p string) string { return cutText(p, maxErrPath) }

// cutText returns s if it is at most n bytes long, else its first n bytes
// or fewer, cut where a UTF-8 sequence starts, followed by "…(N bytes)", N
// being s's length.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("…(%d bytes)", len(s))
}

// ioError turns a failure of the file system into a §5 error whose code says
// what the caller can do about it: NO_SPACE, READ_ONLY, PERMISSION_DENIED,
// BUSY and UNSAFE_STATE each have their own recovery; everything else is IO.
// A failed commit step is named in details.step.
func ioError(p string, err error) *Error {
	var e *Error
	switch {
	case errors.Is(err, statedir.ErrUnsafe):
		e = newError(CodeUnsafeState, p, err.Error(),
			"the repository ships entries in .editguard/ that editguard did not make; remove .editguard/ (editguard recreates it) or the entry named, then retry", err)
		var ue *statedir.UnsafeError
		if errors.As(err, &ue) {
			e.Details["entry"] = ue.Path
		}
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		e = newError(CodeNoSpace, p, "no space left on the file system: "+err.Error(),
			"free disk space (or quota), then retry; nothing was changed", err)
	case errors.Is(err, syscall.EROFS):
		e = newError(CodeReadOnly, p, "the file system is read-only: "+err.Error(),
			"the file cannot be changed here; remount read-write or work elsewhere", err)
	case errors.Is(err, atomicfile.ErrNotWritable), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		e = newError(CodePermission, p, "permission denied: the file (or its directory) is not writable by this user",
			"ask the user to change the file's permissions, or leave the file as it is", err)
	case errors.Is(err, atomicfile.ErrOwner):
		e = newError(CodePermission, p, "permission denied: the file belongs to another user, and a replacement would take it over",
			"ask the file's owner to make the change, or leave the file as it is", err)
	case errors.Is(err, filelock.ErrBusy):
		e = newError(CodeBusy, p, "another commit to this file or its directory held a lock too long: "+err.Error(),
			"retry shortly; if it persists, look for a stopped editguard process", err)
	default:
		e = newError(CodeIO, p, err.Error(), "", err)
	}
	var se *atomicfile.StepError
	if errors.As(err, &se) {
		e.Details["step"] = se.Step
	}
	return e
}

// stateError reports a failure to open editguard's own state.
func stateError(what string, err error) *Error {
	e := ioError("", err)
	e.Message = what + ": " + e.Message
	return e
}

func editError(p string, err error) *Error {
	var (
		nm *textedit.NoMatchError
		am *textedit.AmbiguousError
		nc *textedit.NoChangeError
		eo *textedit.EmptyOldError
	)
	switch {
	case errors.As(err, &nm):
		e := newError(CodeNoMatch, p, fmt.Sprintf("edit %d: old_string was not found in the file", nm.Index+1),
			"read the file again and copy old_string exactly, including whitespace", err)
		e.Details["edit_index"] = nm.Index
		if len(nm.Closest) > 0 {
			var lines []map[string]any
			for _, l := range nm.Closest {
				lines = append(lines, map[string]any{"line": l.Number, "text": l.Text})
			}
			e.Details["closest_lines"] = lines
		}
		return e
	case errors.As(err, &am):
		e := newError(CodeAmbiguousMatch, p, fmt.Sprintf("edit %d: old_string was found %d times", am.Index+1, am.Count),
			"include more surrounding lines in old_string to make it unique, or set replace_all", err)
		e.Details["edit_index"] = am.Index
		e.Details["count"] = am.Count
		e.Details["lines"] = am.Lines
		return e
	case errors.As(err, &nc):
		e := newError(CodeNoChange, p, "the edit leaves the file unchanged", "", err)
		e.Details["edit_index"] = nc.Index
		return e
	case errors.As(err, &eo):
		e := newError(CodeInvalidArgument, p, fmt.Sprintf("edit %d: old_string is empty", eo.Index+1),
			"an empty old_string only creates a new file, as the single edit", err)
		e.Details["edit_index"] = eo.Index
		return e
	}
	var pe *textedit.PlaceholderError
	if errors.As(err, &pe) {
		return placeholderError(p, pe.Index, pe.Placeholders)
	}
	return newError(CodeInvalidArgument, p, err.Error(), "", err)
}

func placeholderError(p string, index int, found []textedit.Placeholder) *Error {
	e := newError(CodePlaceholder, p, "new content replaces existing code with a placeholder such as \"// ... rest of code ...\"",
		"write out the full code instead of a placeholder, or set allow_placeholders if the text is meant literally", nil)
	var lines []map[string]any
	for _, f := range found {
		lines = append(lines, map[string]any{"line": f.Line, "text": f.Text})
	}
	e.Details["placeholders"] = lines
	if index >= 0 {
		e.Details["edit_index"] = index
		e.Message = fmt.Sprintf("edit %d: %s", index+1, e.Message)
	}
	return e
}

func codecError(p string, err error) *Error {
	var (
		ee *textcodec.EncodingError
		ue *textcodec.UnknownEncodingError
		le *textcodec.UnknownLineEndingError
	)
	switch {
	case errors.As(err, &ue), errors.As(err, &le):
		return newError(CodeInvalidArgument, p, err.Error(), "encoding names are those of the WHATWG Encoding Standard: utf-8, utf-16le, gbk, shift_jis, windows-1252, ...", err)
	case errors.Is(err, textcodec.ErrBinary):
		return newError(CodeBinaryFile, p, "file is binary; the text tools do not change it", "", err)
	case errors.As(err, &ee):
		hint := "pass the file's encoding with the encoding argument"
		if len(ee.Likely) > 0 {
			hint = fmt.Sprintf("the file is not valid %s; it may be %s: pass encoding", ee.Encoding, strings.Join(ee.Likely, " or "))
		}
		e := newError(CodeEncoding, p, err.Error(), hint, err)
		e.Details["encoding"] = ee.Encoding
		e.Details["offset"] = ee.Offset
		if len(ee.Likely) > 0 {
			e.Details["likely_encodings"] = ee.Likely
		}
		return e
	}
	return newError(CodeEncoding, p, err.Error(), "", err)
}

// The engine (internal/engine) returns errors as they happened; here, in
// the rest of this file, they become the caller's *Error, each with the path it is
// about and, for a file another program changed, STALE_FILE with what the
// file holds now.

// observeError is the error of a file that could not be read: TOO_LARGE
// past the file size limit (it was not read), else an I/O error.
func observeError(t *target, err error) error {
	var tl *engine.TooLargeError
	if errors.As(err, &tl) {
		e := newError(CodeTooLarge, t.Path, "file is larger than the limit", "", tl.Err)
		e.Details["size_bytes"] = tl.Size
		e.Details["limit_bytes"] = tl.Limit
		return e
	}
	return ioError(t.Path, err)
}

// targetError is the error of a parent directory that could not be
// opened (engine.Engine.OpenTarget).
func targetError(p string, err error) error {
	if errors.Is(err, engine.ErrOutsideRoot) {
		return outsideRoot(p)
	}
	return newError(CodeIO, p, err.Error(), "", err)
}

// parentError is the error of a parent directory that could not be made
// (engine.Engine.MakeParent): NOT_A_FILE where a parent is a file.
func parentError(p string, err error) error {
	if errors.Is(err, atomicfile.ErrNotDir) {
		return newError(CodeNotAFile, p, "a parent of the path is not a directory", "", err)
	}
	if errors.Is(err, engine.ErrOutsideRoot) {
		return outsideRoot(p)
	}
	return ioError(p, err)
}

// lockError is the error of a lock not taken: the context's own error if
// it ended, else an I/O error (BUSY past the lock timeout) of the file at p.
func lockError(p string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return ioError(p, err)
}

// lockTxError is the error of the locks of a change of several names not
// taken (engine.Engine.LockTx): lockError for the file whose lock failed.
func lockTxError(err error) error {
	var pe *engine.PathError
	if errors.As(err, &pe) {
		return lockError(pe.Path, pe.Err)
	}
	return err
}

// settledWarnings are the result's warnings for the steps of a
// transaction that failed after its swaps (the settled errors of
// engine.Engine.RunTx): the changes stand.
func settledWarnings(settled []error) []string {
	var out []string
	for _, err := range settled {
		var pe *engine.PathError
		if errors.As(err, &pe) {
			out = append(out, fmt.Sprintf("%s is changed, but %v", pe.Path, ioError(pe.Path, pe.Err)))
		}
	}
	return out
}

// txError is the caller's error for a failed step of a transaction before
// its swaps, which changed nothing.
func txError(err error) error {
	var pe *engine.PathError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe) && pe.History:
		return historyFailed(pe.Path, pe.Err)
	case errors.As(err, &pe):
		return ioError(pe.Path, pe.Err)
	}
	return ioError("", err)
}

// commitError turns the error of a failed swap into the caller's: a file
// created or changed by another program since it was checked (obs) is
// STALE_FILE with what it holds now.
func (w *Workspace) commitError(t *target, obs *observation, err error) error {
	switch {
	case errors.Is(err, engine.ErrReplaced):
		return w.unchanged(t, obs, "before it was replaced")
	case errors.Is(err, atomicfile.ErrExist):
		return stale(t.Path, ReasonCreated, w.holdsNow(t))
	case errors.Is(err, atomicfile.ErrRaced):
		now := w.holdsNow(t)
		reason := ReasonModified
		if !now.Stat.Exists {
			reason = ReasonDeleted
		}
		e := stale(t.Path, reason, now)
		e.Message = "file was changed by another program during the commit; nothing was written"
		e.Err = err
		return e
	}
	return ioError(t.Path, err)
}

// moveError maps a failed atomicfile.Move, which changed nothing.
func (w *Workspace) moveError(ts, td *target, err error) error {
	switch {
	case errors.Is(err, atomicfile.ErrExist):
		now := w.holdsNow(td)
		e := stale(td.Path, ReasonCreated, now)
		e.Message = "the destination was created by another program during the move; nothing was moved"
		return e
	case errors.Is(err, atomicfile.ErrRaced):
		now := w.holdsNow(ts)
		e := stale(ts.Path, ReasonModified, now)
		e.Message = "a file was changed by another program during the move; nothing was moved"
		e.Err = err
		return e
	case errors.Is(err, atomicfile.ErrCrossDevice):
		return newError(CodeIO, ts.Path, "the source and the destination are on different file systems, and a move between them cannot be atomic",
			"copy the file with write_file and delete the source with delete_file", err)
	}
	return ioError(ts.Path, err)
}

// historyFailed is the error of a change refused because saving what it
// would displace to history failed; nothing was changed.
func historyFailed(p string, err error) *Error {
	e := ioError(p, err)
	e.Message = "saving the current content to history failed; nothing was changed: " + e.Message
	e.Details["step"] = "history"
	return e
}

// commitTxError is the caller's error for a transaction the engine did not
// commit: a step before the swaps, which changed nothing, or a swap, after
// which the files swapped before it were put back (or, if that failed, are
// left for the next Open to put back).
func (w *Workspace) commitTxError(files []*txFile, err error) error {
	var (
		pe *engine.PathError
		se *engine.SwapError
	)
	switch {
	case errors.As(err, &pe) && pe.Journal:
		e := ioError("", pe.Err)
		e.Message = "writing the transaction's journal failed; nothing was changed: " + e.Message
		return e
	case !errors.As(err, &se):
		return txError(err)
	}
	f := files[se.I]
	serr := w.commitError(f.t, f.obs, se.Err)
	if se.RollBack != nil {
		e := ioError(f.t.Path, serr)
		e.Message = fmt.Sprintf("the patch failed at %s (%v), and undoing it failed too (%v); the journal is kept, and the next open of the workspace undoes it", f.t.Path, serr, se.RollBack)
		return e
	}
	var ee *Error
	if !errors.As(serr, &ee) {
		ee = ioError(f.t.Path, serr)
	}
	ee.Details["file"] = f.t.Path
	ee.Details["undone"] = se.I
	return ee
}

// singleError is the caller's error for a single file's change that the
// engine's StepSwap stopped (commitRun.Swapped): the sweep of a dead
// writer's temporary file, history, or the swap (commitError). leftover
// names the history version that keeps what another program wrote into
// the new file before the swap was undone, if any.
func (w *Workspace) singleError(t *target, obs *observation, p string, err error, leftover string) error {
	var pe *engine.PathError
	switch {
	case errors.As(err, &pe) && pe.Sweep:
		e := ioError(p, pe.Err)
		e.Details["step"] = "sweep temp"
		return e
	case errors.As(err, &pe) && pe.History:
		return historyFailed(p, pe.Err)
	}
	err = w.commitError(t, obs, err)
	var e *Error
	if leftover != "" && errors.As(err, &e) {
		e.Details["recovered_version"] = leftover
	}
	return err
}

// Fail turns the error of the engine's part of step of a single file's
// change (engine.Engine.Run) into the caller's.
func (r *commitRun) Fail(step engine.Step, err error) error {
	var ce *engine.ChangedError
	switch {
	case step == engine.StepLock:
		return lockError(r.t.Resolved, err)
	case step == engine.StepObserve:
		return observeError(r.t, err)
	case errors.As(err, &ce):
		return changed(r.t, r.obs, ce.Now, "while its directory was created")
	case step == engine.StepPrepare:
		return parentError(r.t.Path, err)
	}
	return ioError(r.t.Path, err)
}

// holdsNow is what t holds now, for a STALE_FILE error: an empty
// observation if it cannot be read.
func (w *Workspace) holdsNow(t *target) *observation {
	now, _ := w.observe(t)
	if now == nil {
		now = &observation{}
	}
	return now
}

// The locks of a commit are the engine's (internal/engine/locks.go: a
// file's stripe lock from before it is observed until its record is
// written, its directory's commit lock around the swap). These wrappers
// turn their failures into the caller's errors.

// lockFiles takes the file locks of the paths (resolved), each stripe once,
// in stripe order.
func (w *Workspace) lockFiles(ctx context.Context, paths ...string) ([]*filelock.Lock, error) {
	locks, err := w.eng.LockFiles(ctx, paths...)
	if err != nil {
		return nil, lockError(paths[0], err)
	}
	return locks, nil
}

// lockFile takes the file lock of t alone.
func (w *Workspace) lockFile(ctx context.Context, t *target) (*filelock.Lock, error) {
	locks, err := w.lockFiles(ctx, t.Resolved)
	if err != nil {
		return nil, err
	}
	return locks[0], nil
}

// STALE_FILE: what another program changed since the session's read.

// staleDiffMax bounds the diff a STALE_FILE error carries in
// details.changes, in bytes. A larger change is described by the line
// ranges it touches (details.changed_lines) instead.
const staleDiffMax = 3000

// staleChanges adds to e, a STALE_FILE error for a file that was modified
// since the session's last read b, what changed: the unified diff from the
// text the session last read (or wrote) to the text on disk now, when the
// session still holds the former (see remember) and the diff fits in
// staleDiffMax. Having been shown the whole change, the agent knows the
// current content as well as a read would have told it, so the baseline
// moves to the current content: the agent can redo its change at once, on
// top of what is there now. The new baseline counts as a partial read,
// though: an edit (anchored on text) can be redone at once, but a
// whole-file write composed before the change would silently revert it if
// simply sent again, so it needs a full read first. Otherwise the error
// gives the changed line ranges, or says why it cannot, and the agent
// reads again.
//
// The caller holds the file's lock; obs is what is on disk now.
func (s *Session) staleChanges(t *target, b *baseline, obs *observation, wholeFile bool, e *Error) {
	old, ok := s.recall(b.SHA256)
	if !ok {
		e.Details["changes_unavailable"] = "the content of your last read is not kept (too large, or read elsewhere)"
		if b.Shown {
			e.Details["changes_unavailable"] = "your last read showed only part of a version the file no longer holds"
		}
		return
	}
	if len(obs.Data) > seenFileMax {
		e.Details["changes_unavailable"] = "the file is now too large to compare"
		return
	}
	oldDoc, err1 := textcodec.Decode(old, b.Encoding)
	newDoc, err2 := textcodec.Decode(obs.Data, b.Encoding)
	if err1 != nil || err2 != nil {
		e.Details["changes_unavailable"] = "the file no longer decodes as text in its encoding"
		return
	}
	name := t.Path
	if t.Lexical != "" {
		name = t.Lexical // relative to the root, also for an absolute path
	}
	d := udiff.Unified("a/"+name+" (your last read)", oldDoc.Text, "b/"+name+" (now)", newDoc.Text)
	if d == "" {
		// Same text, other bytes: line endings, BOM or encoding changed.
		e.Details["changes_unavailable"] = "only the bytes changed, not the text (line endings, byte order mark or encoding)"
		return
	}
	stats := udiff.Count(d)
	e.Details["changes_summary"] = stats.String()
	if len(d) > staleDiffMax {
		e.Details["changed_lines"] = udiff.NewRanges(d, 20)
		e.RecoveryHint = fmt.Sprintf("the change is too large to show here: call read_file on %s (at least the changed lines), then redo your change on top of what it holds now", t.Path)
		return
	}
	e.Details["changes"] = d
	nb := baseline{
		Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(),
		FullRead: false, Diffed: b.FullRead || b.Diffed, CapturedAt: time.Now(), Encoding: b.Encoding,
	}
	if s.setBaseline(t.Lexical, nb) != nil {
		e.RecoveryHint = fmt.Sprintf("call read_file on %s, then redo the change on top of what it holds now", t.Path)
		return
	}
	s.rememberFrozen(obs.Sum, obs.Data, true) // an observation is never written to
	e.Details["baseline_updated"] = true
	e.Message = "file changed since your last read; the changes are shown"
	e.RecoveryHint = "look at the changes, then redo your edit on top of the file as it is now (your read now covers them, so edit_file needs no new read)"
	if wholeFile {
		e.RecoveryHint = fmt.Sprintf("look at the changes: to keep them, redo your change with edit_file (no new read needed), or call read_file on %s before writing the whole file again", t.Path)
	}
}
