//go:build unix

package editguard

import (
	"container/list"
	"hash/maphash"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/engine"
	"golang.org/x/sys/unix"
)

// A listing (ReadDir, ReadDirPage) is a directory's entries sorted by
// name, less editguard's own. Paging through a large directory would
// cost, for every page, reading and sorting all of it; the workspace's
// listing cache keeps a directory's sorted entries under the directory's
// stat, taken from the descriptor that was read: device, inode, size,
// mtime and ctime in nanoseconds. Adding, removing or renaming an entry
// stamps the directory with a new mtime and ctime, so a later listing
// whose descriptor has the same stat is served from what was kept, and a
// page costs its own entries.
//
// A change within the timestamps' granularity of an earlier one leaves
// mtime and ctime as they were, so a listing is kept only if the
// directory's mtime and ctime were already racyWindow older than the
// read's start, as the read cache (readcache.go) and the checkpoints do:
// a directory changed in the same tick as it was read is read again every
// time until the window has passed. A listing during which the stat moved
// is not kept either.
//
// Only names and types are kept: an entry's size (Info) is looked up when
// the entry is shown. Bounds: dirCacheDirs listings and dirCacheBytes of
// their entries, least recently used first out; a directory of fewer than
// dirCacheMin entries, whose listing costs little, is not kept.
const (
	dirCacheDirs  = 32
	dirCacheBytes = 8 << 20
	dirCacheMin   = 256
)

// direntCost is what one kept entry costs besides its name's bytes.
const direntCost = int64(unsafe.Sizeof(dirent{}))

// dirListing is a directory's entries as ReadDir lists them. Nothing
// changes it once it is made; the cache shares it between readers.
type dirListing struct {
	stat    fileStat
	ents    []dirent // sorted by name
	version uint64   // listingVersion(ents)
	bytes   int64    // memory it holds, for the cache's bound
}

// listingSeed makes the versions of listings (DirPage.Version) of this
// process.
var listingSeed = maphash.MakeSeed()

// listingVersion hashes the names and types of ents, in order. A name holds
// no NUL byte, so the NUL after each one keeps two lists of names apart.
func listingVersion(ents []dirent) uint64 {
	var h maphash.Hash
	h.SetSeed(listingSeed)
	for _, e := range ents {
		h.WriteString(e.name)
		h.WriteByte(0)
		t := uint32(e.typ)
		h.Write([]byte{byte(t >> 24), byte(t >> 16), byte(t >> 8), byte(t)})
	}
	return h.Sum64()
}

// dirCache is the workspace's listing cache (see above). The zero value is
// ready; it is safe for concurrent use.
type dirCache struct {
	mu    sync.Mutex
	byID  map[fileID]*list.Element // element holds *dirListing
	order list.List                // front: most recently used
	bytes int64                    // held by the listings kept
	hits  atomic.Int64             // listings served from the cache

	// Tests only: now replaces the clock that decides whether a listing
	// is racy; allSizes keeps directories under dirCacheMin entries too;
	// maxBytes, if set, replaces dirCacheBytes.
	now      func() time.Time
	allSizes bool
	maxBytes int64
}

// clock is the time a listing starts, in ns since the epoch.
func (c *dirCache) clock() int64 {
	if c.now != nil {
		return c.now().UnixNano()
	}
	return time.Now().UnixNano()
}

func (c *dirCache) limit() int64 {
	if c.maxBytes > 0 {
		return c.maxBytes
	}
	return dirCacheBytes
}

// get returns the listing kept of the directory whose stat is st, if
// any. A listing of the same directory with another stat is dropped.
func (c *dirCache) get(st fileStat) *dirListing {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[fileID{st.dev, st.ino}]
	if !ok {
		return nil
	}
	if l := el.Value.(*dirListing); l.stat == st {
		c.order.MoveToFront(el)
		return l
	}
	c.remove(el)
	return nil
}

// put keeps l, read by a listing that started at start (ns) and saw the
// directory's stat unchanged from before it read to after. A racy listing
// (see above), a small one and one larger than the whole bound are not
// kept; each drops what was kept of the directory.
func (c *dirCache) put(start int64, l *dirListing) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[fileID]*list.Element{}
	}
	id := fileID{l.stat.dev, l.stat.ino}
	if el, ok := c.byID[id]; ok {
		c.remove(el)
	}
	switch {
	case l.stat.mtimeNS >= start-racyWindow || l.stat.ctimeNS >= start-racyWindow:
		return
	case len(l.ents) < dirCacheMin && !c.allSizes, l.bytes > c.limit():
		return
	}
	c.byID[id] = c.order.PushFront(l)
	c.bytes += l.bytes
	for c.order.Len() > dirCacheDirs || c.bytes > c.limit() {
		c.remove(c.order.Back())
	}
}

func (c *dirCache) remove(el *list.Element) {
	l := c.order.Remove(el).(*dirListing)
	delete(c.byID, fileID{l.stat.dev, l.stat.ino})
	c.bytes -= l.bytes
}

// listing returns the listing of the directory p (see ReadDir), p
// resolved, and the directory open, which the caller closes: the listing
// the cache kept if the directory's stat is the same, else read from the
// directory.
func (w *Workspace) listing(p string) (string, *dirListing, *os.File, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return "", nil, nil, err
	}
	start := w.dirs.clock()
	f, err := w.root.OpenFile(resolved, os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return "", nil, nil, w.treeError(p, err)
	}
	before, statErr := statOf(f)
	if statErr == nil {
		if l := w.dirs.get(before); l != nil {
			w.dirs.hits.Add(1)
			return resolved, l, f, nil
		}
	}
	ents, err := readDirTypes(f)
	if err != nil {
		f.Close()
		return "", nil, nil, w.treeError(p, err)
	}
	l := &dirListing{stat: before, ents: w.listed(ents)}
	l.version = listingVersion(l.ents)
	l.bytes = int64(cap(l.ents)) * direntCost
	for _, e := range l.ents {
		l.bytes += int64(len(e.name))
	}
	if statErr == nil {
		if after, err := statOf(f); err == nil && after == before {
			w.dirs.put(start, l)
		}
	}
	return resolved, l, f, nil
}

// listed returns the entries of a directory that a listing shows, sorted
// by name: all of ents but editguard's state directories and its
// temporary files (isTemp).
func (w *Workspace) listed(ents []dirent) []dirent {
	siblings := func(yield func(string) bool) {
		for _, e := range ents {
			if !yield(e.name) {
				return
			}
		}
	}
	out := make([]dirent, 0, len(ents))
	for _, e := range ents {
		if !strings.EqualFold(e.name, StateDir) && !(e.typ.IsRegular() && atomicfile.IsTemp(e.name) && w.isTemp(e.name, siblings)) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return out
}

// A DirPage is part of a directory's listing: the entries ReadDir would
// return from Offset on, at most as many as were asked for.
type DirPage struct {
	Entries []fs.DirEntry
	// Offset is the 0-based place of Entries[0] in the whole listing, and
	// Total the number of entries in it.
	Offset, Total int
	// Version identifies the names and types of the whole listing: two
	// listings with the same Version hold the same entries, and a
	// listing after an entry was added, removed or replaced by one of
	// another type has another. It is comparable only within one process.
	Version uint64
}

// ReadDirPage returns entries [offset, offset+limit) of the directory p
// as ReadDir lists them (limit 0: all from offset on). Only those entries
// are made, and each is stat'ed (not following a symlink) relative to the
// directory listed, so Info costs nothing more. A page of a directory
// unchanged since an earlier listing costs its own entries, not the
// directory's (see dirCache).
func (w *Workspace) ReadDirPage(p string, offset, limit int) (*DirPage, error) {
	if offset < 0 || limit < 0 {
		return nil, newError(CodeInvalidArgument, p, "offset and limit must not be negative", "", nil)
	}
	resolved, l, f, err := w.listing(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	page := l.ents[min(offset, len(l.ents)):]
	if limit > 0 && len(page) > limit {
		page = page[:limit]
	}
	des := w.dirEntries(resolved, page)
	dirfd := int(f.Fd())
	for _, de := range des {
		d := de.(*dirEntry)
		var st unix.Stat_t
		err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, d.name, &st, unix.AT_SYMLINK_NOFOLLOW) })
		if err != nil {
			d.statErr = w.treeError(path.Join(resolved, d.name), &fs.PathError{Op: "lstat", Path: d.name, Err: err})
			continue
		}
		d.info = &statInfo{name: d.name, st: atomicfile.StatFrom(&st), sys: &st}
	}
	return &DirPage{Entries: des, Offset: offset, Total: len(l.ents), Version: l.version}, nil
}

// ignoringEINTR calls fn again while it fails with EINTR.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// statInfo is an fs.FileInfo from a stat of the entry name.
type statInfo struct {
	name string
	st   atomicfile.Stat
	sys  *unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) Mode() fs.FileMode  { return s.st.Mode }
func (s *statInfo) ModTime() time.Time { return time.Unix(0, s.st.MtimeNS) }
func (s *statInfo) IsDir() bool        { return s.st.Mode.IsDir() }
func (s *statInfo) Sys() any           { return s.sys }

// dirEntries makes the fs.DirEntry values of ents, entries of the
// directory resolved.
func (w *Workspace) dirEntries(resolved string, ents []dirent) []fs.DirEntry {
	des := make([]fs.DirEntry, len(ents))
	made := make([]dirEntry, len(ents))
	for i, e := range ents {
		made[i] = dirEntry{dirent: e, w: w, dir: resolved}
		des[i] = &made[i]
	}
	return des
}
