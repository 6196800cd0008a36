package editguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/faults"
	"github.com/editguard/editguard/internal/groupcommit"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
)

// StateDir is the name of the directory under the root where editguard keeps
// its state (history, ledger, locks, CLI sessions). The tools refuse to read
// or write inside it.
const StateDir = ".editguard"

// Default limits.
const (
	DefaultMaxFileSize = 64 << 20
	// DefaultLockTimeout is how long a change waits for a lock another
	// change of the same file (or of its directory, around a swap) holds
	// before it fails with BUSY.
	DefaultLockTimeout = 30 * time.Second
)

// Options configure a Workspace. The zero value is usable.
type Options struct {
	// MaxFileSize is the largest file the text tools read whole or change
	// (default 64 MiB); larger ones fail with TOO_LARGE.
	MaxFileSize int64
	// Deny lists slash-separated glob patterns, relative to the root, of
	// paths that may be read but never changed (PROTECTED_PATH). "**"
	// matches any number of path elements. nil means DefaultDeny. Any
	// .editguard directory, at any depth, is always protected.
	Deny []string
	// KeepVersions is how many history versions are kept per file at
	// least (default 50): a file's index is trimmed back to KeepVersions
	// once it holds more than a quarter more, so that saves do not rewrite
	// it each time. HistoryMaxBytes caps the history's total size
	// (default 1 GiB).
	KeepVersions    int
	HistoryMaxBytes int64
	// HistoryMaxAge, if positive, retires the versions saved longer ago
	// than that, except the newest of each file, beside KeepVersions and
	// HistoryMaxBytes (which still apply). A pass by age runs in the
	// background after a commit, at most every tenth of HistoryMaxAge or
	// every hour, whichever is sooner (internal/history/age.go). 0, the
	// default, keeps versions whatever their age.
	HistoryMaxAge time.Duration
	// LockTimeout bounds the wait for a lock held by another commit
	// (default DefaultLockTimeout); a longer wait fails with BUSY.
	LockTimeout time.Duration
	// SetAsideUntrusted makes Open move a state directory that editguard
	// did not write for this user on this machine (one that came with the
	// repository) into .editguard/untrusted-<time>/ and start afresh;
	// without it, Open refuses such a directory with UNSAFE_STATE. Either
	// way nothing in it is acted upon (see trust.go).
	SetAsideUntrusted bool
	// CheckpointInclude lists patterns, as in a .gitignore, of ignored
	// files that the checkpoints around a shell command cover anyway:
	// files no commit brings back once a command deletes them, such as
	// .env. Ignored directories (node_modules/, build/) are never
	// entered. nil means the lines of .editguard/checkpoint-include if
	// there is one, else DefaultCheckpointInclude; an empty list, none.
	CheckpointInclude []string
	// WatchCommands makes the first BeginCommand start the workspace's
	// change journal (Watch) if it has none, so that later checkpoints
	// read only what changed (see journal.go). EDITGUARD_WATCH=1 in the
	// environment does the same for every workspace; EDITGUARD_NO_WATCH=1
	// turns every journal off.
	WatchCommands bool
	// NoMerge makes every edit whose file changed since the session's
	// read fail with STALE_FILE, as before merging existed (merge.go).
	NoMerge bool
	// Names is the policy for names a change creates that are not
	// portable (names.go): NamesWarn, NamesRefuse or NamesOff. Empty
	// means the word in .editguard/names if there is one, else NamesWarn.
	Names string
	// Faults is for tests only: Open binds it to the workspace, through
	// which tests outside this package inject faults and name temporary
	// files (package internal/faults, which only this module can import;
	// leave it nil).
	Faults *faults.Hooks
}

// DefaultCheckpointInclude is what checkpoints cover of the files a
// .gitignore ignores, unless configured otherwise: environment files,
// which hold secrets no repository keeps.
var DefaultCheckpointInclude = []string{".env", ".env.*"}

// DefaultDeny protects every git repository's internals from writes: the
// top-level one, and those of nested repositories and submodules, including
// the ".git" file of a worktree or submodule.
var DefaultDeny = []string{"**/.git", "**/.git/**"}

// Workspace is a directory tree that editguard guards. It is safe for
// concurrent use by many sessions and goroutines; other processes guarding
// the same files cooperate through locks on the files' directories.
type Workspace struct {
	dir      string   // absolute, symlinks resolved
	root     *os.Root // all file access goes through it
	rootDir  *os.File // the root directory, open
	opts     Options
	state    *statedir.Dir // .editguard, reached without following symlinks
	sessions *statedir.Dir // .editguard/sessions
	ukey     []byte        // the user's key (see trust.go)
	wkey     []byte        // the workspace key, from the user's key and the owner stamp
	key      []byte        // names temporary files (internal/engine/temp.go)

	histDir *statedir.Dir // .editguard/history
	hist    *history.Store
	led     *ledger.Ledger
	// eng is the commit machinery that needs nothing of a session: targets,
	// locks, temporary names, parked files, held files, the swap
	// (internal/engine). gate groups the commits' fsyncs
	// (internal/groupcommit).
	eng  *engine.Engine
	gate groupcommit.Gate
	// seenTallies counts, per persistent session store, what this
	// process added since it last listed the store (see seen.go).
	seenTallies sync.Map
	reads       readCache  // what full passes over files learned, for paged reads (readcache.go)
	dirs        dirCache   // sorted listings of directories, for paged listings (dircache.go)
	passes      hashPasses // hashes of large files computed beside the reads that served them (readpending.go)

	pruning  sync.Mutex     // held by the one background Prune at a time
	prunes   sync.WaitGroup // background Prunes and sweeps of parked files
	trims    engine.Running // background trims of a file's old versions (see trimLater)
	recovery Recovery       // what Open found and did (recoverAtOpen)
	jr       journalState   // the change journal of checkpoints (journal.go)
}

// stateIgnore is the .gitignore editguard puts in its state directory, so
// that "git add -A" does not commit history and ledger.
const stateIgnore = "# editguard's history, ledger and sessions: local state, never committed\n*\n"

// Open opens the workspace rooted at dir, creating its state directory.
//
// The state directory is untrusted like the rest of the repository: if it,
// or anything in it that editguard uses, is a symlink or an entry of the
// wrong type, Open (or the operation that meets it) fails with
// UNSAFE_STATE naming the entry, and follows nothing. A state directory
// that editguard did not write for this user on this machine is refused
// with UNSAFE_STATE (ErrForeignState) before anything in it is read, or set
// aside (Options.SetAsideUntrusted); see trust.go.
func Open(dir string, opts *Options) (*Workspace, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	if o.Deny == nil {
		o.Deny = DefaultDeny
	}
	for _, p := range o.Deny {
		if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil {
			return nil, fmt.Errorf("editguard: bad deny pattern %q: %w", p, err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("editguard: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("editguard: open workspace: %w", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("editguard: open workspace: %w", err)
	}
	w := &Workspace{dir: real, root: root, opts: o}
	if err := w.openState(); err != nil {
		w.closeFiles()
		return nil, err
	}
	if w.opts.Names, err = w.namePolicy(o.Names); err != nil {
		w.Close()
		return nil, err
	}
	w.bindFaults()
	return w, nil
}

// openState opens (creating durably) the state directory and its parts.
func (w *Workspace) openState() error {
	var err error
	if w.rootDir, err = w.root.Open("."); err != nil {
		return fmt.Errorf("editguard: open workspace: %w", err)
	}
	fail := func(what string, err error) error {
		return stateError(what, err)
	}
	if w.state, err = statedir.Open(w.rootDir, "", StateDir); err != nil {
		return fail("open state directory", err)
	}
	if err := w.trust(); err != nil {
		return err
	}
	if st, err := w.state.Stat(".gitignore"); err != nil {
		return fail("open state directory", err)
	} else if !st.Exists {
		if err := w.state.WriteFile(".gitignore", []byte(stateIgnore), 0o644); err != nil {
			return fail("write .editguard/.gitignore", err)
		}
	}
	if w.sessions, err = w.state.Sub("sessions", true); err != nil {
		return fail("open sessions", err)
	}
	if w.histDir, err = w.state.Sub("history", true); err != nil {
		return fail("open history", err)
	}
	if w.hist, err = history.Open(w.histDir, &history.Options{KeepVersions: w.opts.KeepVersions, MaxBytes: w.opts.HistoryMaxBytes, MaxAge: w.opts.HistoryMaxAge}); err != nil {
		return fail("open history", err)
	}
	if w.led, err = ledger.Open(w.state, ledgerName, &ledger.Options{LockTimeout: w.opts.LockTimeout}); err != nil {
		return fail("open ledger", err)
	}
	if w.eng, err = engine.Open(engine.Config{Root: w.root, RootDir: w.rootDir, State: w.state, HistDir: w.histDir, Hist: w.hist, Led: w.led,
		Key: w.wkey, TempKey: w.key, MaxFileSize: w.opts.MaxFileSize, LockTimeout: w.opts.LockTimeout, Background: &w.prunes}); err != nil {
		return fail("open .editguard/locks and .editguard/displaced", err)
	}
	// Recovery, in its order (recoverAtOpen).
	if err := w.recoverAtOpen(); err != nil {
		return fail("recover patch transactions", err)
	}
	return nil
}

func (w *Workspace) closeFiles() error {
	var err error
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	if w.led != nil {
		keep(w.led.Close())
	}
	if w.eng != nil {
		keep(w.eng.Close())
	}
	if w.hist != nil {
		keep(w.hist.Close())
	}
	for _, d := range []*statedir.Dir{w.histDir, w.sessions, w.state} {
		if d != nil {
			keep(d.Close())
		}
	}
	if w.rootDir != nil {
		keep(w.rootDir.Close())
	}
	keep(w.root.Close())
	return err
}

// ledgerName is the ledger's name in the state directory.
const ledgerName = "ledger.jsonl"

// Dir returns the workspace's root directory (absolute, symlinks resolved).
func (w *Workspace) Dir() string { return w.dir }

// MaxFileSize returns the workspace's file size limit (Options.MaxFileSize,
// or its default).
func (w *Workspace) MaxFileSize() int64 { return w.opts.MaxFileSize }

// Close stops the hashes of reads still being computed, waits for
// background history trims, pruning and ledger fsyncs and releases the
// workspace.
func (w *Workspace) Close() error {
	w.passes.stop()
	w.stopJournal()
	if w.eng != nil {
		w.eng.FlushOutcomes()
	}
	w.trims.Wait()
	w.prunes.Wait()
	if w.eng != nil {
		w.eng.StopCatchUp()
		if w.eng.Lazy() {
			w.eng.CatchUp(false)
		}
	}
	return w.closeFiles()
}

// resolve maps a caller's path to a slash-separated path relative to the root
// with no symlink in it, following symlinks that stay inside the root the way
// the kernel would (".." after a symlink goes up from the link's target).
// Paths that leave the root, through "..", an absolute path or a symlink,
// fail with OUTSIDE_ROOT; paths into .editguard/ with PROTECTED_PATH.
// The final element may not exist.
func (w *Workspace) resolve(p string) (string, error) {
	if err := checkPathArg(p); err != nil {
		return "", err
	}
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) {
		rel, ok := w.relFromAbs(p)
		if !ok {
			return "", outsideRoot(p)
		}
		p = rel
	}
	done, err := w.resolveElems(p)
	if err != nil {
		return "", err
	}
	if len(done) == 0 {
		return ".", nil
	}
	res := path.Join(done...)
	for _, e := range done {
		// Any .editguard, at any depth: this workspace's state, or that of
		// a workspace nested in it. Compared without case, for file
		// systems that ignore it.
		if isStateName(e) {
			return "", newError(CodeProtectedPath, p, "editguard's state directories are off limits to the tools", "", nil)
		}
	}
	return res, nil
}

// checkPathArg refuses, before any look at the disk, a caller's path p that
// cannot name a file: empty, with a NUL byte, or too long.
func checkPathArg(p string) error {
	if p == "" {
		return newError(CodeInvalidArgument, p, "path is empty", "pass a file path relative to the workspace root", nil)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return newError(CodeInvalidArgument, p, "path contains a NUL byte", "", nil)
	}
	if len(p) > maxPathLen {
		// Resolving costs a look at the disk per element: a path of
		// tens of thousands of elements would take minutes.
		return newError(CodeInvalidArgument, p, fmt.Sprintf("path is %d bytes long; at most %d are accepted", len(p), maxPathLen), "", nil)
	}
	// A name need not be UTF-8: any byte string the file system allows
	// is a name, and the ledger and history keep it byte for byte.
	return nil
}

// resolveElems walks p, slash-separated and relative to the root, element
// by element against the disk, following symlinks (at most 40 of them),
// and returns the elements of the path it resolves to. Errors name p.
func (w *Workspace) resolveElems(p string) ([]string, error) {
	todo := splitPath(p)
	var done []string
	hops := 0
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case ".":
			continue
		case "..":
			if len(done) == 0 {
				return nil, outsideRoot(p)
			}
			done = done[:len(done)-1]
			continue
		}
		if len(elem) > 255 {
			return nil, newError(CodeInvalidArgument, p, "a path element is longer than 255 bytes", "", nil)
		}
		cur := path.Join(append(done, elem)...)
		fi, err := w.root.Lstat(cur)
		if err != nil {
			if ferr := lstatFailure(p, elem, err); ferr != nil {
				return nil, ferr
			}
			done = append(done, elem)
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, elem)
			continue
		}
		if hops++; hops > 40 {
			return nil, newError(CodeInvalidArgument, p, "too many levels of symbolic links", "", nil)
		}
		target, fromRoot, err := w.linkTarget(p, cur)
		if err != nil {
			return nil, err
		}
		if fromRoot {
			done = nil
		}
		todo = append(target, todo...)
	}
	return done, nil
}

// lstatFailure returns the error resolving p fails with when its element
// elem could not be looked at (err), or nil when elem is merely missing and
// the resolving goes on with it.
func lstatFailure(p, elem string, err error) error {
	// A missing element, or one under a regular file (ENOTDIR):
	// the rest of the path cannot contain symlinks either.
	if errors.Is(err, fs.ErrNotExist) || engine.IsNotDir(err) {
		if utf8.ValidString(elem) && strings.ContainsRune(elem, utf8.RuneError) {
			// A name with the character U+FFFD that does not
			// exist is almost certainly a listed non-UTF-8 name,
			// copied: creating it would make a look-alike file.
			// (Invalid bytes, which strings.ContainsRune counts as
			// U+FFFD too, are a name given exactly.)
			return newError(CodeInvalidArgument, p, "path contains U+FFFD (the replacement character) and does not exist",
				"a name listed with U+FFFD is not UTF-8 on disk and cannot be addressed by the tools; no look-alike file is created", nil)
		}
		return nil
	}
	if engine.IsEscape(err) {
		return outsideRoot(p)
	}
	return newError(CodeIO, p, err.Error(), "", err)
}

// linkTarget reads the symlink cur, met while resolving p, and returns the
// elements of its target. fromRoot says the target was absolute (inside the
// root): it goes on from the root, a relative one from the link's directory.
// A target outside the root fails with OUTSIDE_ROOT.
func (w *Workspace) linkTarget(p, cur string) (elems []string, fromRoot bool, err error) {
	target, err := w.root.Readlink(cur)
	if err != nil {
		return nil, false, newError(CodeIO, p, err.Error(), "", err)
	}
	target = filepath.ToSlash(target)
	if path.IsAbs(target) || filepath.IsAbs(target) {
		rel, ok := w.relFromAbs(target)
		if !ok {
			return nil, false, outsideRoot(p)
		}
		return splitPath(rel), true, nil
	}
	return splitPath(target), false, nil
}

// maxPathLen is the longest path resolve accepts, Linux's PATH_MAX.
const maxPathLen = 4096

// isStateName reports whether a path element names a .editguard directory
// on some file system: in any case, with trailing dots or spaces (dropped on
// Windows-style file systems), or as its 8.3 short name EDITGU~1 to ~9.
func isStateName(e string) bool {
	e = strings.TrimRight(e, ". ")
	if strings.EqualFold(e, StateDir) {
		return true
	}
	return len(e) == 8 && strings.EqualFold(e[:7], "editgu~") && '1' <= e[7] && e[7] <= '9'
}

// lexical cleans p into a slash-separated path relative to the root without
// looking at the disk, or returns "" if it leaves the root that way.
func (w *Workspace) lexical(p string) string {
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) {
		rel, ok := w.relFromAbs(p)
		if !ok {
			return ""
		}
		p = rel
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return ""
	}
	return p
}

// relFromAbs converts an absolute path inside the root to a relative one.
func (w *Workspace) relFromAbs(p string) (string, bool) {
	p = filepath.Clean(filepath.FromSlash(p))
	for _, base := range []string{w.dir} {
		rel, err := filepath.Rel(base, p)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

func splitPath(p string) []string {
	var out []string
	for _, e := range strings.Split(p, "/") {
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

func outsideRoot(p string) *Error {
	return newError(CodeOutsideRoot, p, "path resolves outside the workspace root",
		"use a path inside the workspace; symlinks that lead out of it are not followed", nil)
}

// bindFaults hands Options.Faults, if set, what reaches w: its fault
// hooks and its temporary names. Only tests set it.
func (w *Workspace) bindFaults() {
	if f := w.opts.Faults; f != nil {
		f.Bind(func(commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
			setFaults(w, commit, hist, led)
		}, w.eng.TempName)
	}
}

// setFaults installs fault-injection hooks on w: commit on the directory of
// every later commit's target, hist on its history store, led on its
// ledger. nil removes each. Only tests call it.
func setFaults(w *Workspace, commit atomicfile.Hook, hist history.Hook, led ledger.Hook) {
	w.eng.SetHook(commit)
	w.hist.SetHook(hist)
	w.led.SetHook(led)
}

// Recovery at Open: before the workspace serves any call (openState), the
// ledger's torn final line, if any, is copied to quarantine and cut
// (ledger.Open; complete lines are never cut), then the engine finishes
// what a crash left (engine.Engine.Recover, internal/engine/recover.go:
// the history's catch-up, intents without an outcome, interrupted
// transactions), opening each file as a change would (recoveryOpener).
// What it will not or cannot do is reported in Recovery. A shell command
// whose process is gone is ended by the next BeginCommand
// (recoverCommands).

// Recovery is what Open found and did before the workspace was ready.
type Recovery struct {
	// LedgerCut is the torn final ledger line Open cut (left by a process
	// killed mid-append), or nil. Its Quarantine names the file in the
	// state directory that keeps the cut bytes.
	LedgerCut *LedgerRecovery `json:"ledger_cut,omitempty"`
	// RolledBack are the patch transactions Open found unfinished and
	// rolled back: each of their files is as it was before the patch, and
	// what the rollback took away is in history.
	RolledBack []string `json:"rolled_back,omitempty"`
	// Warnings are what Open found worth telling a person about the state
	// directory: state it set aside, a state directory git tracks, an
	// intent editguard did not write.
	Warnings []RecoveryNote `json:"warnings,omitempty"`
	// Problems are the interrupted patch transactions Open could not
	// finish: journals it would not act on (UNSAFE_STATE: not MACed by
	// this workspace, damaged, naming a path a change may not reach, or a
	// file changed since the crash), kept for a person, and journals whose
	// recovery failed (IO), which the next Open tries again. Until then
	// their files may be partly changed.
	Problems []RecoveryNote `json:"problems,omitempty"`
}

// A RecoveryNote is one thing recovery reports.
type RecoveryNote struct {
	Code    Code   `json:"code,omitempty"`    // UNSAFE_STATE; IO for a failure the next Open retries; "" for a notice
	Subject string `json:"subject,omitempty"` // the entry, journal or ledger record it is about
	Message string `json:"message"`           // what a person is told
}

// Recovery returns what Open found and did; the caller may keep it.
func (w *Workspace) Recovery() *Recovery {
	r := w.recovery
	r.RolledBack = slices.Clone(r.RolledBack)
	r.Warnings = slices.Clone(r.Warnings)
	r.Problems = slices.Clone(r.Problems)
	return &r
}

// warn adds a warning to the recovery report.
func (w *Workspace) warn(code Code, subject, msg string) {
	w.recovery.Warnings = append(w.recovery.Warnings, RecoveryNote{Code: code, Subject: subject, Message: msg})
}

// problem adds a problem to the recovery report.
func (w *Workspace) problem(code Code, subject, msg string) {
	w.recovery.Problems = append(w.recovery.Problems, RecoveryNote{Code: code, Subject: subject, Message: msg})
}

// recoverAtOpen runs recovery once the ledger is open.
func (w *Workspace) recoverAtOpen() error {
	w.recovery.LedgerCut = w.led.Recovered()
	r, err := w.eng.Recover(recoveryOpener{w}, opRecover)
	w.recovery.RolledBack = r.RolledBack
	for _, n := range r.Notes {
		switch n.Kind {
		case engine.Foreign:
			w.warn(CodeUnsafeState, n.Subject, n.Why)
		case engine.Unsafe:
			entry := StateDir + "/" + n.Subject
			w.problem(CodeUnsafeState, entry, fmt.Sprintf("UNSAFE_STATE: %s %s; nothing it names was touched and it is kept: look at it and the files it names, then remove it", entry, n.Why))
		case engine.Retry:
			// Kept for the next Open; the workspace stays usable.
			w.problem(CodeIO, n.Subject, fmt.Sprintf("transaction %s was interrupted and could not be finished yet: %v", n.Subject, txError(n.Err)))
		}
	}
	return err
}

// recoveryOpener opens the files recovery acts on with the resolution
// and the policy of a tool's change.
type recoveryOpener struct{ w *Workspace }

func (o recoveryOpener) OpenTarget(p string) (*target, error) { return o.w.openTarget(p) }
func (o recoveryOpener) Changeable(t *target) error           { return o.w.checkChangeable(t) }
