package editguard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/filelock"
)

// Baseline is what a session last saw of a file: the bytes' SHA-256 decides
// staleness; size and mtime are kept for reporting.
type Baseline struct {
	Path       string    `json:"path_resolved"`
	SHA256     string    `json:"sha256"`
	Size       int64     `json:"size_bytes"`
	MtimeMS    int64     `json:"mtime_ms"`
	FullRead   bool      `json:"full_read"`
	CapturedAt time.Time `json:"captured_at"`
	Encoding   string    `json:"encoding,omitempty"` // the encoding the file was read in, reused by later edits
}

// Session is one agent's view of a workspace: the baselines of the files it
// has read or written. It is safe for concurrent use.
//
// A persistent session (OpenSession) keeps its baselines in
// .editguard/sessions/NAME.json, so that separate CLI invocations with the
// same name share them; every access re-reads the file under a lock.
type Session struct {
	w        *Workspace
	name     string
	persist  string // file name in .editguard/sessions, "" for in-memory sessions
	approver Approver

	mu        sync.Mutex
	baselines map[string]Baseline

	seen seenCache // what an in-memory session last read of each file
}

// Approver decides whether a previewed change may be committed. Approve is
// called with the context of the Write, Edit or Restore call and without any
// lock held (a person may take minutes); the commit re-checks the file
// afterwards.
type Approver interface {
	Approve(ctx context.Context, p *Preview) (bool, error)
}

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
	return &Session{w: w, name: name, baselines: map[string]Baseline{}}
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
// read again before it is changed.
func (s *Session) BeginTurn() error {
	return s.update(func(m map[string]Baseline) { clear(m) })
}

// baselineOf returns the session's baseline for a path, if any.
func (s *Session) baselineOf(p string) (Baseline, bool, error) {
	resolved, err := s.w.resolve(p)
	if err != nil {
		return Baseline{}, false, err
	}
	b, ok := s.baseline(resolved)
	return b, ok, nil
}

func (s *Session) baseline(resolved string) (Baseline, bool) {
	var b Baseline
	var ok bool
	s.view(func(m map[string]Baseline) { b, ok = m[resolved] })
	return b, ok
}

// setBaseline records b for its resolved path, and also under name, the
// path as the caller wrote it, when a symlink made the two differ. The
// second entry lets a later change notice that name has since been pointed
// elsewhere (see Session.check).
func (s *Session) setBaseline(name string, b Baseline) error {
	return s.update(func(m map[string]Baseline) {
		m[b.Path] = b
		if name != "" && name != b.Path {
			m[name] = b
		}
	})
}

func (s *Session) dropBaseline(resolved string) error {
	return s.update(func(m map[string]Baseline) { delete(m, resolved) })
}

// view runs fn over the current baselines.
func (s *Session) view(fn func(map[string]Baseline)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.persist != "" {
		if m, err := s.load(); err == nil {
			s.baselines = m
		}
	}
	fn(s.baselines)
}

// update runs fn over the baselines and saves them. For a persistent session
// the load-modify-save runs under the session's lock file, so two CLI
// invocations with the same session name do not lose each other's baselines.
func (s *Session) update(fn func(map[string]Baseline)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.persist == "" {
		fn(s.baselines)
		return nil
	}
	l, err := s.w.sessions.Lock(context.Background(), s.persist+".lock", &filelock.Options{Timeout: s.w.opts.LockTimeout})
	if err != nil {
		return stateError("lock session", err)
	}
	defer l.Unlock()
	m, err := s.load()
	if err != nil {
		return stateError("load session", err)
	}
	m = maps.Clone(m) // what load returned may be shared (see loaded)
	fn(m)
	s.baselines = m
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// Not fsynced: a power cut may take back this update, leaving an
	// older baseline or none (load reads a damaged file as empty). None
	// fails the next change with NOT_READ; an older one names content the
	// session did read, so a change still passes only if the file holds
	// exactly that content, which is all a baseline ever promises.
	if err := s.w.sessions.WriteFileVolatile(s.persist, data, 0o644); err != nil {
		return stateError("save session", err)
	}
	s.w.sessionLoads.Store(s.persist, &loaded{raw: data, m: m})
	return nil
}

// load returns the session's baselines as its file holds them. The map may
// be shared with other Sessions of the same name: it must not be changed.
func (s *Session) load() (map[string]Baseline, error) {
	data, err := s.w.sessions.ReadFile(s.persist)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Baseline{}, nil
	}
	if err != nil {
		return nil, err
	}
	if v, ok := s.w.sessionLoads.Load(s.persist); ok && bytes.Equal(v.(*loaded).raw, data) {
		return v.(*loaded).m, nil
	}
	m := map[string]Baseline{}
	if len(data) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		// A file a power cut left partial (it is written without
		// fsync), or one damaged otherwise: the session has read
		// nothing, and must read again before it changes a file.
		return map[string]Baseline{}, nil
	}
	s.w.sessionLoads.Store(s.persist, &loaded{raw: data, m: m})
	return m, nil
}

// loaded is a persistent session's file as this process last read or wrote
// it, and its baselines. Reading a session's file costs little next to
// decoding it (a session that has read 1,000 files holds about 240 KB), so
// a load that finds the same bytes reuses the baselines. Neither is changed
// once stored.
type loaded struct {
	raw []byte
	m   map[string]Baseline
}
