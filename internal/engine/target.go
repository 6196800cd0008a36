package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/ledger"
)

// Target is an opened parent directory and the final element of a
// resolved path: everything later steps do to the file goes through Dir
// and Base, so nothing after the resolution follows a symlink in the last
// element.
type Target struct {
	Path     string // as the caller gave it
	Lexical  string // path cleaned, relative to the root, symlinks not followed; "" if it leaves the root
	Resolved string
	Base     string
	DirFile  *os.File // nil when the parent directory does not exist
	Dir      *atomicfile.Dir
}

// Close closes the target's directory.
func (t *Target) Close() {
	if t.DirFile != nil {
		t.DirFile.Close()
	}
}

// ErrOutsideRoot is the error of a parent directory that the root's
// resolution finds outside the root.
var ErrOutsideRoot = errors.New("path escapes from the workspace root")

// OpenTarget opens the parent directory of resolved (a path relative to
// the root, symlinks already followed) through the root. A parent that
// does not exist, or is not a directory, leaves the target without one
// (Dir nil): the file is absent.
func (e *Engine) OpenTarget(p, lexical, resolved string) (*Target, error) {
	t := &Target{Path: p, Lexical: lexical, Resolved: resolved, Base: path.Base(resolved)}
	if err := e.openDir(t); err != nil {
		return nil, err
	}
	return t, nil
}

// ODirectory makes opening a parent fail with ENOTDIR when it is a file.
// O_NONBLOCK, which changes nothing for a directory, spares each open the
// runtime poller's fcntl calls to make the descriptor blocking (4 per
// commit): os.File then tries the poller once, which refuses a directory.
const ODirectory = syscall.O_DIRECTORY | syscall.O_NONBLOCK

// IsNotDir reports whether err says an element of a path is not a
// directory.
func IsNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// IsEscape reports whether err is os.Root's refusal of a path that leads
// out of the root.
func IsEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// openDir opens t's parent directory (see OpenTarget).
func (e *Engine) openDir(t *Target) error {
	f, err := e.cfg.Root.OpenFile(path.Dir(t.Resolved), os.O_RDONLY|ODirectory, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		if IsEscape(err) {
			return fmt.Errorf("%w: %w", ErrOutsideRoot, err)
		}
		if IsNotDir(err) {
			return nil
		}
		return err
	}
	e.setDir(t, f)
	return nil
}

// setDir makes the open directory f t's parent.
func (e *Engine) setDir(t *Target, f *os.File) {
	t.DirFile, t.Dir = f, atomicfile.NewDir(f)
	t.Dir.SetHook(e.hook)
}

// Observation is what was on disk at one moment: the stat and bytes of
// one open descriptor, so they describe the same file. Nothing writes to
// Data once it is read: the decoded text, the session's remembered bytes
// and the intent share it without a copy.
type Observation struct {
	Stat atomicfile.Stat
	Data []byte
	Sum  string
}

// MtimeMS is the file's modification time in milliseconds.
func (o *Observation) MtimeMS() int64 { return o.Stat.MtimeNS / 1e6 }

// Same reports whether o and p saw the same file: both absent, or both
// regular or not, with the same content.
func (o *Observation) Same(p *Observation) bool {
	return o.Stat.Exists == p.Stat.Exists && o.Sum == p.Sum && o.Stat.Regular() == p.Stat.Regular()
}

// LedgerState describes what o saw as a ledger record does.
func (o *Observation) LedgerState() *ledger.FileState {
	if !o.Stat.Exists {
		return &ledger.FileState{}
	}
	return &ledger.FileState{Exists: true, SHA256: o.Sum, Size: o.Stat.Size, MtimeMS: o.MtimeMS()}
}

// TooLargeError is the error of a file larger than the file size limit,
// which was not read.
type TooLargeError struct {
	Size, Limit int64
	Err         error
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("file of %d bytes is larger than the limit of %d", e.Size, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return e.Err }

// Observe reads the target under whatever lock the caller holds.
func (e *Engine) Observe(t *Target) (*Observation, error) {
	return e.observeExpecting(t, "", nil)
}

// observeExpecting is Observe for a caller that expects the file to hold
// expect, whose SHA-256 is sum: equal bytes are not hashed again.
func (e *Engine) observeExpecting(t *Target, sum string, expect []byte) (*Observation, error) {
	if t.Dir == nil {
		return &Observation{}, nil
	}
	st, data, sum, err := t.Dir.ReadFileExpect(t.Base, e.cfg.MaxFileSize, sum, expect)
	if errors.Is(err, atomicfile.ErrTooLarge) {
		return nil, &TooLargeError{Size: st.Size, Limit: e.cfg.MaxFileSize, Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &Observation{Stat: st, Data: data, Sum: sum}, nil
}
