package editguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
	"github.com/editguard/editguard/internal/textcodec"
)

// StateReader reads a workspace's ledger and history without opening the
// workspace, as VerifyDir does: it creates, repairs and locks nothing, so
// it works on a read-only copy of a workspace.
type StateReader struct {
	root  *os.File
	state *statedir.Dir
	hist  *history.Store // nil: the workspace has no history
	// versions caches each path's history versions, by path.
	versions map[string][]history.Version
}

// OpenStateReader opens the state directory of the workspace rooted at dir
// for reading. A state directory that editguard did not write for this
// user on this machine fails with UNSAFE_STATE, as in VerifyDir. A
// workspace without a state directory fails with an error matching
// fs.ErrNotExist.
func OpenStateReader(dir string) (*StateReader, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("editguard: open state: %w", err)
	}
	root, err := os.OpenFile(real, os.O_RDONLY|engine.ODirectory, 0) // a FIFO fails, not blocks
	if err != nil {
		return nil, fmt.Errorf("editguard: open state: %w", err)
	}
	r := &StateReader{root: root, versions: map[string][]history.Version{}}
	if err := r.open(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *StateReader) open() error {
	state, err := statedir.Lookup(r.root, "", StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("editguard: no %s directory: %w", StateDir, err)
	}
	if err != nil {
		return stateError("open state directory", err)
	}
	r.state = state
	if err := checkOwner(state, r.root.Name()); err != nil {
		return err
	}
	hd, err := state.Sub("history", false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return stateError("open history", err)
	}
	hs, err := history.Lookup(hd)
	if err != nil {
		hd.Close()
		return stateError("open history", err)
	}
	r.hist = hs
	return nil
}

// Close closes what OpenStateReader opened.
func (r *StateReader) Close() error {
	if r.hist != nil {
		r.hist.Close()
	}
	if r.state != nil {
		r.state.Close()
	}
	return r.root.Close()
}

// VerifyLedger checks the ledger's hash chain like Workspace.VerifyLedger.
func (r *StateReader) VerifyLedger() (int, error) {
	n, err := ledger.Verify(r.state, ledgerName)
	return n, readError("verify ledger", err)
}

// Records calls fn for the ledger's records of session (all sessions if
// session is ""), oldest first, as Workspace.Log gives them: an intent
// that an outcome follows is left out, and one that none follows comes
// after every other record.
func (r *StateReader) Records(session string, fn func(*LedgerRecord) error) error {
	return readError("read ledger", ledger.Filter(r.state, ledgerName, ledger.Match{Session: session}, fn))
}

// HistoryVersion returns the version id of the file p (as the ledger
// records it). A version history does not hold (never saved, or retired
// by retention) is an error matching fs.ErrNotExist.
func (r *StateReader) HistoryVersion(p, id string) (history.Version, error) {
	if r.hist == nil {
		return history.Version{}, history.ErrNoVersion
	}
	return r.hist.Get(p, id)
}

// Content returns a content of the file p that history keeps, by its
// SHA-256, checked against it. A content history does not hold is an
// error matching fs.ErrNotExist.
func (r *StateReader) Content(p, sum string) ([]byte, error) {
	if r.hist == nil {
		return nil, history.ErrNoVersion
	}
	vs, ok := r.versions[p]
	if !ok {
		var err error
		if vs, err = r.hist.List(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		r.versions[p] = vs
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if v := vs[i]; !v.Absent && v.SHA256 == sum {
			return r.load(p, v)
		}
	}
	return nil, history.ErrNoVersion
}

// load returns the content of the version v of p. A content larger than
// what history keeps inline is read from its object, without reading the
// index again.
func (r *StateReader) load(p string, v history.Version) ([]byte, error) {
	if limit := r.hist.InlineLimit(); limit >= 0 && v.Size > int64(limit) {
		data, err := r.hist.LoadObject(p, v.SHA256)
		if !errors.Is(err, fs.ErrNotExist) {
			return data, err
		}
	}
	_, data, err := r.hist.Load(p, v.ID)
	return data, err
}

// RefusalCode returns the error code the engine gives a text edit or text
// codec failure err (package textedit or textcodec), as Edit and Write
// report it.
func RefusalCode(err error) Code {
	var (
		ee *textcodec.EncodingError
		ue *textcodec.UnknownEncodingError
		le *textcodec.UnknownLineEndingError
	)
	if errors.Is(err, textcodec.ErrBinary) || errors.As(err, &ee) || errors.As(err, &ue) || errors.As(err, &le) {
		return codecError("", err).Code
	}
	return editError("", err).Code
}
