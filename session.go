package editguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
)

// baseline is what a session last saw of a file: the bytes' SHA-256 decides
// staleness; size and mtime are kept for reporting.
type baseline struct {
	Path       string    `json:"path_resolved"`
	SHA256     string    `json:"sha256"`
	Size       int64     `json:"size_bytes"`
	MtimeMS    int64     `json:"mtime_ms"`
	FullRead   bool      `json:"full_read"`
	CapturedAt time.Time `json:"captured_at"`
	Encoding   string    `json:"encoding,omitempty"` // the encoding the file was read in, reused by later edits
	// Diffed says that the session read the whole file once, but has seen
	// another writer's change since only as a diff (the changes of a
	// STALE_FILE error, or a merge): edits go on, a whole-file change
	// needs a read of the file as it is now.
	Diffed bool `json:"diffed,omitempty"`
	// Shown says the read is of what another program's tool showed,
	// which was not what the file held right after it (ReadShown):
	// SHA256 is that version's, or, for a version seen only in part, a
	// hash no content has.
	Shown bool `json:"shown,omitempty"`
	// FromLine and ToLine are the lines a partial read showed (1-based,
	// inclusive), of TotalLines; zero after a full read, or when the
	// extent is not known.
	FromLine   int `json:"from_line,omitempty"`
	ToLine     int `json:"to_line,omitempty"`
	TotalLines int `json:"total_lines,omitempty"`
	// pending is the pass computing SHA256 (empty until then) of a page
	// served before the file was hashed (readpending.go); in-memory
	// sessions only. Unconfirmed says why a pass left no hash: the read
	// does not count as one.
	pending     *hashPass
	Unconfirmed string `json:"-"`
	// WriterUnknown says SHA256 is what a shell command's change left,
	// made while it ran by the command or by someone else
	// (CommandChange.WriterUnknown): not a read. A change needs a read
	// first; a later command starting from it overwrote nobody's change.
	WriterUnknown bool `json:"writer_unknown,omitempty"`
}

// Session is one agent's view of a workspace: the baselines of the files it
// has read or written. It is safe for concurrent use.
//
// A persistent session (OpenSession) keeps each baseline in a file of its
// own in .editguard/sessions/NAME.b/ (see baselineDir), so that separate
// CLI invocations with the same name share them, and reading or recording
// a baseline costs the same however many the session holds.
type Session struct {
	w        *Workspace
	name     string
	persist  string // "NAME.json" for a persistent session (see storeDir), "" for in-memory sessions
	approver Approver

	mu     sync.Mutex
	memory map[string]baseline // an in-memory session's baselines

	seen seenCache // what an in-memory session last read of each file
}

// Approver decides whether a previewed change may be committed. Approve is
// called with the context of the Write, Edit or Restore call and without any
// lock held (a person may take minutes); the commit re-checks the file
// afterwards.
type Approver interface {
	Approve(ctx context.Context, p *Preview) (bool, error)
}

// ErrApprovalPending is what an Approver returns (or wraps) when the
// question has gone to the person and the answer will come with a later
// call, as MCP's input_required round trip does: nothing is changed, and
// the ledger records the attempt as asked, not as a failed approval.
var ErrApprovalPending = errors.New("editguard: the change awaits the person's answer")

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, p *Preview) (bool, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, p *Preview) (bool, error) { return f(ctx, p) }

// refusal says what a REJECTED answer names: the path, the message when
// the change is declined, and what to do instead.
type refusal struct{ path, declined, hint string }

// approve is the one approval step of every change: it asks the session's
// approver, if it has one, about the change preview describes (built only
// then), and records the answer in a's ledger record. The caller's locks are let go (unlock)
// while the approver decides, which may take a person minutes, and taken
// again after (relock), which must also check that the files are still
// what was approved; either may be nil. A no, or a failure to ask, is
// REJECTED and leaves the locks let go.
func (s *Session) approve(ctx context.Context, a *attempt, preview func() *Preview, r refusal, unlock func(), relock func() error) error {
	ap := s.getApprover()
	if ap == nil {
		return nil
	}
	if unlock != nil {
		unlock()
	}
	ok, err := ap.Approve(ctx, preview())
	if errors.Is(err, ErrApprovalPending) {
		a.rec.Approval = "asked"
		return newError(CodeRejected, r.path, "the change was put to the person and awaits their answer; nothing was changed yet", "", err)
	}
	if err != nil {
		a.rec.Approval = "failed"
		return newError(CodeRejected, r.path, "approval failed: "+err.Error(), "", err)
	}
	if !ok {
		a.rec.Approval = "declined"
		return newError(CodeRejected, r.path, r.declined, r.hint, nil)
	}
	a.rec.Approval = "accepted"
	if relock == nil {
		return nil
	}
	return relock()
}

// Preview is a change awaiting approval.
type Preview struct {
	Tool    string
	Path    string
	Diff    string // unified diff of the text
	Created bool
	Deleted bool
}

// validSessionName reports whether name is a session name: an ASCII letter
// or digit, then up to 63 more of those, '.', '_' or '-'. (Written out: the
// regular expression, with its {0,63}, took longer to compile at every
// start of a program than a hook's whole check of a file.)
func validSessionName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// NewSession returns an in-memory session. name labels it in the ledger and
// history; it may be empty.
func (w *Workspace) NewSession(name string) *Session {
	return &Session{w: w, name: name, memory: map[string]baseline{}}
}

// OpenSession returns a session whose baselines persist under
// .editguard/sessions/, creating it if needed.
func (w *Workspace) OpenSession(name string) (*Session, error) {
	if !validSessionName(name) {
		return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("bad session name %q", name),
			"use letters, digits, '.', '_' or '-' (at most 64)", nil)
	}
	s := w.NewSession(name)
	s.persist = name + ".json"
	return s, nil
}

// Workspace returns the workspace the session belongs to.
func (s *Session) Workspace() *Workspace { return s.w }

// Name returns the session's name.
func (s *Session) Name() string { return s.name }

// SetApprover sets the approver consulted before every commit; nil commits
// without asking.
func (s *Session) SetApprover(a Approver) {
	s.mu.Lock()
	s.approver = a
	s.mu.Unlock()
}

func (s *Session) getApprover() Approver {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approver
}

// BeginTurn forgets every baseline: from now on each existing file must be
// read again before it is changed. It marks the turn's start in the ledger
// (a begin_turn record with no path), so that readers of the ledger (log,
// the ui's timeline) can tell one turn's changes from the next. The mark
// is not waited for: a lost mark loses a boundary, nothing else.
func (s *Session) BeginTurn() error {
	if err := s.update(func(e baselineEditor) error { return e.clear() }); err != nil {
		return err
	}
	if _, err := s.w.led.Write(&LedgerRecord{Session: s.name, Tool: opBeginTurn, Outcome: "ok"}); err != nil {
		return stateError("record the turn's start in the ledger", err)
	}
	return nil
}

// baselineOf returns the session's baseline for a path, if any.
func (s *Session) baselineOf(p string) (baseline, bool, error) {
	resolved, err := s.w.resolve(p)
	if err != nil {
		return baseline{}, false, err
	}
	b, ok := s.baseline(resolved)
	return b, ok, nil
}

// baseline returns the session's baseline under key (a resolved path, or
// a name setBaseline recorded), if any. A baseline whose hash a pass is
// still computing is returned once the pass is over (see settle).
func (s *Session) baseline(key string) (baseline, bool) {
	b, ok := s.baselineNow(key)
	if ok && b.pending != nil {
		b = s.settle(key, b)
	}
	return b, ok
}

// baselineNow is baseline without waiting: a pending baseline's SHA256
// may be empty.
func (s *Session) baselineNow(key string) (baseline, bool) {
	if s.persist == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		b, ok := s.memory[key]
		return b, ok
	}
	var b baseline
	var ok bool
	s.readStored([]string{key}, func(_ string, v baseline) { b, ok = v, true })
	return b, ok
}

// baselines returns the session's baselines under keys, those it has,
// once their hashes are known; a read a pass could not confirm is left
// out.
func (s *Session) baselines(keys []string) map[string]baseline {
	m := map[string]baseline{}
	if s.persist == "" {
		s.mu.Lock()
		for _, k := range keys {
			if b, ok := s.memory[k]; ok {
				m[k] = b
			}
		}
		s.mu.Unlock()
		for k, b := range m {
			if b.pending == nil {
				continue
			}
			if b = s.settle(k, b); b.Unconfirmed != "" {
				delete(m, k) // not a read
			} else {
				m[k] = b
			}
		}
		return m
	}
	s.readStored(keys, func(k string, b baseline) { m[k] = b })
	return m
}

// setBaseline records b for its resolved path, and also under name, the
// path as the caller wrote it, when a symlink made the two differ. The
// second entry lets a later change notice that name has since been pointed
// elsewhere (see Session.check).
func (s *Session) setBaseline(name string, b baseline) error {
	return s.update(func(e baselineEditor) error {
		if err := e.set(b.Path, b); err != nil {
			return err
		}
		if name != "" && name != b.Path {
			return e.set(name, b)
		}
		return nil
	})
}

func (s *Session) dropBaseline(resolved string) error {
	return s.update(func(e baselineEditor) error { return e.drop(resolved) })
}

// baselineEditor reads and changes a session's baselines inside
// Session.update. get, set and drop each cost the same however many
// baselines the session holds; clear costs what was set since the last
// clear.
type baselineEditor interface {
	get(key string) (baseline, bool)
	set(key string, b baseline) error
	drop(key string) error
	clear() error // forgets every baseline
}

// update runs fn over the session's baselines; fn stops at its first
// error, which update returns. For a persistent session it runs under the
// session's lock file, taken by every process that changes the session's
// baselines: a clear (BeginTurn) then never removes the temporary file of
// another process's set, and an older version's file is imported once.
func (s *Session) update(fn func(baselineEditor) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.persist == "" {
		return fn(memoryBaselines(s.memory))
	}
	l, err := s.w.sessions.Lock(context.Background(), s.persist+".lock", &filelock.Options{Timeout: s.w.opts.LockTimeout})
	if err != nil {
		return stateError("lock session", err)
	}
	defer l.Unlock()
	d, err := s.w.sessions.Sub(s.storeDir(), true)
	if err != nil {
		return stateError("open session", err)
	}
	defer d.Close()
	e := baselineDir{d}
	if err := s.importLegacy(e); err != nil {
		return stateError("import session", err)
	}
	if err := fn(e); err != nil {
		return stateError("save session", err)
	}
	return nil
}

// storeDir is the name in .editguard/sessions of a persistent session's
// baselines: NAME.b, beside NAME.seen (seen.go) and the lock NAME.json.lock.
func (s *Session) storeDir() string { return strings.TrimSuffix(s.persist, ".json") + ".b" }

// readStored calls found with each of keys a persistent session has a
// baseline for. It takes no lock: a baseline's file is replaced whole by a
// rename, so a read sees it as it was before a change or after, never
// halfway.
func (s *Session) readStored(keys []string, found func(string, baseline)) {
	missing := s.readEntries(keys, found)
	if len(missing) == 0 {
		return
	}
	// An older version's session file may still hold them: import it
	// (update does) and look again. Once it is imported, a missing
	// baseline costs only this lstat.
	if st, err := s.w.sessions.Stat(s.persist); err != nil || !st.Exists {
		return
	}
	if s.update(func(baselineEditor) error { return nil }) != nil {
		return
	}
	s.readEntries(missing, found)
}

// readEntries calls found with each of keys that has a baseline in the
// session's directory, and returns the others.
func (s *Session) readEntries(keys []string, found func(string, baseline)) (missing []string) {
	d, err := s.w.sessions.Sub(s.storeDir(), false)
	if err != nil {
		// Missing: nothing recorded yet. Unsafe: no baseline is read
		// through it, and the next update reports it.
		return keys
	}
	defer d.Close()
	for _, k := range keys {
		if b, ok := (baselineDir{d}).get(k); ok {
			found(k, b)
		} else {
			missing = append(missing, k)
		}
	}
	return missing
}

// importLegacy moves into e the baselines of the file in which an older
// version kept a persistent session's baselines (sessions/NAME.json, one
// JSON map of them), then removes that file, so that an upgrade does not
// make the session read its files again. A damaged file is removed with
// nothing imported: that version read it as a session that had read
// nothing. Called under the session's lock.
func (s *Session) importLegacy(e baselineDir) error {
	data, err := s.w.sessions.ReadFile(s.persist)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var m map[string]baseline
	if json.Unmarshal(data, &m) == nil {
		for k, b := range m {
			if err := e.set(k, b); err != nil {
				return err
			}
		}
	}
	if err := s.w.sessions.Remove(s.persist); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// memoryBaselines is an in-memory session's baselines.
type memoryBaselines map[string]baseline

func (m memoryBaselines) get(key string) (baseline, bool) {
	b, ok := m[key]
	return b, ok
}

func (m memoryBaselines) set(key string, b baseline) error {
	m[key] = b
	return nil
}

func (m memoryBaselines) drop(key string) error {
	delete(m, key)
	return nil
}

func (m memoryBaselines) clear() error {
	clear(m)
	return nil
}

// baselineDir is a persistent session's directory of baselines: one file
// per key, named by the first 32 hex digits of the key's SHA-256
// (baselineFile), holding the key and its baseline (storedBaseline). A
// file that does not parse, or holds another key (two keys sharing a
// name), reads as no baseline, never as another key's. Anything but a
// regular file at a name is refused with UNSAFE_STATE when it is to be
// replaced or removed, and never followed.
type baselineDir struct{ d *statedir.Dir }

// storedBaseline is the content of a baseline's file. A key or path that
// is not UTF-8 is stored as internal/rawpath does: its readable form, and
// its exact bytes in KeyHex or PathHex.
type storedBaseline struct {
	Key      string   `json:"key"`
	KeyHex   string   `json:"key_hex,omitempty"`
	Baseline baseline `json:"baseline"`
	PathHex  string   `json:"path_resolved_hex,omitempty"`
}

// baselineFile is the name of key's file in a baselineDir.
func baselineFile(key string) string { return sha256String(key)[:32] }

func (e baselineDir) get(key string) (baseline, bool) {
	data, err := e.d.ReadFile(baselineFile(key))
	if err != nil {
		return baseline{}, false
	}
	var sb storedBaseline
	if json.Unmarshal(data, &sb) != nil {
		return baseline{}, false
	}
	k, err := rawpath.Join(sb.Key, sb.KeyHex)
	if err != nil || k != key {
		return baseline{}, false
	}
	if sb.Baseline.Path, err = rawpath.Join(sb.Baseline.Path, sb.PathHex); err != nil {
		return baseline{}, false
	}
	return sb.Baseline, true
}

func (e baselineDir) set(key string, b baseline) error {
	sb := storedBaseline{Baseline: b}
	sb.Key, sb.KeyHex = rawpath.Split(key)
	sb.Baseline.Path, sb.PathHex = rawpath.Split(b.Path)
	data, err := json.Marshal(sb)
	if err != nil {
		return err
	}
	name := baselineFile(key)
	if _, err := e.d.CheckFile(name); err != nil {
		return err
	}
	// Not fsynced, nor is a drop or a clear: a power cut may take back
	// any of them, leaving an older baseline, none (a damaged file
	// reads as none), or one a drop or clear had removed. None fails
	// the next change with NOT_READ; an older one names content the
	// session did read, so a change still passes only if the file
	// holds exactly that content, which is all a baseline ever
	// promises.
	return e.d.WriteFileVolatile(name, data, 0o644)
}

func (e baselineDir) drop(key string) error { return e.remove(baselineFile(key)) }

// clear removes every file of the directory: the baselines, and any
// temporary file a crashed set left. Its cost is that of the files set
// since the last clear.
func (e baselineDir) clear() error {
	ents, err := e.d.ReadDir()
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if err := e.remove(ent.Name()); err != nil {
			return err
		}
	}
	return nil
}

func (e baselineDir) remove(name string) error {
	ok, err := e.d.CheckFile(name)
	if err != nil || !ok {
		return err
	}
	if err := e.d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
