package editguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// StateDir is the name of the directory under the root where editguard keeps
// its state (history, ledger, locks, CLI sessions). The tools refuse to read
// or write inside it.
const StateDir = ".editguard"

// Default limits.
const (
	DefaultMaxFileSize = 64 << 20
)

// Options configure a Workspace. The zero value is usable.
type Options struct {
	// MaxFileSize is the largest file the text tools read or change
	// (default 64 MiB); larger ones fail with TOO_LARGE.
	MaxFileSize int64
	// Deny lists slash-separated glob patterns, relative to the root, of
	// paths that may be read but never changed (PROTECTED_PATH). "**"
	// matches any number of path elements. nil means DefaultDeny.
	Deny []string
	// KeepVersions is how many history versions are kept per file
	// (default 50). HistoryMaxBytes caps the history's total size
	// (default 1 GiB).
	KeepVersions    int
	HistoryMaxBytes int64
}

// DefaultDeny protects the git repository's internals from writes.
var DefaultDeny = []string{".git/**"}

// Workspace is a directory tree that editguard guards. It is safe for
// concurrent use by many sessions and goroutines; other processes guarding
// the same root cooperate through the lock files under .editguard/.
type Workspace struct {
	dir   string   // absolute, symlinks resolved
	root  *os.Root // all file access goes through it
	opts  Options
	state string // absolute path of .editguard
	hist  *history.Store
	led   *ledger.Ledger

	pruning   sync.Mutex // held by the one background Prune at a time
	prunes    sync.WaitGroup
	commits   atomicCounter
	recovered *ledger.Recovery

	// unrecorded skips history and the ledger. Only benchmarks set it, to
	// measure what guarantees 4 and 5 cost.
	unrecorded bool
}

// Open opens the workspace rooted at dir, creating its state directory.
func Open(dir string, opts *Options) (*Workspace, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultMaxFileSize
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
	w := &Workspace{dir: real, root: root, opts: o, state: filepath.Join(real, StateDir)}
	for _, sub := range []string{"", "locks", "sessions"} {
		if err := root.MkdirAll(path.Join(StateDir, sub), 0o755); err != nil {
			root.Close()
			return nil, fmt.Errorf("editguard: create state directory: %w", err)
		}
	}
	hist, err := history.Open(filepath.Join(w.state, "history"), &history.Options{KeepVersions: o.KeepVersions, MaxBytes: o.HistoryMaxBytes})
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("editguard: open history: %w", err)
	}
	led, err := ledger.Open(w.LedgerPath(), nil)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("editguard: open ledger: %w", err)
	}
	w.hist, w.led, w.recovered = hist, led, led.Recovered()
	return w, nil
}

// LedgerPath returns the path of the workspace's ledger file.
func (w *Workspace) LedgerPath() string { return filepath.Join(w.state, "ledger.jsonl") }

// LedgerRecovery reports a torn final ledger line that Open cut (left by a
// process killed mid-append), or nil.
func (w *Workspace) LedgerRecovery() *ledger.Recovery { return w.recovered }

// Dir returns the workspace's root directory (absolute, symlinks resolved).
func (w *Workspace) Dir() string { return w.dir }

// Close waits for background history pruning and releases the workspace.
func (w *Workspace) Close() error {
	w.prunes.Wait()
	err := w.led.Close()
	if cerr := w.root.Close(); err == nil {
		err = cerr
	}
	return err
}

// resolve maps a caller's path to a slash-separated path relative to the root
// with no symlink in it, following symlinks that stay inside the root the way
// the kernel would (".." after a symlink goes up from the link's target).
// Paths that leave the root, through "..", an absolute path or a symlink,
// fail with OUTSIDE_ROOT; paths into .editguard/ with PROTECTED_PATH.
// The final element may not exist.
func (w *Workspace) resolve(p string) (string, error) {
	if p == "" {
		return "", newError(CodeInvalidArgument, p, "path is empty", "pass a file path relative to the workspace root", nil)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", newError(CodeInvalidArgument, p, "path contains a NUL byte", "", nil)
	}
	p = filepath.ToSlash(p)
	if path.IsAbs(p) || filepath.IsAbs(p) {
		rel, ok := w.relFromAbs(p)
		if !ok {
			return "", outsideRoot(p)
		}
		p = rel
	}
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
				return "", outsideRoot(p)
			}
			done = done[:len(done)-1]
			continue
		}
		if len(elem) > 255 {
			return "", newError(CodeInvalidArgument, p, "a path element is longer than 255 bytes", "", nil)
		}
		cur := path.Join(append(done, elem)...)
		fi, err := w.root.Lstat(cur)
		if err != nil {
			// A missing element, or one under a regular file (ENOTDIR):
			// the rest of the path cannot contain symlinks either.
			if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
				done = append(done, elem)
				continue
			}
			if isEscape(err) {
				return "", outsideRoot(p)
			}
			return "", newError(CodeIO, p, err.Error(), "", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, elem)
			continue
		}
		if hops++; hops > 40 {
			return "", newError(CodeInvalidArgument, p, "too many levels of symbolic links", "", nil)
		}
		target, err := w.root.Readlink(cur)
		if err != nil {
			return "", newError(CodeIO, p, err.Error(), "", err)
		}
		target = filepath.ToSlash(target)
		if path.IsAbs(target) || filepath.IsAbs(target) {
			rel, ok := w.relFromAbs(target)
			if !ok {
				return "", outsideRoot(p)
			}
			done = nil
			target = rel
		}
		todo = append(splitPath(target), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	res := path.Join(done...)
	if done[0] == StateDir {
		return "", newError(CodeProtectedPath, p, "editguard's own state directory is off limits to the tools", "", nil)
	}
	return res, nil
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

func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// denied reports whether resolved matches a Deny pattern.
func (w *Workspace) denied(resolved string) (string, bool) {
	for _, pat := range w.opts.Deny {
		if globMatch(pat, resolved) {
			return pat, true
		}
	}
	return "", false
}

// globMatch matches a slash-separated path against a pattern in which "**"
// matches zero or more whole path elements and other elements follow
// path.Match.
func globMatch(pattern, name string) bool {
	return matchElems(splitPath(pattern), splitPath(name))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
