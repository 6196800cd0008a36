package engine

import (
	"cmp"
	"slices"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"golang.org/x/sys/unix"
)

// A transaction's files are put in place with the steps of a single
// file's commit (atomicfile.Staged), each step paid once for all of them.
// They are named, not numbered: docs/ARCHITECTURE.md §2.3 numbers the
// transaction as a whole, and cites these by name:
//
//   - stage: every new content under its temporary name, each fsynced; past
//     FsyncObjects files where there is syncfs (bulk, OneByOne), none is;
//   - durable: in bulk, one syncfs per file system that holds a file or
//     the history makes the temporary files and the history's index lines
//     durable together (an fsync pays for a file's own bytes, a syncfs for
//     everything dirty on the file system, so it pays off only for many);
//     else the index lines are synced, as the temporary files already are;
//   - journal: the journal, durable;
//   - swap: each file in turn;
//   - settle: one fsync per directory, for all of its swaps, then
//     finish: what each swap displaced is taken off, after that fsync, so
//     that a crash in between leaves an extra temporary file, never a
//     missing target.
//
// A failure before the swaps changes nothing. A failure at a swap puts
// back the files already swapped (undoFile). A failure after the swaps is a
// warning, as for a single file's commit. commitTx runs the steps in this
// order; RunTx (set.go) saves what each name holds to history before it,
// and after it has the session write the transaction's records, then
// removes the journal.

// commitTx puts a transaction's files in place (the steps above), under
// the locks of every file and directory (LockTx), which RunTx holds:
// histPaths are the paths whose history index lines durable makes durable
// with the temporary files, j is the transaction's journal (written with
// the ledger's end and its MAC). Past FsyncObjects files whole file
// systems are synced where syncfs may stand in for the files' fsyncs
// (OneByOne, txFDs). settled are the warnings of settle's failures
// (*PathError), since the changes are made. An error before the swaps
// changed nothing: a *PathError (Journal set for the journal). An
// error at a swap is
// a *SwapError, once the files swapped before it are put back under
// session and undoOp.
func (e *Engine) commitTx(files []*txFile, j *Journal, histPaths []string, session, undoOp string) (settled []error, err error) {
	bulk := !OneByOne(len(files), e.txFDs(files)...)
	st, err := e.stage(files, session, bulk)
	if err != nil {
		return nil, err
	}
	defer st.abort()
	if err := st.durable(histPaths); err != nil {
		return nil, err
	}
	if err := e.writeJournal(j); err != nil {
		return nil, &PathError{Journal: true, Err: err}
	}
	for i := range files {
		if err := st.swap(i); err != nil {
			// The files swapped so far are settled, then put back.
			st.settle(session)
			return nil, e.undoTx(j, files, i, err, session, undoOp)
		}
	}
	return st.settle(session), nil
}

// txFDs returns the descriptors of the file systems a transaction of
// files writes to: each file's directory and the history's; none if a
// directory is not open, which makes OneByOne fsync each file.
func (e *Engine) txFDs(files []*txFile) []int {
	fds := []int{e.histFD()}
	for _, f := range files {
		if f.T.Dir == nil {
			return nil
		}
		fds = append(fds, f.T.Dir.Fd())
	}
	return fds
}

// A SwapError is a transaction's failure at the swap of its file I (Err:
// atomicfile's ErrExist, ErrRaced, or another, or SwapLock's ErrReplaced):
// that file is unchanged, and the files swapped before it were put back
// and the journal removed, or, if putting them back failed (RollBack),
// the journal is kept for the next Open to finish.
type SwapError struct {
	I        int
	Err      error
	RollBack error
}

func (e *SwapError) Error() string { return e.Err.Error() }
func (e *SwapError) Unwrap() error { return e.Err }

// undoTx puts back the files of j that the transaction had swapped when
// its i-th file failed to swap with err, then drops the journal.
func (e *Engine) undoTx(j *Journal, files []*txFile, i int, err error, session, undoOp string) *SwapError {
	targets := make([]*Target, len(files))
	for k, f := range files {
		targets[k] = f.T
	}
	if rerr := e.rollBack(j, targets, session, undoOp); rerr != nil {
		return &SwapError{I: i, Err: err, RollBack: rerr}
	}
	e.removeJournal(j.ID)
	return &SwapError{I: i, Err: err}
}

// txFile is one file of a transaction: where it is, what was observed
// there, and what the transaction puts there.
type txFile struct {
	T      *Target
	Obs    *Observation
	Data   []byte // the new content; nil with Remove
	Remove bool
	// MtimeMS is the new file's modification time, once settled.
	MtimeMS int64
}

// A PathError is the failure of a change's step at one file's path, or of
// what the change keeps beside the file, which changed nothing: History,
// what it displaces made durable in history; Sweep, the sweep of what a
// dead writer left under its temporary name (sweepTemp); Journal, a
// transaction's journal (no Path).
type PathError struct {
	Path                    string
	History, Sweep, Journal bool
	Err                     error
}

func (e *PathError) Error() string {
	if e.Journal {
		return "writing the transaction's journal: " + e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}
func (e *PathError) Unwrap() error { return e.Err }

// txDir is one directory of a transaction's files.
type txDir struct {
	dev, ino uint64
	t        *Target // the first target in it, whose open directory stands for it
}

// dirsInLockOrder returns the open directories of targets, each once, in (device,
// inode) order: the order their commit locks are taken in.
func dirsInLockOrder(targets []*Target) ([]*Target, error) {
	dirs, _, err := txDirs(targets)
	if err != nil {
		return nil, err
	}
	out := make([]*Target, len(dirs))
	for i, d := range dirs {
		out[i] = d.t
	}
	return out, nil
}

// txDirs returns the directories of targets, each once, in (device, inode)
// order, and for each target the index of its directory among them (-1
// for one with none open).
func txDirs(targets []*Target) ([]txDir, []int, error) {
	var dirs []txDir
	ids := make([]txDir, len(targets))
	for i, t := range targets {
		d, ok, err := dirOf(t)
		if err != nil {
			return nil, nil, err
		}
		ids[i] = d
		if ok && !slices.ContainsFunc(dirs, d.same) {
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b txDir) int {
		if a.dev != b.dev {
			return cmp.Compare(a.dev, b.dev)
		}
		return cmp.Compare(a.ino, b.ino)
	})
	of := make([]int, len(targets))
	for i, d := range ids {
		of[i] = slices.IndexFunc(dirs, d.same)
	}
	return dirs, of, nil
}

// same reports whether o is the directory d is.
func (d txDir) same(o txDir) bool { return d.t != nil && o.dev == d.dev && o.ino == d.ino }

// dirOf identifies t's open directory; ok is false if it has none.
func dirOf(t *Target) (d txDir, ok bool, err error) {
	if t.DirFile == nil {
		return d, false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(t.DirFile.Fd()), &st); err != nil {
		return d, false, &PathError{Path: t.Path, Err: err}
	}
	return txDir{uint64(st.Dev), st.Ino, t}, true, nil
}

// stagedTx is a transaction's files between stage and settle.
type stagedTx struct {
	e      *Engine
	files  []*txFile
	staged []*atomicfile.Staged // by file; nil once aborted or finished
	dirs   []txDir
	dirOf  []int // by file: its directory's index in dirs
	bulk   bool
}

// stage writes every file's new content under its temporary name,
// sweeping what a dead writer left there into history under session.
// On error (a *PathError) nothing is left staged.
func (e *Engine) stage(files []*txFile, session string, bulk bool) (*stagedTx, error) {
	targets := make([]*Target, len(files))
	for i, f := range files {
		targets[i] = f.T
	}
	dirs, of, err := txDirs(targets)
	if err != nil {
		return nil, err
	}
	st := &stagedTx{e: e, files: files, staged: make([]*atomicfile.Staged, len(files)), dirs: dirs, dirOf: of, bulk: bulk}
	for i, f := range files {
		st.staged[i], err = e.stageFile(f, session, bulk)
		if err != nil {
			st.abort()
			return nil, &PathError{Path: f.T.Path, Err: err}
		}
	}
	return st, nil
}

// stageFile is stage for one file.
func (e *Engine) stageFile(f *txFile, session string, bulk bool) (*atomicfile.Staged, error) {
	tmp, err := e.sweepTemp(f.T, session)
	if err != nil {
		return nil, err
	}
	s, err := stage(f.T, f.Obs, &Change{Data: f.Data, Remove: f.Remove}, tmp, e.parkDir())
	if err != nil {
		return nil, err
	}
	if bulk {
		// durable makes it durable, with the others.
		err = s.SkipSync()
	} else {
		err = s.Sync()
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// durable makes the history index lines of histPaths durable. In bulk
// it syncs the file system of every directory and, if none of them holds
// it, the history's.
func (st *stagedTx) durable(histPaths []string) error {
	e, first := st.e, st.files[0].T.Path
	if !st.bulk {
		if err := e.cfg.Hist.SyncIndexes(histPaths); err != nil {
			return &PathError{Path: first, History: true, Err: err}
		}
		return nil
	}
	var hs unix.Stat_t
	if err := unix.Fstat(e.histFD(), &hs); err != nil {
		return &PathError{Path: first, History: true, Err: err}
	}
	histSynced := false
	for i, d := range st.dirs {
		if i > 0 && st.dirs[i-1].dev == d.dev {
			continue
		}
		if err := d.t.Dir.SyncFS(); err != nil {
			return &PathError{Path: d.t.Path, Err: err}
		}
		histSynced = histSynced || d.dev == uint64(hs.Dev)
	}
	if !histSynced {
		if err := SyncFS(e.histFD()); err != nil {
			return &PathError{Path: first, History: true, Err: err}
		}
	}
	return nil
}

// swap is the swap of the i-th file. On error the file is unchanged, and
// the error is atomicfile's (ErrExist, ErrRaced, or another).
func (st *stagedTx) swap(i int) error {
	err := st.staged[i].Swap()
	if err == nil {
		return nil
	}
	st.staged[i] = nil
	return err
}

// settle is the directories' fsync and finish for the files swapped so
// far: it returns an error (a *PathError) for each step that failed, to be
// reported as a warning, since the changes are made. Bytes another program wrote into a
// displaced file are kept in history under session.
func (st *stagedTx) settle(session string) []error {
	var failed []error
	synced := make([]error, len(st.dirs))
	for i, d := range st.dirs {
		synced[i] = d.t.Dir.Sync()
	}
	for i, f := range st.files {
		sf := st.staged[i]
		if sf == nil || sf.Result().Strategy == "" {
			continue
		}
		st.staged[i] = nil
		var err error
		if di := st.dirOf[i]; di >= 0 {
			err = synced[di]
		}
		var r atomicfile.Result
		if err != nil {
			// Not ours to remove until the swap is known durable.
			sf.Abort()
			r = sf.Result()
		} else {
			r, err = sf.Finish()
		}
		if err != nil {
			failed = append(failed, &PathError{Path: f.T.Path, Err: err})
		}
		f.MtimeMS = r.Stat.MtimeNS / 1e6
		if len(r.Displaced) > 0 {
			st.e.keepDisplaced(f.T, session, r.Displaced)
		}
	}
	return failed
}

// abort removes the temporary files of the files not swapped.
func (st *stagedTx) abort() {
	for i, sf := range st.staged {
		if sf != nil && sf.Result().Strategy == "" {
			sf.Abort()
			st.staged[i] = nil
		}
	}
}

// opDisplaced is the op of the history version that keeps bytes another
// program wrote into a displaced file.
const opDisplaced = "displaced_write"

// keepDisplaced saves bytes that another program wrote into a displaced
// file, which would otherwise be lost with it, as a version of the file
// under session, and returns the version (or why it was not kept).
func (e *Engine) keepDisplaced(t *Target, session string, data []byte) string {
	v, err := e.cfg.Hist.Save(t.Resolved, data, false, "", history.Meta{Op: opDisplaced, Session: session})
	if err != nil {
		return "(not kept: " + err.Error() + ")"
	}
	return v.ID
}
