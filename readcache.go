//go:build unix

package editguard

import (
	"bufio"
	"container/list"
	"context"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A read of some lines reports the SHA-256 and the line count of the
// whole file, and records that SHA-256 as the session's baseline, so
// that every page of a file paged through would cost a pass over all of
// it. The workspace's read cache keeps what a full pass over a plain
// UTF-8 file learned (its SHA-256, lines, line ending, BOM, and where
// some lines start) under the file's stat, taken from the descriptor the
// pass read: device, inode, size, mtime and ctime. A later read whose
// descriptor has the same stat reads only from the nearest noted line
// start before its lines to their end, and reports what the pass
// learned; its result is the one the full pass would give.
//
// The stat says "unchanged" only for a change the file system stamps with
// a new time. A change within the timestamps' granularity of the pass
// leaves mtime and ctime as they were, so a pass is trusted only if the
// file's mtime and ctime were already racyWindow older than the pass's
// start (git's racy rule): a later change is stamped no earlier than the
// pass's start less the timestamps' granularity, which is under
// racyWindow, and so differs from the stat the cache holds. Like git,
// this takes the file system's clock to agree with this machine's within
// the window. ctime is compared because a program can set mtime back (os.Chtimes,
// touch -d) but not ctime, which that very call sets. The window is
// measured from the pass that learned the hash, not from a later read: a
// pass over a file changed in the same tick as it read would otherwise be
// trusted once the tick is old.
//
// Even a stale entry could not let a change through that overwrites
// another's. A baseline's SHA-256 is only ever a claim: every change
// compares it, under the file's lock, with the bytes on disk at that
// moment (Session.check), and bytes a session remembers are always bytes
// that hash to their name (a cached read remembers nothing). A stale
// SHA-256 can only make a later change fail with STALE_FILE, a refusal
// a new read cures, or merge with the change it missed as any stale edit
// does (merge.go), which keeps that change.
//
// Bounds: readCacheFiles entries, least recently used first out, each
// with at most readIndexPoints line starts; files under readCacheMin are
// not kept, since a pass over them costs little more than a page.
const (
	readCacheFiles   = 64
	readCacheMin     = 64 << 10
	readIndexEvery   = 16 << 10 // bytes between two noted line starts, at least
	readIndexPoints  = 4096     // noted line starts per file, at most (about)
	readCacheBufSize = 32 << 10
)

// fileStat is what tells a file the read cache learned from another file
// or a later version of it.
type fileStat struct {
	dev, ino               uint64
	size, mtimeNS, ctimeNS int64
}

// statOf is f's fileStat, from the descriptor.
func statOf(f *os.File) (fileStat, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return fileStat{}, err
	}
	var st unix.Stat_t
	if cerr := rc.Control(func(fd uintptr) { err = unix.Fstat(int(fd), &st) }); cerr != nil {
		return fileStat{}, cerr
	}
	if err != nil {
		return fileStat{}, err
	}
	return fileStat{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size, mtimeNS: st.Mtim.Nano(), ctimeNS: st.Ctim.Nano()}, nil
}

// linePoint is where line starts: a byte offset in the file.
type linePoint struct {
	line int
	off  int64
}

// lineIndex notes, during a full pass, where line 1 starts, then where
// each line starts that begins at least every bytes after the last one
// noted.
type lineIndex struct {
	every  int64
	points []linePoint
}

// start begins the index at line 1, which starts at pos (after a BOM), for
// a file of size bytes.
func (ix *lineIndex) start(pos, size int64) {
	ix.every = max(readIndexEvery, size/readIndexPoints)
	ix.points = append(ix.points[:0], linePoint{1, pos})
}

// note is told that line starts at pos.
func (ix *lineIndex) note(line int, pos int64) {
	if pos-ix.points[len(ix.points)-1].off >= ix.every {
		ix.points = append(ix.points, linePoint{line, pos})
	}
}

// readEntry is what a full pass learned of a file whose stat was stat.
// Nothing changes an entry once it is in the cache.
type readEntry struct {
	stat       fileStat
	sum        string
	total      int
	lineEnding string
	bom        bool
	points     []linePoint // points[0] is line 1
}

// page selects lines [offset, offset+limit) within caps as streamLines
// would from the whole file, reading f from the last noted line start at
// or before offset to the end of the selection.
func (e *readEntry) page(ctx context.Context, f *os.File, offset, limit int, caps readCaps) (*streamed, error) {
	first := max(offset, 1)
	pt := e.points[sort.Search(len(e.points), func(i int) bool { return e.points[i].line > first })-1]
	out := &streamed{total: e.total, sum: e.sum, size: e.stat.size, lineEnding: e.lineEnding, bom: e.bom}
	ls := &lineSelector{first: first, limit: limit, caps: caps, out: out, line: pt.line}
	n := e.stat.size - pt.off
	bufSize := readCacheBufSize
	if n < int64(bufSize) {
		bufSize = max(int(n)+1, 16)
	}
	br := bufio.NewReaderSize(ctxReader{ctx, io.NewSectionReader(f, pt.off, n)}, bufSize)
	// Room for limit lines of twice the mean length, not for the rest of
	// the file: a page of a large file read without a byte cap would
	// otherwise allocate as much as the cap's default.
	if limit > 0 && e.total > 0 {
		ls.grow(min(n, int64(limit)*2*(e.stat.size/int64(e.total)+1)))
	} else {
		ls.grow(n)
	}
	ls.startLine()
	for {
		piece, err := br.ReadSlice('\n')
		ls.piece(piece)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			ls.endStream()
			break
		}
		if err != nil {
			return nil, err
		}
		if ls.done() {
			break
		}
	}
	ls.settle()
	return out, nil
}

// fileID names a file on this machine.
type fileID struct{ dev, ino uint64 }

// readCache is the workspace's cache of full passes (see above). The zero
// value is ready; it is safe for concurrent use.
type readCache struct {
	mu    sync.Mutex
	byID  map[fileID]*list.Element // element holds *readEntry
	order list.List                // front: most recently used
	hits  atomic.Int64             // reads served from the cache

	// Tests only: now replaces the clock that decides whether a pass
	// is racy; allSizes keeps files under readCacheMin too.
	now      func() time.Time
	allSizes bool
}

// clock is the time a pass starts, in ns since the epoch.
func (c *readCache) clock() int64 {
	if c.now != nil {
		return c.now().UnixNano()
	}
	return time.Now().UnixNano()
}

// wants reports whether a pass over a file with stat st is worth keeping.
func (c *readCache) wants(st fileStat) bool {
	return st.size >= readCacheMin || c.allSizes
}

// get returns the entry learned of the file whose stat is st, if any. An
// entry of the same file with another stat is dropped.
func (c *readCache) get(st fileStat) *readEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byID[fileID{st.dev, st.ino}]
	if !ok {
		return nil
	}
	if e := el.Value.(*readEntry); e.stat == st {
		c.order.MoveToFront(el)
		return e
	}
	c.remove(el)
	return nil
}

// put keeps e, learned by a pass that started at start (ns) and saw the
// file's stat unchanged from before it read to after. A racy pass (see
// above) is not kept, and drops what was kept of the file.
func (c *readCache) put(start int64, e *readEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[fileID]*list.Element{}
	}
	id := fileID{e.stat.dev, e.stat.ino}
	if el, ok := c.byID[id]; ok {
		c.remove(el)
	}
	if e.stat.mtimeNS >= start-racyWindow || e.stat.ctimeNS >= start-racyWindow {
		return
	}
	c.byID[id] = c.order.PushFront(e)
	for c.order.Len() > readCacheFiles {
		c.remove(c.order.Back())
	}
}

// drop forgets what was kept of the file whose stat was st.
func (c *readCache) drop(st fileStat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byID[fileID{st.dev, st.ino}]; ok {
		c.remove(el)
	}
}

func (c *readCache) remove(el *list.Element) {
	e := c.order.Remove(el).(*readEntry)
	delete(c.byID, fileID{e.stat.dev, e.stat.ino})
}

// readCached serves a read of f, whose stat is st, from what a full pass
// learned of the file, or returns nil when it cannot: nothing learned of
// this stat, the file changed during the read, or a file small enough
// for the session to keep (seenFileMax) whose bytes the session does not
// hold, which a full pass then keeps (see remember), as it would without
// the cache.
func (s *Session) readCached(ctx context.Context, f *os.File, st fileStat, o *ReadOptions, caps readCaps) (*streamed, error) {
	e := s.w.reads.get(st)
	if e == nil || e.stat.size <= seenFileMax && !s.holds(e.sum) {
		return nil, nil
	}
	sr, err := e.page(ctx, f, o.Offset, o.Limit, caps)
	if err != nil {
		return nil, err
	}
	if after, err := statOf(f); err != nil || after != st {
		s.w.reads.drop(st)
		return nil, nil
	}
	s.w.reads.hits.Add(1)
	return sr, nil
}

// holds reports whether the session keeps the bytes whose SHA-256 is sum.
func (s *Session) holds(sum string) bool {
	if s.persist == "" {
		_, ok := s.seen.get(sum)
		return ok
	}
	d, err := s.w.sessions.Sub(s.seenDir(), false)
	if err != nil {
		return false
	}
	defer d.Close()
	st, err := d.Stat(sum)
	return err == nil && st.Exists
}
