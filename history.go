package editguard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/udiff"
)

// Version is one displaced content of a file, kept in history.
type Version struct {
	ID        string `json:"version"`
	Time      string `json:"time"` // RFC 3339
	SHA256    string `json:"sha256"`
	SizeBytes int64  `json:"size_bytes"`
	// Absent records that the file did not exist: restoring it deletes the file.
	Absent    bool   `json:"absent,omitempty"`
	Op        string `json:"op"`
	Session   string `json:"session,omitempty"`
	LedgerSeq uint64 `json:"ledger_seq,omitempty"`
}

func versionFrom(v history.Version) Version {
	return Version{ID: v.ID, Time: v.Time.Format("2006-01-02T15:04:05.000Z07:00"), SHA256: v.SHA256, SizeBytes: v.Size,
		Absent: v.Absent, Op: v.Op, Session: v.Session, LedgerSeq: v.LedgerSeq}
}

// History lists the versions editguard displaced from a file, newest first.
func (w *Workspace) History(p string) ([]Version, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	w.trims.Wait()
	w.eng.FlushOutcomes() // which link versions to their ledger records
	vs, err := w.hist.List(resolved)
	if err != nil {
		return nil, newError(CodeIO, p, err.Error(), "", err)
	}
	out := make([]Version, len(vs))
	for i, v := range vs {
		out[i] = versionFrom(v)
	}
	return out, nil
}

// load returns a version's metadata and bytes.
func (w *Workspace) loadVersion(p, resolved, id string) (history.Version, []byte, error) {
	v, data, err := w.hist.Load(resolved, id)
	if errors.Is(err, history.ErrNoVersion) || errors.Is(err, history.ErrInvalid) {
		return v, nil, w.unknownVersion(p, resolved, id, err)
	}
	if errors.Is(err, history.ErrCorrupt) || errors.Is(err, history.ErrCorruptIndex) {
		e := newError(CodeUnsafeState, p, err.Error(),
			"the history was changed or damaged outside editguard; run editguard verify, and restore another version", err)
		e.Details["version"] = id
		return v, nil, e
	}
	if err != nil {
		return v, nil, newError(CodeIO, p, err.Error(), "", err)
	}
	return v, data, nil
}

// knownVersion fails with unknownVersion's error unless id names a version
// of the file at resolved.
func (w *Workspace) knownVersion(p, resolved, id string) error {
	_, err := w.hist.Get(resolved, id)
	if errors.Is(err, history.ErrNoVersion) || errors.Is(err, history.ErrInvalid) {
		return w.unknownVersion(p, resolved, id, err)
	}
	return nil // other failures are reported by the load itself
}

// unknownVersion is the error for a version id the file's history does
// not hold: INVALID_ARGUMENT, with the newest ids it does hold.
func (w *Workspace) unknownVersion(p, resolved, id string, err error) *Error {
	vs, _ := w.hist.List(resolved)
	ids := []string{}
	for _, v := range vs[:min(len(vs), 10)] {
		ids = append(ids, v.ID)
	}
	msg := fmt.Sprintf("no version %q in the history of %s", id, p)
	hint := "this file has no earlier versions"
	if len(ids) > 0 {
		hint = "use one of the versions listed (newest first; file_history, or editguard history, lists them all)"
	}
	if retiredBefore(id, vs) {
		msg = fmt.Sprintf("version %s of %s was retired from the history (%s); the oldest kept is %s",
			id, p, w.retentionRule(), vs[len(vs)-1].ID)
		e := newError(CodeNotFound, p, msg, hint, err)
		e.Details["version"], e.Details["versions"], e.Details["retired"] = id, ids, true
		return e
	}
	e := newError(CodeInvalidArgument, p, msg, hint, err)
	e.Details["version"] = id
	e.Details["versions"] = ids
	return e
}

// VersionDiff returns a unified diff from a history version to the current
// file.
func (w *Workspace) VersionDiff(p, id string) (string, error) {
	t, err := w.openTarget(p)
	if err != nil {
		return "", err
	}
	defer t.Close()
	_, data, err := w.loadVersion(p, t.Resolved, id)
	if err != nil {
		return "", err
	}
	obs, err := w.observe(t)
	if err != nil {
		return "", err
	}
	return unifiedDiff(p, textOf(data, ""), textOf(obs.Data, ""), data == nil, !obs.Stat.Exists), nil
}

// textOf decodes bytes for a diff, or describes them when they are not text.
func textOf(data []byte, enc string) string { return textcodec.Show(data, enc) }

// afterCommit applies the total size cap in the background, outside any
// commit's critical section, when a Save of this commit found the store's
// running byte total over it (see history.Store.OverCap), and the age limit
// when a pass by age is due (history.Store.AgeDue). Each file's own
// versions are trimmed by its Save, so nothing else needs a whole-store
// pass, and no commit waits for one.
func (w *Workspace) afterCommit() {
	if !w.hist.OverCap() && !w.hist.AgeDue() {
		return
	}
	if !w.pruning.TryLock() {
		return
	}
	w.prunes.Add(1)
	go func() {
		defer w.prunes.Done()
		defer w.pruning.Unlock()
		w.hist.Prune()
	}()
}

// trimLater runs a Save's trim of old versions (history.Meta.Later) in a
// goroutine, so that the hook waiting for a Guard does not wait for it too.
// History and Close wait for the trims running.
func (w *Workspace) trimLater(trim func()) {
	ticket := w.trims.Add()
	go func() {
		defer w.trims.Done(ticket)
		trim()
	}()
}

// PathDiff returns a unified diff from the file against to the file p (the
// change that would turn against into p). It changes nothing and records no
// read.
func (w *Workspace) PathDiff(p, against string) (string, error) {
	texts := make([]string, 2)
	for i, name := range []string{against, p} {
		t, err := w.openTarget(name)
		if err != nil {
			return "", err
		}
		obs, err := w.observe(t)
		t.Close()
		if err != nil {
			return "", err
		}
		if !obs.Stat.Exists {
			return "", newError(CodeNotFound, name, "file does not exist", "check the path with list_directory", nil)
		}
		if !obs.Stat.Regular() {
			return "", notAFile(name, obs)
		}
		texts[i] = textOf(obs.Data, "")
	}
	return udiff.Unified("a/"+against, texts[0], "b/"+p, texts[1]), nil
}

// retiredBefore reports whether the version id was saved before the oldest
// of vs (newest first) and is gone for that: version numbers only grow, so
// a lower one than every kept version's was retired by retention.
func retiredBefore(id string, vs []history.Version) bool {
	if len(vs) == 0 {
		return false
	}
	n, ok := versionNumber(id)
	oldest, ok2 := versionNumber(vs[len(vs)-1].ID)
	return ok && ok2 && n > 0 && n < oldest
}

// versionNumber is the number of a version ID such as "v000042".
func versionNumber(id string) (uint64, bool) {
	rest, ok := strings.CutPrefix(id, "v")
	if !ok || rest == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 64)
	return n, err == nil
}

// retentionRule says in words which versions the history keeps, for an
// error about one it no longer has.
func (w *Workspace) retentionRule() string {
	keep, maxBytes := w.opts.KeepVersions, w.opts.HistoryMaxBytes
	if keep <= 0 {
		keep = history.DefaultKeepVersions
	}
	if maxBytes == 0 {
		maxBytes = history.DefaultMaxBytes
	}
	rule := fmt.Sprintf("it keeps the newest %d versions of each file", keep)
	if maxBytes > 0 {
		rule += fmt.Sprintf(" and at most %d MiB in all, the oldest going first", maxBytes>>20)
	}
	if w.opts.HistoryMaxAge > 0 {
		rule += fmt.Sprintf(", and retires versions older than %s but each file's newest", w.opts.HistoryMaxAge)
	}
	return rule
}

// Contents a record's decision rests on that no change displaced, kept in
// history so that a person can see them and replay can decide the record
// again: the text of an apply_patch, the read a merge was decided
// against, and the file a refused patch's hunks were applied to. Each is
// kept like any version, under the same retention.

// PatchTextPath is the history path under which the texts of apply_patch
// calls are kept, one version each (ledger.Record.Text names it). No
// workspace file can have this name: the state directory is never a
// workspace path.
const PatchTextPath = StateDir + "/patches"

// keepContent returns the version of p in history that holds data (whose
// SHA-256 is sum), saving it durably as a version of op if history holds
// none yet.
func (w *Workspace) keepContent(p string, data []byte, sum, op, session string) (history.Version, error) {
	v, ok, err := w.hist.Newest(p, func(v history.Version) bool { return !v.Absent && v.SHA256 == sum })
	if err != nil || ok {
		return v, err
	}
	return w.hist.Save(p, data, false, sum, history.Meta{Op: op, Session: session, Later: w.trimLater})
}

// keepText keeps the patch text of the attempt a in history and names it
// in its record, once.
func (w *Workspace) keepText(a *attempt) error {
	if a.text == nil || a.rec.Text != nil {
		return nil
	}
	data := []byte(*a.text)
	sum := sha256Hex(data)
	v, err := w.keepContent(PatchTextPath, data, sum, a.rec.Tool, a.rec.Session)
	if err != nil {
		return err
	}
	a.rec.Text = &ledger.Kept{Path: PatchTextPath, Version: v.ID, SHA256: sum, Size: int64(len(data))}
	return nil
}

// PatchText returns the text of the apply_patch call rec records, which
// history keeps (rec.Text names it): what the agent sent, refused or
// committed. A record that names none (a dry run's result, a record
// written before texts were kept), or whose text retention has retired,
// is NOT_FOUND.
func (w *Workspace) PatchText(rec *LedgerRecord) (string, error) {
	if rec == nil || rec.Text == nil {
		return "", newError(CodeNotFound, "", "the record names no kept patch text", "", nil)
	}
	_, data, err := w.hist.Load(rec.Text.Path, rec.Text.Version)
	if err != nil {
		e := newError(CodeNotFound, "", "the patch text the record names is not in history: "+err.Error(), "", err)
		e.Details["version"] = rec.Text.Version
		return "", e
	}
	if sha256Hex(data) != rec.Text.SHA256 {
		return "", newError(CodeUnsafeState, "", "the patch text history keeps is not the one the record names", "", nil)
	}
	return string(data), nil
}

// What the ui reads of a workspace besides its ledger: a version's bytes
// and a file as it is now.

// VersionBytes returns the bytes that history version id of the file p
// keeps, or nil for a version that records that the file did not exist.
// It changes nothing and records nothing.
func (w *Workspace) VersionBytes(p, id string) ([]byte, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	_, data, err := w.loadVersion(p, resolved, id)
	return data, err
}

// Current returns the file p as it is now: its state (SHA-256, size,
// mtime; Exists false when there is no file) and its bytes, observed the
// way a commit observes them. It records no read, so it is no baseline
// for a later change; pass the SHA-256 as a Precondition instead. A name
// that is not a regular file fails with NOT_A_FILE.
func (w *Workspace) Current(p string) (FileState, []byte, error) {
	t, err := w.openTarget(p)
	if err != nil {
		return FileState{}, nil, err
	}
	defer t.Close()
	obs, err := w.observe(t)
	if err != nil {
		return FileState{}, nil, err
	}
	if obs.Stat.Exists && !obs.Stat.Regular() {
		return FileState{}, nil, notAFile(p, obs)
	}
	return stateOf(obs), obs.Data, nil
}
