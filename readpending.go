//go:build unix

package editguard

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// A cold read of a page of a large file answers before the file is
// hashed. A full pass (streamIndexed) hashes every byte and walks every
// line, about 1 GB/s; finding a page needs only where lines start, which
// a scan of the file's newlines finds several times faster (scanLines).
// So, for a file of at least asyncHashMin bytes that the read cache does
// not know, a read of an in-memory session scans the file, serves its
// page from what the scan learned (readEntry.page, as the cache does), and
// leaves the SHA-256 to a pass that runs beside the reply (hashPass). The
// reply says the hash is pending (ReadResult.SHA256Pending, SHA256
// empty), and the session's baseline for the file is pending on that
// pass: a change that needs it waits for the pass (Session.baseline), and
// is refused with NOT_READ if the pass could not confirm the read.
//
// The pass confirms the read, and only then gives the baseline its hash,
// when the file it hashed is the one the page was served from:
//   - it reads the same open file (a duplicate of the read's descriptor),
//     so the same inode;
//   - the descriptor's stat (device, inode, size, mtime, ctime) is the
//     same after the pass as before the scan, and the file's mtime and
//     ctime were racyWindow older than the scan's start (a racy file is
//     read by the full pass, as before). By the read cache's argument
//     (readcache.go), a change after the scan began would have stamped the
//     file with a newer time, so the bytes hashed are the bytes scanned;
//   - the pass's own count of what the scan learned agrees: size read,
//     lines, line ending, BOM and every noted line start. A file changed
//     or truncated during the pass fails one of these or the stat;
//   - the file is plain UTF-8 (the scan does not validate it; the page
//     served is checked on its own).
//
// A pass that fails any of these leaves no hash: the baseline stays
// unconfirmed, and a change is refused with NOT_READ until the file is
// read again. A file the pass found not plain UTF-8 is remembered as such
// under its stat, so that the next read decodes it whole as before.
//
// Bounds: one pass per file (a read of a file whose pass is running
// serves its page from that pass's scan and waits on the same pass), at
// most hashPassesMax passes running (a read past that hashes inline), and
// the passes stop when the workspace closes. A persistent session's
// baselines are files shared with other processes, which could not wait
// on this process's pass: its reads hash inline, as before.
const (
	asyncHashMin  = 8 << 20
	hashPassesMax = 8
	// hashVerdictsMax bounds the passes kept after they end (those that
	// did not confirm their reads), with the running ones.
	hashVerdictsMax = 64
	scanBlock       = 1 << 20
	pendingWaitMax  = 5 * time.Minute
)

// hashPass computes the SHA-256 of a file whose page a read served from
// scan, and confirms the scan (see above). sum and plain are set before
// done is closed.
type hashPass struct {
	stat  fileStat   // the descriptor's stat before the scan
	scan  *readEntry // what the scan learned; sum empty
	start int64      // when the scan started (ns), for the read cache's racy rule
	done  chan struct{}
	sum   string // the file's SHA-256 when the pass confirmed the scan, else ""
	plain bool   // the file is plain UTF-8 (false also when the pass did not finish)
	why   string // why sum is empty
}

// finished reports whether the pass is over, without waiting.
func (p *hashPass) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// hashPasses are the workspace's running and finished passes, by file.
type hashPasses struct {
	mu      sync.Mutex
	byID    map[fileID]*hashPass
	running int
	ctx     context.Context
	cancel  context.CancelFunc
	closed  bool
	wg      sync.WaitGroup

	// Tests only: minSize replaces asyncHashMin; during is called by a
	// pass after it read its first block, and waiting when a change
	// starts to wait for a pass.
	minSize int64
	during  func(*hashPass)
	waiting func(*hashPass)
}

func (h *hashPasses) min() int64 {
	if h.minSize > 0 {
		return h.minSize
	}
	return asyncHashMin
}

// find returns the pass over the file whose stat is st, if there is one.
// A pass over another version of the file is forgotten.
func (h *hashPasses) find(st fileStat) *hashPass {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.byID[fileID{st.dev, st.ino}]
	if p == nil {
		return nil
	}
	if p.stat != st {
		if p.finished() {
			delete(h.byID, fileID{st.dev, st.ino})
		}
		return nil
	}
	return p
}

// begin registers p and runs it over f, which it closes, unless a pass
// over the same version runs already (that one is returned), too many
// run, or the workspace is closing (nil, and f is closed).
func (h *hashPasses) begin(p *hashPass, f *os.File, c *readCache) *hashPass {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := fileID{p.stat.dev, p.stat.ino}
	if q := h.byID[id]; q != nil && q.stat == p.stat {
		f.Close()
		return q
	}
	if h.closed || h.running >= hashPassesMax {
		f.Close()
		return nil
	}
	if h.byID == nil {
		h.byID = map[fileID]*hashPass{}
		h.ctx, h.cancel = context.WithCancel(context.Background())
	}
	if len(h.byID) >= hashVerdictsMax {
		// Verdicts of passes that could not confirm their reads are
		// only a shortcut for the next read: forget them.
		for k, q := range h.byID {
			if q.finished() {
				delete(h.byID, k)
			}
		}
	}
	h.byID[id] = p
	h.running++
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.run(p, f, c)
		h.mu.Lock()
		h.running--
		// A confirmed pass is now in the read cache; one that was not
		// confirmed stays, so that its verdict holds for this version.
		if p.sum != "" && h.byID[id] == p {
			delete(h.byID, id)
		}
		h.mu.Unlock()
	}()
	return p
}

// stop ends the running passes and waits for them; no pass starts after.
func (h *hashPasses) stop() {
	h.mu.Lock()
	h.closed = true
	if h.cancel != nil {
		h.cancel()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// run hashes f, whose stat was p.stat, and confirms p.scan (see above).
func (h *hashPasses) run(p *hashPass, f *os.File, c *readCache) {
	defer close(p.done)
	defer f.Close()
	var r io.Reader = ctxReader{h.ctx, io.NewSectionReader(f, 0, 1<<62)}
	if h.during != nil {
		r = &hookReader{r: r, hook: func() { h.during(p) }}
	}
	ix := &lineIndex{}
	// Nothing is selected: the pass wants the hash and the counts.
	sr, err := streamIndexed(r, 1<<40, 1, readCaps{}, p.stat.size, ix)
	switch {
	case err == errNotPlainText:
		p.why = "the file is not plain UTF-8 text"
		return
	case err != nil:
		p.plain, p.why = true, "the file could not be hashed: "+err.Error()
		return
	}
	p.plain = true
	after, err := statOf(f)
	e := p.scan
	if err != nil || after != p.stat || sr.size != p.stat.size || sr.total != e.total ||
		sr.lineEnding != e.lineEnding || sr.bom != e.bom || !samePoints(ix.points, e.points) {
		p.why = "the file changed while it was hashed"
		return
	}
	p.sum = sr.sum
	c.put(p.start, &readEntry{stat: p.stat, sum: sr.sum, total: e.total, lineEnding: e.lineEnding, bom: e.bom, points: e.points})
}

func samePoints(a, b []linePoint) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// hookReader calls hook once, after its first read.
type hookReader struct {
	r    io.Reader
	hook func()
}

func (h *hookReader) Read(b []byte) (int, error) {
	n, err := h.r.Read(b)
	if h.hook != nil {
		hook := h.hook
		h.hook = nil
		hook()
	}
	return n, err
}

// scanLines learns, from f whose stat is st, what a full pass learns but
// the hash: lines, line ending, BOM and the same noted line starts (see
// lineIndex), by counting newlines a block at a time. It returns
// errNotPlainText for what the full pass would refuse from the file's
// head (UTF-16, NUL bytes in the first 8 KiB); invalid UTF-8 further on
// is left to the pass.
func scanLines(ctx context.Context, f *os.File, st fileStat) (*readEntry, error) {
	e := &readEntry{stat: st}
	buf := make([]byte, scanBlock)
	var (
		off, pos   int64 // bytes read; where the text starts (after a BOM)
		nl, crlf   int
		ix         lineIndex
		prevCR     bool
		last       byte
		sawContent bool
	)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := f.ReadAt(buf, off)
		b := buf[:n]
		if off == 0 {
			head := b[:min(len(b), 8<<10)]
			if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
				return nil, errNotPlainText
			}
			if bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}) {
				e.bom, pos = true, 3
				head = head[3:]
			}
			if bytes.IndexByte(head, 0) >= 0 {
				return nil, errNotPlainText
			}
			ix.start(pos, st.size)
		}
		// The text of this block: a BOM is not part of it.
		t, tOff := b, off
		if off < pos {
			skip := min(int(pos-off), len(t))
			t, tOff = t[skip:], off+int64(skip)
		}
		if len(t) > 0 {
			sawContent = true
			last = t[len(t)-1]
			if prevCR && t[0] == '\n' {
				crlf++
			}
			if bytes.IndexByte(t, '\r') >= 0 {
				crlf += bytes.Count(t, []byte("\r\n"))
			}
			prevCR = last == '\r'
			// Count newlines, noting the first line start at least
			// ix.every bytes after the last noted one (lineIndex.note).
			c := 0
			for {
				target := ix.points[len(ix.points)-1].off + ix.every - 1 // a '\n' here or later
				from := max(int(target-tOff), c)
				if from >= len(t) {
					break
				}
				j := bytes.IndexByte(t[from:], '\n')
				if j < 0 {
					break
				}
				i := from + j
				nl += bytes.Count(t[c:i+1], []byte{'\n'})
				c = i + 1
				ix.points = append(ix.points, linePoint{nl + 1, tOff + int64(c)})
			}
			nl += bytes.Count(t[c:], []byte{'\n'})
		}
		off += int64(n)
		if err == io.EOF || n == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if off != st.size {
		return nil, errScanMoved
	}
	e.total = nl
	if sawContent && last != '\n' {
		e.total++
	}
	e.lineEnding = endingOf(nl-crlf, crlf)
	e.points = ix.points
	return e, nil
}

// errScanMoved says the file's size changed during a scan.
var errScanMoved = io.ErrUnexpectedEOF

// dupFile returns a new descriptor of f's open file, for a pass to read
// after the read that opened f has closed it.
func dupFile(f *os.File) (*os.File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var nfd int
	if cerr := rc.Control(func(fd uintptr) { nfd, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// readPending serves a read of f, whose stat is st (taken at start, ns),
// from a scan, and leaves its hash to a pass (see above). It returns nil
// when it does not apply: a persistent session, a file under
// asyncHashMin, one the session would keep whole (seenFileMax), a racy one, a file a pass found not plain UTF-8, a page that
// is not valid UTF-8, or a file that changed during the scan. The
// streamed result's sum is the file's when it is already known, else
// empty, with the pass to wait on.
func (s *Session) readPending(ctx context.Context, f *os.File, st fileStat, start int64, o *ReadOptions, caps readCaps) (*streamed, *hashPass, error) {
	h := &s.w.passes
	if s.persist != "" || st.size <= seenFileMax || st.size < h.min() || st.mtimeNS >= start-racyWindow || st.ctimeNS >= start-racyWindow {
		return nil, nil, nil
	}
	p := h.find(st)
	if p != nil && p.finished() && p.sum == "" {
		if !p.plain {
			return nil, nil, nil // decoded whole, as before
		}
		p = nil // scan again: the pass could not confirm its scan
	}
	var e *readEntry
	if p != nil {
		e = p.scan
	} else {
		var err error
		if e, err = scanLines(ctx, f, st); err != nil {
			if err == errNotPlainText || err == errScanMoved {
				return nil, nil, nil
			}
			return nil, nil, err
		}
	}
	sr, err := e.page(ctx, f, o.Offset, o.Limit, caps)
	if err != nil {
		return nil, nil, err
	}
	if after, err := statOf(f); err != nil || after != st || !utf8.ValidString(sr.text) {
		return nil, nil, nil
	}
	if p == nil {
		dup, err := dupFile(f)
		if err != nil {
			return nil, nil, nil
		}
		p = h.begin(&hashPass{stat: st, scan: e, start: start, done: make(chan struct{})}, dup, &s.w.reads)
		if p == nil {
			return nil, nil, nil
		}
	}
	if p.finished() && p.sum != "" {
		sr.sum = p.sum
		return sr, nil, nil
	}
	return sr, p, nil
}

// settle waits for the pass b is pending on and returns b with its hash,
// or, when the pass could not confirm the read, with Unconfirmed saying
// why. A settled baseline is stored back under key if key still holds b.
func (s *Session) settle(key string, b baseline) baseline {
	p := b.pending
	if !p.finished() {
		if h := s.w.passes.waiting; h != nil {
			h(p)
		}
		t := time.NewTimer(pendingWaitMax)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	settled := b
	settled.pending = nil
	switch {
	case !p.finished():
		settled.Unconfirmed = "the file is still being hashed"
		return settled // still pending: not stored
	case p.sum != "":
		settled.SHA256 = p.sum
	default:
		settled.Unconfirmed = p.why
	}
	s.mu.Lock()
	if cur, ok := s.memory[key]; ok && cur.pending == p {
		s.memory[key] = settled
	}
	s.mu.Unlock()
	return settled
}
