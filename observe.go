package editguard

import (
	"errors"
	"io/fs"
	"os"
	"path"

	"github.com/editguard/editguard/internal/atomicfile"
)

// observation is what was on disk at one moment: the stat and bytes of one
// open descriptor, so they describe the same file. Nothing writes to data
// once it is read: the decoded text, the session's remembered bytes and
// the intent share it without a copy.
type observation struct {
	stat atomicfile.Stat
	data []byte
	sum  string
}

func (o *observation) mtimeMS() int64 { return o.stat.MtimeNS / 1e6 }

func (o *observation) state() FileState {
	if !o.stat.Exists {
		return FileState{}
	}
	return FileState{Exists: true, SHA256: o.sum, Size: o.stat.Size, MtimeMS: o.mtimeMS()}
}

// target is an opened parent directory and the final element of a resolved
// path.
type target struct {
	path     string // as the caller gave it
	lexical  string // path cleaned, relative to the root, symlinks not followed; "" if it leaves the root
	resolved string
	base     string
	dirFile  *os.File // nil when the parent directory does not exist
	dir      *atomicfile.Dir
}

func (t *target) close() {
	if t.dirFile != nil {
		t.dirFile.Close()
	}
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
	t := &target{path: p, lexical: w.lexical(p), resolved: resolved, base: path.Base(resolved)}
	if err := t.openDir(w); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *target) openDir(w *Workspace) error {
	f, err := w.root.OpenFile(path.Dir(t.resolved), os.O_RDONLY|oDirectory, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		if isEscape(err) {
			return outsideRoot(t.path)
		}
		if isNotDir(err) {
			return nil
		}
		return newError(CodeIO, t.path, err.Error(), "", err)
	}
	t.dirFile, t.dir = f, atomicfile.NewDir(f)
	t.dir.SetHook(w.commitHook)
	return nil
}

// observe reads the target under whatever lock the caller holds.
func (w *Workspace) observe(t *target) (*observation, error) {
	return w.observeExpecting(t, "", nil)
}

// observeExpecting is observe for a caller that expects the file to hold
// expect, whose SHA-256 is sum: equal bytes are not hashed again.
func (w *Workspace) observeExpecting(t *target, sum string, expect []byte) (*observation, error) {
	if t.dir == nil {
		return &observation{}, nil
	}
	st, data, sum, err := t.dir.ReadFileExpect(t.base, w.opts.MaxFileSize, sum, expect)
	if errors.Is(err, atomicfile.ErrTooLarge) {
		e := newError(CodeTooLarge, t.path, "file is larger than the limit", "", err)
		e.Details["size_bytes"] = st.Size
		e.Details["limit_bytes"] = w.opts.MaxFileSize
		return nil, e
	}
	if err != nil {
		return nil, ioError(t.path, err)
	}
	return &observation{stat: st, data: data, sum: sum}, nil
}
