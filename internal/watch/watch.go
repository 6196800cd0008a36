//go:build linux

// Package watch is a change journal of a directory tree: one inotify watch
// (through fsnotify) per directory it is told to cover, and the set of
// paths that changed since a mark.
//
// A mark is a sequence number: every event the watcher handles gets the
// next one, and Since(m) returns the paths of the events numbered after m.
// What makes a mark sound is the sync point: Since first creates a file in
// a directory of its own that the same inotify instance watches, and waits
// until the watcher has handled that file's event. An inotify instance
// queues the events of all its watches in one queue, in the order the
// changes happened, so every change made before Since began was queued
// before the marker's, and has been handled (its path recorded, the watch
// of a new directory added) when Since returns. A change made after Since
// returns is handled later and gets a number above the mark it returned.
// So a scan that starts after Since returns, starting from a manifest taken
// after the mark m it was given, sees every change: those before the sync
// point on disk, those after it in a later Since.
//
// A new directory is watched when its event is handled, not when it is
// made: what was created in it before is not seen as events. The
// directory's own path is recorded as created (Created in the result), and
// a caller must read a created directory's whole subtree. A directory moved
// into the tree arrives the same way, as one created directory.
//
// When the watcher cannot vouch for a range of marks, Since says so (ok
// false) and the caller scans in full: the kernel's queue overflowed, a
// watch could not be added (the user's max_user_watches reached), the root
// was moved or removed, the watcher was closed or its goroutine ended. A
// watcher that failed stays failed; its owner makes a new one.
package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"
)

// maxDirty is how many distinct paths the watcher remembers. Past it, the
// watcher forgets them all and says so for marks before (Since's ok is
// false for them): a full scan is then cheaper than the list.
const maxDirty = 1 << 17

// syncTimeout is how long Since waits for its marker's event.
const syncTimeout = 10 * time.Second

// Options configure a Watcher.
type Options struct {
	// Watch reports whether the directory rel (a slash path relative to
	// the root) is to be watched when it appears later; nil watches
	// every directory. It runs on the watcher's goroutine.
	Watch func(rel string) bool
	// SyncDir is where the watcher makes its directory of markers; ""
	// is os.TempDir().
	SyncDir string
	// Fault, for tests, is called before each watch is added; an error
	// it returns is that add's error.
	Fault func(rel string) error
	// Hold, for tests, holds the watcher's goroutine before it handles
	// each event until the channel gives a value (nil: never held).
	Hold chan struct{}
}

// Change is a path that changed since a mark. Created says a directory
// was created or moved in at that path since the mark: its whole subtree
// is new to the watcher.
type Change struct {
	Path    string
	Created bool
}

type entry struct {
	seq, created uint64
}

// A Watcher is a change journal of one root. Its methods are safe for
// concurrent use.
type Watcher struct {
	root    string
	syncDir string
	opts    Options
	fw      *fsnotify.Watcher
	done    chan struct{}
	closing chan struct{}
	once    sync.Once

	mu      sync.Mutex
	cond    *sync.Cond
	seq     uint64           // the last event's number
	floor   uint64           // marks below it are not vouched for
	dirty   map[string]entry // path -> its last event, and its last creation
	watched map[string]bool  // the watched directories, by path
	synced  uint64           // the last marker handled
	err     error            // why the watcher failed, nil if it did not
	ready   bool             // the tree's watches are all added
	nsync   uint64
}

// New makes a watcher of root that watches nothing yet: the caller adds
// the directories of the tree (Add), then calls Ready.
func New(root string, opts Options) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	parent := opts.SyncDir
	if parent == "" {
		parent = os.TempDir()
	}
	sd, err := os.MkdirTemp(parent, "editguard-watch-")
	if err != nil {
		fw.Close()
		return nil, err
	}
	if err := fw.Add(sd); err != nil {
		fw.Close()
		os.Remove(sd)
		return nil, err
	}
	w := &Watcher{root: filepath.Clean(root), syncDir: sd, opts: opts, fw: fw, done: make(chan struct{}), closing: make(chan struct{}),
		dirty: map[string]entry{}, watched: map[string]bool{}}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w, nil
}

// Add watches the directory rel of the tree. An error fails the watcher.
func (w *Watcher) Add(rel string) error {
	if err := w.add(rel); err != nil {
		w.fail(err)
		return err
	}
	return nil
}

func (w *Watcher) add(rel string) error {
	if w.opts.Fault != nil {
		if err := w.opts.Fault(rel); err != nil {
			return err
		}
	}
	if err := w.fw.Add(w.abs(rel)); err != nil {
		return fmt.Errorf("watch %s: %w", rel, err)
	}
	w.mu.Lock()
	w.watched[rel] = true
	w.mu.Unlock()
	return nil
}

// Ready says every directory of the tree is added: marks count from now.
func (w *Watcher) Ready() {
	w.mu.Lock()
	w.ready = true
	w.seq++ // marks are never 0
	w.floor = w.seq
	w.mu.Unlock()
}

// Watched is how many directories are watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}

// Err is why the watcher failed, nil while it vouches for its marks.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Inject hands err to the watcher as if inotify had reported it (an
// overflow, say): for tests.
func (w *Watcher) Inject(err error) {
	w.fail(err)
}

// Close stops the watcher; its marks are no longer vouched for.
func (w *Watcher) Close() error {
	w.fail(errors.New("the watcher was closed"))
	w.once.Do(func() { close(w.closing) })
	err := w.fw.Close()
	<-w.done
	os.RemoveAll(w.syncDir)
	return err
}

func (w *Watcher) abs(rel string) string {
	if rel == "." {
		return w.root
	}
	return w.root + "/" + rel
}

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}

// Since returns the paths changed since mark m, in no order, and the mark
// of now, after a sync point (see the package comment). ok false says the
// watcher cannot vouch for the time since m (m is 0, older than what it
// remembers, or it failed): the caller must scan in full. now is 0 when
// the watcher has failed or is not ready: no later Since will vouch for it.
func (w *Watcher) Since(m uint64) (changes []Change, now uint64, ok bool) {
	if err := w.sync(); err != nil {
		return nil, 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil || !w.ready {
		return nil, 0, false
	}
	now = w.seq
	if m == 0 || m < w.floor || m > now {
		return nil, now, false
	}
	for p, e := range w.dirty {
		if e.seq > m {
			changes = append(changes, Change{Path: p, Created: e.created > m})
		}
	}
	return changes, now, true
}

// sync makes a marker and waits until the watcher has handled its event.
func (w *Watcher) sync() error {
	w.mu.Lock()
	if w.err != nil {
		defer w.mu.Unlock()
		return w.err
	}
	w.nsync++
	n := w.nsync
	w.mu.Unlock()
	name := filepath.Join(w.syncDir, "s"+strconv.FormatUint(n, 10))
	fd, err := unix.Open(name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		err = fmt.Errorf("watch: sync marker: %w", err)
		w.fail(err)
		return err
	}
	unix.Close(fd)
	unix.Unlink(name)
	deadline := time.AfterFunc(syncTimeout, func() { w.fail(errors.New("watch: the sync marker's event did not come")) })
	defer deadline.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < n && w.err == nil {
		w.cond.Wait()
	}
	return w.err
}

func (w *Watcher) run() {
	defer close(w.done)
	defer w.fail(errors.New("the watcher stopped"))
	for {
		select {
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if w.opts.Hold != nil {
				select {
				case <-w.opts.Hold:
				case <-w.closing:
					return
				}
			}
			w.handle(ev)
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = fmt.Errorf("watch: %w", err)
			}
			w.fail(err)
		}
	}
}

func (w *Watcher) handle(ev fsnotify.Event) {
	if dir, name := filepath.Split(ev.Name); strings.TrimSuffix(dir, "/") == w.syncDir {
		if n, err := strconv.ParseUint(strings.TrimPrefix(name, "s"), 10, 64); err == nil && ev.Has(fsnotify.Create) {
			w.mu.Lock()
			w.synced = max(w.synced, n)
			w.cond.Broadcast()
			w.mu.Unlock()
		}
		return
	}
	rel, ok := w.rel(ev.Name)
	if !ok {
		return // a path outside the root: a stale watch's
	}
	if rel == "." {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.fail(errors.New("watch: the root was moved or removed"))
		}
		return
	}
	w.mu.Lock()
	w.seq++
	e, known := w.dirty[rel]
	if !known && len(w.dirty) >= maxDirty {
		// Forget the events before this one: marks from before it are
		// no longer vouched for.
		clear(w.dirty)
		w.floor = w.seq - 1
	}
	e.seq = w.seq
	w.dirty[rel] = e
	moved := ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	var gone []string
	if moved && w.watched[rel] {
		// A watched directory moved away or removed: its watches, and
		// its subdirectories', name paths it no longer has.
		for p := range w.watched {
			if p == rel || strings.HasPrefix(p, rel+"/") {
				gone = append(gone, p)
				delete(w.watched, p)
			}
		}
	}
	w.mu.Unlock()
	for _, p := range gone {
		w.fw.Remove(w.abs(p)) // gone already, if removed
	}
	if !ev.Has(fsnotify.Create) {
		return
	}
	var st unix.Stat_t
	if unix.Lstat(ev.Name, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	w.mu.Lock()
	e = w.dirty[rel]
	e.created = e.seq
	w.dirty[rel] = e
	w.mu.Unlock()
	if err := w.addTree(rel); err != nil {
		w.fail(err)
	}
}

// addTree watches the new directory rel and those below it.
func (w *Watcher) addTree(rel string) error {
	if w.opts.Watch != nil && !w.opts.Watch(rel) {
		return nil
	}
	if err := w.add(rel); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return nil // gone again; its removal is an event of its own
		}
		return err
	}
	des, err := os.ReadDir(w.abs(rel))
	if err != nil {
		return nil // gone again, or unreadable: a scan skips it too
	}
	for _, de := range des {
		if de.IsDir() {
			if err := w.addTree(rel + "/" + de.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Watcher) rel(name string) (string, bool) {
	if name == w.root {
		return ".", true
	}
	if r, ok := strings.CutPrefix(name, w.root+"/"); ok && r != "" {
		return r, true
	}
	return "", false
}
