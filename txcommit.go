package editguard

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"golang.org/x/sys/unix"
)

// A transaction's files are put in place with the steps of a single
// file's commit (atomicfile.Staged), each step paid once for all of them:
//
//  1. stage: every new content under its temporary name, each fsynced; past
//     engine.FsyncObjects files where there is syncfs (bulk, oneByOne), none is;
//  2. durable: in bulk, one syncfs per file system that holds a file or
//     the history makes the temporary files and the history's index lines
//     durable together (an fsync pays for a file's own bytes, a syncfs for
//     everything dirty on the file system, so it pays off only for many);
//     else the index lines are synced, as the temporary files already are;
//  3. the journal, durable (commitTx);
//  4. swap: each file in turn;
//  5. one fsync per directory, for all of its swaps;
//  6. finish: what each swap displaced is taken off, after that fsync, so
//     that a crash in between leaves an extra temporary file, never a
//     missing target.
//
// A failure before step 4 changes nothing. A failure at a swap puts back the
// files already swapped (commitTx rolls back). A failure after the swaps is
// a warning, as for a single file's commit.

// txDir is one directory of a transaction's files.
type txDir struct {
	dev, ino uint64
	t        *target // the first target in it, whose open directory stands for it
}

// txDirs returns the directories of files, each once, in (device, inode)
// order: the order their commit locks are taken in; and for each file the
// index of its directory among them (-1 for a file with none open).
func txDirs(files []*txFile) ([]txDir, []int, error) {
	var dirs []txDir
	ids := make([]txDir, len(files))
	for i, f := range files {
		d, ok, err := dirOf(f.t)
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
	of := make([]int, len(files))
	for i, d := range ids {
		of[i] = slices.IndexFunc(dirs, d.same)
	}
	return dirs, of, nil
}

// same reports whether o is the directory d is.
func (d txDir) same(o txDir) bool { return d.t != nil && o.dev == d.dev && o.ino == d.ino }

// dirOf identifies t's open directory; ok is false if it has none.
func dirOf(t *target) (d txDir, ok bool, err error) {
	if t.DirFile == nil {
		return d, false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(t.DirFile.Fd()), &st); err != nil {
		return d, false, ioError(t.Path, err)
	}
	return txDir{uint64(st.Dev), st.Ino, t}, true, nil
}

// stagedTx is a transaction's files between step 1 and step 6.
type stagedTx struct {
	w      *Workspace
	files  []*txFile
	staged []*atomicfile.Staged // by file; nil once aborted or finished
	dirs   []txDir
	dirOf  []int // by file: its directory's index in dirs
	bulk   bool
}

// stageTx writes every file's new content under its temporary name (step
// 1). On error nothing is left staged.
func (w *Workspace) stageTx(files []*txFile, session string, bulk bool) (*stagedTx, error) {
	dirs, of, err := txDirs(files)
	if err != nil {
		return nil, err
	}
	st := &stagedTx{w: w, files: files, staged: make([]*atomicfile.Staged, len(files)), dirs: dirs, dirOf: of, bulk: bulk}
	for i, f := range files {
		st.staged[i], err = w.stageFile(f, session, bulk)
		if err != nil {
			st.abort()
			return nil, err
		}
	}
	return st, nil
}

// stageFile is step 1 for one file.
func (w *Workspace) stageFile(f *txFile, session string, bulk bool) (*atomicfile.Staged, error) {
	tmp, err := w.eng.SweepTemp(f.t, session)
	if err != nil {
		return nil, ioError(f.t.Path, err)
	}
	opts := atomicfile.Options{Temp: tmp, Park: w.eng.ParkDir(), SyncLater: bulk}
	var sf *atomicfile.Staged
	switch {
	case !f.obs.Stat.Exists:
		opts.UID, opts.GID = -1, -1
		sf, err = f.t.Dir.StageCreate(f.t.Base, f.data, opts)
	case f.remove:
		sf, err = f.t.Dir.StageRemove(f.t.Base, f.obs.Sum, opts)
	default:
		opts.Mode, opts.UID, opts.GID = f.obs.Stat.Mode, f.obs.Stat.UID, f.obs.Stat.GID
		opts.Expect = f.obs.Data
		sf, err = f.t.Dir.StageReplace(f.t.Base, f.data, f.obs.Sum, opts)
	}
	if err != nil {
		return nil, ioError(f.t.Path, err)
	}
	return sf, nil
}

// durable is step 2. In bulk it syncs the file system of every directory
// and, if none of them holds it, the history's.
func (st *stagedTx) durable(histPaths []string) error {
	w := st.w
	if !st.bulk {
		if err := w.hist.SyncIndexes(histPaths); err != nil {
			return historyFailed(st.files[0].t.Path, err)
		}
		return nil
	}
	var hs unix.Stat_t
	if err := unix.Fstat(int(w.histDir.File().Fd()), &hs); err != nil {
		return historyFailed(st.files[0].t.Path, err)
	}
	histSynced := false
	for i, d := range st.dirs {
		if i > 0 && st.dirs[i-1].dev == d.dev {
			continue
		}
		if err := d.t.Dir.SyncFS(); err != nil {
			return ioError(d.t.Path, err)
		}
		histSynced = histSynced || d.dev == uint64(hs.Dev)
	}
	if !histSynced {
		if err := engine.SyncFS(int(w.histDir.File().Fd())); err != nil {
			return historyFailed(st.files[0].t.Path, err)
		}
	}
	return nil
}

// swap is step 4 for the i-th file. On error the file is unchanged.
func (st *stagedTx) swap(i int) error {
	f := st.files[i]
	err := st.staged[i].Swap()
	if err == nil {
		return nil
	}
	st.staged[i] = nil
	return st.w.commitError(f.t, f.obs, err)
}

// settle is steps 5 and 6 for the files swapped so far: it returns a
// warning for each step that failed, since the changes are made.
func (st *stagedTx) settle(session string) []string {
	var warnings []string
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
			warnings = append(warnings, fmt.Sprintf("%s is changed, but %v", f.t.Path, ioError(f.t.Path, err)))
		}
		f.mtimeMS = r.Stat.MtimeNS / 1e6
		if len(r.Displaced) > 0 {
			st.w.keepDisplaced(f.t, session, r.Displaced)
		}
	}
	return warnings
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

// commitError turns the error of a failed swap into the caller's: a file
// created or changed by another program since it was checked (obs) is
// STALE_FILE with what it holds now.
func (w *Workspace) commitError(t *target, obs *observation, err error) error {
	switch {
	case errors.Is(err, engine.ErrReplaced):
		return w.unchanged(t, obs, "before it was replaced")
	case errors.Is(err, atomicfile.ErrExist):
		now, _ := w.observe(t)
		if now == nil {
			now = &observation{}
		}
		return stale(t.Path, ReasonCreated, now)
	case errors.Is(err, atomicfile.ErrRaced):
		now, _ := w.observe(t)
		if now == nil {
			now = &observation{}
		}
		reason := ReasonModified
		if !now.Stat.Exists {
			reason = ReasonDeleted
		}
		e := stale(t.Path, reason, now)
		e.Message = "file was changed by another program during the commit; nothing was written"
		e.Err = err
		return e
	}
	var e *Error
	if errors.As(err, &e) {
		return err // from ready
	}
	return ioError(t.Path, err)
}
