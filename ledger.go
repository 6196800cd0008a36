package editguard

import (
	"crypto/sha256"
	"encoding/hex"
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
