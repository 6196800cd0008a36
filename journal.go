//go:build unix

package editguard

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/mounts"
	"github.com/editguard/editguard/internal/watch"
	"golang.org/x/sys/unix"
)

// Checkpoints from a change journal.
//
// A checkpoint walks and stats every covered file. With a change journal
// (a watcher of the tree, internal/watch) it need not: it starts from an
// earlier checkpoint and reads again only the paths the journal says
// changed since a mark taken before that checkpoint's scan began, walking
// the whole subtree of a changed directory (see checkpoints.scanDirty). The
// result is the manifest a full scan would make; the full scan stays the
// ground truth, and is what runs whenever the journal cannot vouch for the
// time since the mark: no journal, no mark for the earlier checkpoint, an
// overflow of the kernel's queue, a watch that could not be added, the
// root moved, the coverage rules or git's index changed since.
//
// Ordering. A mark names a sync point (internal/watch): every change made
// before it is in the journal when the mark is given, with the watches of
// the directories made before it added. A checkpoint takes its mark before
// its scan starts, so its manifest reflects every change before the mark,
// and every change after the mark is in the journal under a later number.
// So the next checkpoint, from that manifest and the changes since that
// mark, misses nothing a full scan would see (the gaps of inotify itself
// aside: see below).
//
// The marks of manifests are remembered in memory by the process that
// made them (a hook server, an exec), and the mark of the last checkpoint
// also in .editguard/checkpoints/watchmark ("NAME ID SEQ"), for an exec in
// another process that uses the hook server's journal. A journal's ID
// changes whenever it is made again, so a mark of a journal that failed or
// ended never matches.
//
// What inotify does not see, a checkpoint from the journal does not
// either: a write through a shared mmap, a write through a hard link from
// outside the tree, a change on a network file system made by another
// host. EDITGUARD_NO_WATCH=1 in the environment turns every journal off:
// each checkpoint is a full scan.

// JournalMark names a point in a change journal's history.
type JournalMark struct {
	ID  string
	Seq uint64
}

// JournalChange is a path (slash-separated, relative to the root) that
// changed since a mark; Created says a directory was made or moved in
// there, its subtree unseen.
type JournalChange struct {
	Path    string
	Created bool
}

// A ChangeJournal reports which paths of the workspace changed since a
// mark. Since returns them and the mark of now, after a sync point; ok
// false says it cannot vouch for the time since m (a full scan is then
// needed); now.ID "" says it has no mark to give.
type ChangeJournal interface {
	Since(m JournalMark) (changes []JournalChange, now JournalMark, ok bool)
}

// NoWatchEnv, set to 1, turns change journals off; WatchEnv, set to 1,
// sets Options.WatchCommands for every workspace.
const (
	NoWatchEnv = "EDITGUARD_NO_WATCH"
	WatchEnv   = "EDITGUARD_WATCH"
)

// watchDisabled reports whether the environment turns journals off.
func watchDisabled() bool { return os.Getenv(NoWatchEnv) == "1" }

// journalState is a workspace's journal and the marks of its manifests.
type journalState struct {
	mu    sync.Mutex
	j     ChangeJournal
	own   *fsJournal
	marks map[string]JournalMark // manifest name -> the mark taken before its scan
	order []string
	// manifests this process wrote or read, by name, with their SHA-256:
	// a manifest never changes once written.
	cache []cachedManifest
	// fullScans and dirtyScans count the checkpoints taken each way
	// with a journal; fault, for tests, is the watcher's Options.Fault.
	fullScans, dirtyScans atomic.Int64
	fault                 func(rel string) error
	faultOn               atomic.Bool       // for tests' fault
	tried                 bool              // watchForCommand tried to start one
	bases                 map[string]string // manifest name -> its base (setBase)
	// kept are the bases of the last manifests written or read in full,
	// by their full manifest's name and sum (keepBase).
	kept []*fileBase
}

type cachedManifest struct {
	name, sum string
	id        [4]int64 // manifestID when cached
	m         *cpManifest
}

// maxMarks bounds the marks remembered.
const maxMarks = 64

// SetChangeJournal makes checkpoints use j (nil: none). A journal the
// workspace started (Watch) is stopped.
func (w *Workspace) SetChangeJournal(j ChangeJournal) {
	w.jr.mu.Lock()
	own := w.jr.own
	w.jr.j, w.jr.own = j, nil
	w.jr.mu.Unlock()
	if own != nil {
		own.close()
	}
}

// Watch starts the workspace's own change journal, an inotify watch of
// every covered directory, and makes checkpoints use it. It returns the
// journal, which the caller may hand to other processes (the hook server
// answers execs with it); Close stops it.
func (w *Workspace) Watch() (ChangeJournal, error) {
	if watchDisabled() {
		return nil, errors.New(NoWatchEnv + "=1: change journals are off")
	}
	fj := &fsJournal{w: w}
	if err := fj.build(); err != nil {
		return nil, err
	}
	w.SetChangeJournal(fj)
	w.jr.mu.Lock()
	w.jr.own = fj
	w.jr.mu.Unlock()
	return fj, nil
}

// StartWatch is Watch without waiting for the watches: the journal is the
// workspace's at once, and it adds a watch to every covered directory in
// the background while the caller goes on (BeginCommand reads the last
// manifest meanwhile). Its first Since waits for them, so a mark is still
// given only once every directory is watched. A journal whose watches
// cannot all be added vouches for nothing: checkpoints scan in full, as
// without one, until it is made again (Since, after retryWatch).
func (w *Workspace) StartWatch() {
	if watchDisabled() {
		return
	}
	fj := &fsJournal{w: w}
	fj.mu.Lock() // held until the watches are added
	w.SetChangeJournal(fj)
	w.jr.mu.Lock()
	w.jr.own = fj
	w.jr.mu.Unlock()
	go func() {
		defer fj.mu.Unlock()
		if err := fj.build(); err != nil {
			fj.lastError, fj.retry = err, time.Now().Add(retryWatch)
		}
	}()
}

// watchForCommand starts the workspace's journal for BeginCommand if
// Options.WatchCommands (or WatchEnv) asks for one and it has none. A
// journal that cannot start leaves the checkpoints full scans.
func (w *Workspace) watchForCommand() {
	if !w.opts.WatchCommands && os.Getenv(WatchEnv) != "1" || watchDisabled() {
		return
	}
	w.jr.mu.Lock()
	has := w.jr.j != nil || w.jr.tried
	w.jr.tried = true
	w.jr.mu.Unlock()
	if !has {
		w.StartWatch()
	}
}

func (w *Workspace) journal() ChangeJournal {
	if watchDisabled() {
		return nil
	}
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	return w.jr.j
}

func (w *Workspace) stopJournal() { w.SetChangeJournal(nil) }

// setMark remembers that manifest name's scan began after mark m.
func (w *Workspace) setMark(name string, m JournalMark) {
	if m.ID == "" {
		return
	}
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	if w.jr.marks == nil {
		w.jr.marks = map[string]JournalMark{}
	}
	if _, ok := w.jr.marks[name]; !ok {
		w.jr.order = append(w.jr.order, name)
	}
	w.jr.marks[name] = m
	for len(w.jr.order) > maxMarks {
		delete(w.jr.marks, w.jr.order[0])
		w.jr.order = w.jr.order[1:]
	}
}

func (w *Workspace) markOf(name string) (JournalMark, bool) {
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	m, ok := w.jr.marks[name]
	return m, ok
}

// maxKeptBases is how many bases a workspace keeps by their full
// manifest's name: the current one and the one before.
const maxKeptBases = 2

// keepBase remembers b, which a full manifest on disk holds (b.written),
// so that a delta another process writes on that manifest is read without
// reading the full one again.
func (w *Workspace) keepBase(b *fileBase) {
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	if slices.Contains(w.jr.kept, b) {
		return
	}
	w.jr.kept = append(w.jr.kept, b)
	if len(w.jr.kept) > maxKeptBases {
		w.jr.kept = w.jr.kept[len(w.jr.kept)-maxKeptBases:]
	}
}

// keptBase returns the base the full manifest name holds, if its SHA-256
// is sum ("" for any) and this process keeps it: the content that sum
// names, whether or not the file is still there.
func (w *Workspace) keptBase(name, sum string) *fileBase {
	w.jr.mu.Lock()
	kept := slices.Clone(w.jr.kept)
	w.jr.mu.Unlock()
	for _, b := range kept {
		if n, s := b.written(); n == name && (sum == "" || s == sum) {
			return b
		}
	}
	return nil
}

// maxCachedManifests is how many manifests a workspace keeps in memory:
// the last checkpoint and a command's first, and one more.
const maxCachedManifests = 3

// cachedManifest returns the manifest name, of SHA-256 sum if sum is not
// "", if this process has it and its file is as it was (a manifest
// changed on disk is read again, and refused if sealed, as any other).
func (cp *checkpoints) cachedManifest(name, sum string) *cpManifest {
	w := cp.w
	w.jr.mu.Lock()
	var c cachedManifest
	for _, x := range w.jr.cache {
		if x.name == name && (sum == "" || sum == x.sum) {
			c = x
		}
	}
	w.jr.mu.Unlock()
	if c.m == nil || cp.manifestID(name) != c.id {
		return nil
	}
	return c.m
}

// manifestID is the identity of the manifest file name: inode, size,
// mtime and ctime; zero if it cannot be had.
func (cp *checkpoints) manifestID(name string) [4]int64 {
	var st unix.Stat_t
	if unix.Fstatat(int(cp.manifests.File().Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return [4]int64{}
	}
	return [4]int64{int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
}

func (cp *checkpoints) cacheManifest(name, sum string, m *cpManifest) {
	id := cp.manifestID(name)
	if id == ([4]int64{}) {
		return
	}
	w := cp.w
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	c := w.jr.cache[:0]
	for _, x := range w.jr.cache {
		if x.name != name {
			c = append(c, x)
		}
	}
	w.jr.cache = append(c, cachedManifest{name, sum, id, m})
	if len(w.jr.cache) > maxCachedManifests {
		w.jr.cache = w.jr.cache[len(w.jr.cache)-maxCachedManifests:]
	}
}

// watchMarkFile holds the mark of the last checkpoint's scan.
const watchMarkFile = "watchmark"

func (cp *checkpoints) saveWatchMark(name string, m JournalMark) {
	if m.ID == "" {
		cp.dir.Remove(watchMarkFile)
		return
	}
	cp.dir.WriteFileVolatile(watchMarkFile, []byte(name+" "+m.ID+" "+strconv.FormatUint(m.Seq, 10)+"\n"), 0o600)
}

func (cp *checkpoints) loadWatchMark(name string) (JournalMark, bool) {
	data, err := readBounded(cp.dir, watchMarkFile, nil, 256)
	if err != nil {
		return JournalMark{}, false
	}
	f := strings.Fields(string(data))
	if len(f) != 3 || f[0] != name {
		return JournalMark{}, false
	}
	seq, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		return JournalMark{}, false
	}
	return JournalMark{ID: f[1], Seq: seq}, true
}

// fsJournal is the workspace's own journal: an inotify watcher of the
// covered directories, made again when it fails or the coverage rules
// change (its set of watched directories follows them).
type fsJournal struct {
	w *Workspace

	mu        sync.Mutex
	wt        *watch.Watcher
	id        string
	rules     string    // checkpointCoverage's sum when it was made
	real      string    // the root's path as the mount table names it
	mounts    string    // the mounts inside the root when it was made (mounts.Signature)
	retry     time.Time // a failed make is not tried again before
	lastError error
}

// retryWatch is how long a journal that could not be made waits before it
// tries again (a full max_user_watches does not free itself soon).
const retryWatch = time.Minute

// build makes the watcher: every directory a scan would enter is watched
// before the first mark is given.
func (fj *fsJournal) build() error {
	w := fj.w
	if fj.wt != nil {
		fj.wt.Close()
		fj.wt, fj.id = nil, ""
	}
	include, _, rules := w.checkpointCoverage()
	mounted := fj.mountsNow() // before the walk: one mounted during it is seen next time
	cover := &coverage{w: w, include: include}
	wt, err := watch.New(w.dir, watch.Options{Watch: cover.watchDir, Fault: w.jr.fault})
	if err != nil {
		return err
	}
	err = w.walkWith(context.Background(), ".", &walker{include: include, enter: func(dirfd int, dir string) bool {
		return wt.Add(dir) == nil
	}})
	if err == nil {
		err = wt.Err()
	}
	if err != nil {
		wt.Close()
		return err
	}
	wt.Ready()
	fj.wt, fj.id, fj.rules = wt, strings.ToLower(rand.Text()[:12]), rules
	fj.mounts = mounted
	return nil
}

// mountsNow is the signature of the file systems mounted inside the root
// now: one mounted or unmounted there changes what is under its directory
// without an event a watch reports. "?" if the table cannot be read.
func (fj *fsJournal) mountsNow() string {
	if fj.real == "" {
		real, err := filepath.EvalSymlinks(fj.w.dir)
		if err != nil {
			return "?"
		}
		fj.real = real
	}
	ms, err := mounts.Below(fj.real)
	if err != nil {
		return "?"
	}
	return mounts.Signature(ms)
}

func (fj *fsJournal) close() {
	fj.mu.Lock()
	defer fj.mu.Unlock()
	if fj.wt != nil {
		fj.wt.Close()
		fj.wt, fj.id = nil, ""
	}
	fj.retry = time.Now().Add(100 * 365 * 24 * time.Hour)
}

// Since implements ChangeJournal. A failed watcher, one whose coverage
// rules changed (a .gitignore among the changes, .git/info/exclude or the
// include patterns), or one that saw a file system mounted or unmounted
// inside the root, is made again: no vouching for the past, a new mark
// for the future.
func (fj *fsJournal) Since(m JournalMark) ([]JournalChange, JournalMark, bool) {
	fj.mu.Lock()
	defer fj.mu.Unlock()
	if fj.wt == nil && time.Now().Before(fj.retry) {
		return nil, JournalMark{}, false
	}
	var (
		chs []watch.Change
		now uint64
		ok  bool
	)
	if fj.wt != nil {
		chs, now, ok = fj.wt.Since(m.Seq)
		ok = ok && m.ID == fj.id
		if now != 0 {
			_, _, rules := fj.w.checkpointCoverage()
			if rules != fj.rules || fj.mountsNow() != fj.mounts {
				now = 0
			}
			for _, c := range chs {
				if path.Base(c.Path) == ".gitignore" {
					now = 0
				}
			}
		}
	}
	if now == 0 {
		if fj.wt != nil {
			fj.lastError = fj.wt.Err()
		}
		if err := fj.build(); err != nil {
			fj.lastError, fj.retry = err, time.Now().Add(retryWatch)
			return nil, JournalMark{}, false
		}
		if _, now, _ = fj.wt.Since(0); now == 0 {
			return nil, JournalMark{}, false
		}
		return nil, JournalMark{ID: fj.id, Seq: now}, false
	}
	out := make([]JournalChange, len(chs))
	for i, c := range chs {
		out[i] = JournalChange{Path: c.Path, Created: c.Created}
	}
	return out, JournalMark{ID: fj.id, Seq: now}, ok
}

// coverage answers whether a directory is one a scan enters: no element
// is .git or the state directory, a symbolic link, or ignored, each
// directory's .gitignore read as a walk reads it. It caches what it
// learns; it is for one goroutine.
type coverage struct {
	w       *Workspace
	include ignoreMatcher
	dirs    map[string]*coveredDir
}

type coveredDir struct {
	ok bool
	ps ignoreMatcher // the patterns that apply in it, its own .gitignore's too
}

// watchDir is the watcher's filter of new directories.
func (c *coverage) watchDir(rel string) bool {
	// A fresh cache: a directory that did not exist when last asked may
	// now.
	c = &coverage{w: c.w, include: c.include}
	d, fd := c.dir(rel, false)
	if fd >= 0 {
		unix.Close(fd)
	}
	return d.ok
}

// dir returns what c knows of the directory rel, and with open, the
// directory opened (-1 if it is not covered or cannot be opened).
func (c *coverage) dir(rel string, open bool) (*coveredDir, int) {
	if c.dirs == nil {
		c.dirs = map[string]*coveredDir{}
	}
	if d, ok := c.dirs[rel]; ok && (!open || !d.ok) {
		return d, -1
	}
	var parentFD int
	var parent *coveredDir
	var name string
	if rel == "." {
		f, err := c.w.root.OpenFile(".", os.O_RDONLY|engine.ODirectory, 0)
		if err != nil {
			return &coveredDir{}, -1
		}
		parentFD, err = unix.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			return &coveredDir{}, -1
		}
		unix.CloseOnExec(parentFD)
		d, ok := c.dirs["."]
		if !ok {
			ps := c.w.ignorePatterns(".git/info", "exclude", nil)
			d = &coveredDir{ok: true, ps: append(ps, patternsAt(parentFD, ".gitignore", nil)...)}
			c.dirs["."] = d
		}
		return d, parentFD
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	parent, parentFD = c.dir(dir, true)
	if parentFD < 0 {
		d := &coveredDir{}
		c.dirs[rel] = d
		return d, -1
	}
	defer unix.Close(parentFD)
	elems := splitRel(rel)
	if strings.EqualFold(name, StateDir) || name == ".git" || !parent.ok || parent.ps.ignored(elems, true) {
		d := &coveredDir{}
		c.dirs[rel] = d
		return d, -1
	}
	fd, err := unix.Openat(parentFD, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		d := &coveredDir{}
		c.dirs[rel] = d
		return d, -1
	}
	d, ok := c.dirs[rel]
	if !ok {
		d = &coveredDir{ok: true, ps: append(parent.ps[:len(parent.ps):len(parent.ps)], patternsAt(fd, ".gitignore", elems)...)}
		c.dirs[rel] = d
	}
	if !open {
		unix.Close(fd)
		return d, -1
	}
	return d, fd
}

// CheckpointScans counts the checkpoints this workspace took with a
// journal set: in full, and from the journal's changes.
func (w *Workspace) CheckpointScans() (full, fromJournal int64) {
	return w.jr.fullScans.Load(), w.jr.dirtyScans.Load()
}

// setBase remembers that the manifest name is a delta on base ("" for a
// full manifest).
func (w *Workspace) setBase(name, base string) {
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	if w.jr.bases == nil || len(w.jr.bases) > 4*maxChain {
		w.jr.bases = map[string]string{}
	}
	w.jr.bases[name] = base
}

func (w *Workspace) baseOf(name string) (string, bool) {
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	base, ok := w.jr.bases[name]
	return base, ok
}

// sumOf returns the SHA-256 of the manifest name if this process has m as
// that manifest in memory, "" if not.
func (cp *checkpoints) sumOf(name string, m *cpManifest) string {
	w := cp.w
	w.jr.mu.Lock()
	defer w.jr.mu.Unlock()
	for _, c := range w.jr.cache {
		if c.name == name && c.m == m {
			return c.sum
		}
	}
	return ""
}
