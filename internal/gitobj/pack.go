package gitobj

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// Object types, as a pack entry's header gives them.
const (
	objCommit   = 1
	objTree     = 2
	objBlob     = 3
	objTag      = 4
	objOfsDelta = 6
	objRefDelta = 7
)

var typeNames = [...]string{objCommit: "commit", objTree: "tree", objBlob: "blob", objTag: "tag"}

const (
	maxPacks      = 4096    // packs read; the others are ignored
	maxPackDirLen = 1 << 16 // entries of objects/pack looked at
	maxDepth      = 10000   // deltas in a chain
	minBaseLimit  = 64 << 20
)

// A pack is a pack file and its index, version 2:
//
//	"\377tOc" and version 2
//	fanout   256 × uint32: how many ids start with a byte ≤ i
//	ids      n × 20 bytes, sorted
//	crcs     n × uint32
//	offsets  n × uint32: an offset, or with its top bit set, the index of
//	         a uint64 in the next table
//	offsets  m × uint64
//	the pack's checksum, then the index's
type pack struct {
	name string // its base name in objects/pack, without extension
	idx  []byte // the index file, mapped into memory
	n    int    // how many objects it holds

	once sync.Once // opens f, the pack file, on first use
	f    *os.File
	size int64
	err  error
}

const (
	idxFanout = 8
	idxIDs    = idxFanout + 256*4
	idxMinLen = idxIDs + 2*sha1.Size
)

// listPacks opens the indexes of the packs in objects/pack. A pack whose
// index is missing, malformed or of version 1, or which has no pack file,
// is left out.
func listPacks(objects *os.Root) []*pack {
	d, err := objects.OpenFile("pack", os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil
	}
	defer d.Close()
	var names []string
	for seen := 0; seen < maxPackDirLen; {
		batch, err := d.Readdirnames(1024)
		seen += len(batch)
		for _, name := range batch {
			if base, ok := strings.CutSuffix(name, ".idx"); ok && len(names) < maxPacks {
				names = append(names, base)
			}
		}
		if err != nil {
			break
		}
	}
	slices.Sort(names)
	var packs []*pack
	for _, name := range names {
		if p, err := openPack(objects, name); err == nil {
			packs = append(packs, p)
		}
	}
	return packs
}

// openPack maps the index of the pack name and checks its tables.
func openPack(objects *os.Root, name string) (*pack, error) {
	if st, err := objects.Lstat("pack/" + name + ".pack"); err != nil || !st.Mode().IsRegular() {
		return nil, ErrNotFound
	}
	f, size, err := openFile(objects, "pack/"+name+".idx")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size < idxMinLen {
		return nil, corrupt("pack index %s: too short", name)
	}
	idx, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	p := &pack{name: name, idx: idx}
	if err := p.check(); err != nil {
		unmapFile(idx)
		return nil, err
	}
	return p, nil
}

// check checks the header and the size of the tables of p.idx and sets p.n.
func (p *pack) check() (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fault(recover()) {
			err = corrupt("pack index %s: memory fault", p.name)
		}
	}()
	b := p.idx
	if string(b[:idxFanout]) != "\xfftOc\x00\x00\x00\x02" {
		return corrupt("pack index %s: not version 2", p.name)
	}
	var n uint32
	for i := range 256 {
		v := binary.BigEndian.Uint32(b[idxFanout+4*i:])
		if v < n {
			return corrupt("pack index %s: bad fanout table", p.name)
		}
		n = v
	}
	base := int64(idxMinLen) + 28*int64(n)
	large := int64(len(b)) - base // the table of 64-bit offsets
	// The first object, at offset 12, never needs a 64-bit offset.
	if large < 0 || large%8 != 0 || large/8 > max(int64(n)-1, 0) {
		return corrupt("pack index %s: size does not match its %d objects", p.name, n)
	}
	p.n = int(n)
	return nil
}

// find returns the position of id in the index of p.
func (p *pack) find(id ID) (int, bool) {
	b := p.idx
	lo := 0
	if id[0] > 0 {
		lo = int(binary.BigEndian.Uint32(b[idxFanout+4*(int(id[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(b[idxFanout+4*int(id[0]):]))
	ids := b[idxIDs : idxIDs+sha1.Size*p.n]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch bytes.Compare(ids[sha1.Size*m:sha1.Size*(m+1)], id[:]) {
		case -1:
			lo = m + 1
		case 0:
			return m, true
		default:
			hi = m
		}
	}
	return 0, false
}

// offset returns the offset in the pack of the object at position i of the
// index.
func (p *pack) offset(i int) (int64, bool) {
	offsets := idxIDs + (sha1.Size+4)*p.n
	o := binary.BigEndian.Uint32(p.idx[offsets+4*i:])
	if o&(1<<31) == 0 {
		return int64(o), true
	}
	large := offsets + 4*p.n
	j := int(o &^ (1 << 31))
	if j >= (len(p.idx)-2*sha1.Size-large)/8 {
		return 0, false
	}
	v := binary.BigEndian.Uint64(p.idx[large+8*j:])
	return int64(v), v <= math.MaxInt64
}

// open opens the pack file the first time it is called, and checks that
// it goes with its index.
func (p *pack) open(objects *os.Root) error {
	p.once.Do(func() {
		f, size, err := openFile(objects, "pack/"+p.name+".pack")
		if err != nil {
			p.err = err
			return
		}
		var hdr [12]byte
		var sum [sha1.Size]byte
		switch {
		case size < int64(len(hdr)+len(sum)):
			err = corrupt("pack %s: too short", p.name)
		case readAt(f, hdr[:], 0) != nil || readAt(f, sum[:], size-sha1.Size) != nil:
			err = corrupt("pack %s: unreadable", p.name)
		case string(hdr[:4]) != "PACK" || (hdr[7] != 2 && hdr[7] != 3) || string(hdr[4:7]) != "\x00\x00\x00":
			err = corrupt("pack %s: bad header", p.name)
		case binary.BigEndian.Uint32(hdr[8:]) != uint32(p.n):
			err = corrupt("pack %s: object count does not match its index", p.name)
		case !bytes.Equal(sum[:], p.idx[len(p.idx)-2*sha1.Size:len(p.idx)-sha1.Size]):
			err = corrupt("pack %s: checksum does not match its index", p.name)
		}
		if err != nil {
			f.Close()
			p.err = err
			return
		}
		p.f, p.size = f, size
	})
	return p.err
}

func (p *pack) close() error {
	var err error
	if p.f != nil {
		err = p.f.Close()
	}
	return errors.Join(err, unmapFile(p.idx))
}

// readAt fills b from f at off.
func readAt(f io.ReaderAt, b []byte, off int64) error {
	_, err := f.ReadAt(b, off)
	return err
}

// An entry is the header of an object in a pack.
type entry struct {
	typ     int
	size    int64 // of the inflated data: for a delta, of the delta itself
	data    int64 // the offset of the zlib data
	baseOff int64 // the offset of an offset delta's base
	baseID  ID    // the id of a reference delta's base
}

// entry reads the header of the object at off, which must follow the
// pack's header and leave room for its trailing checksum.
func (p *pack) entry(off int64) (entry, error) {
	var e entry
	end := p.size - sha1.Size
	if off < 12 || off >= end {
		return e, corrupt("pack %s: offset %d out of range", p.name, off)
	}
	var b [32]byte
	h := b[:min(int64(len(b)), end-off)]
	if err := readAt(p.f, h, off); err != nil {
		return e, fmt.Errorf("gitobj: pack %s: %w", p.name, err)
	}
	// The type, and the size in little-endian groups: 4 bits, then 7 a byte.
	c := h[0]
	e.typ = int(c>>4) & 7
	e.size = int64(c & 15)
	i := 1
	for shift := 4; c&0x80 != 0; shift += 7 {
		if i == len(h) || shift > 53 {
			return e, corrupt("pack %s: bad object header at %d", p.name, off)
		}
		c = h[i]
		i++
		e.size |= int64(c&0x7f) << shift
	}
	switch e.typ {
	case objOfsDelta:
		d, k := offsetVarint(h[i:])
		if k == 0 || d == 0 || d > uint64(off-12) {
			return e, corrupt("pack %s: bad delta base offset at %d", p.name, off)
		}
		e.baseOff = off - int64(d)
		i += k
	case objRefDelta:
		if len(h)-i < sha1.Size {
			return e, corrupt("pack %s: truncated object header at %d", p.name, off)
		}
		e.baseID = ID(h[i : i+sha1.Size])
		i += sha1.Size
	}
	e.data = off + int64(i)
	return e, nil
}

// zdata returns the zlib data of e: what follows its header, up to the
// pack's checksum and no further than the data of its size could take.
func (p *pack) zdata(e entry) (io.Reader, error) {
	n := p.size - sha1.Size - e.data
	if e.size > maxInflate(n) {
		return nil, corrupt("pack %s: object of %d bytes in %d bytes", p.name, e.size, n)
	}
	return io.NewSectionReader(p.f, e.data, min(n, compressBound(e.size))), nil
}

// compressBound returns how many bytes zlib may take to compress n bytes,
// generously: deflate's worst case plus zlib's header and checksum is
// n + n/1000 + 20 or so.
func compressBound(n int64) int64 {
	if n > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return n + n>>3 + n>>6 + 1024
}

// maxInflate returns how many bytes n bytes of zlib data may inflate to:
// deflate's best is 258 bytes in 2 bits.
func maxInflate(n int64) int64 {
	if n > math.MaxInt64/1032 {
		return math.MaxInt64
	}
	return max(n, 0) * 1032
}

// findPacked returns a pack holding id and its offset there, trying pack
// pref first.
func (r *Repo) findPacked(id ID, pref *pack) (*pack, int64, bool) {
	if i, ok := pref.find(id); ok {
		if off, ok := pref.offset(i); ok {
			return pref, off, true
		}
	}
	for _, p := range r.packs {
		if p == pref {
			continue
		}
		if i, ok := p.find(id); ok {
			if off, ok := p.offset(i); ok {
				return p, off, true
			}
		}
	}
	return nil, 0, false
}

// chainLimits returns the bounds of a delta chain that leads to a blob of
// at most maxSize bytes: the size of any object along it, and the bytes
// inflated and produced along it.
func chainLimits(maxSize int64) (limit, budget int64) {
	limit, budget = math.MaxInt64, math.MaxInt64
	if maxSize <= math.MaxInt64/4 {
		limit = max(4*maxSize, minBaseLimit)
	}
	if limit <= math.MaxInt64/16 {
		budget = 16 * limit
	}
	return clamp(limit), clamp(budget)
}

// readPacked reads the object at off in p, which must be of type want, of
// at most maxSize bytes, appending it to dst[:0].
func (r *Repo) readPacked(p *pack, off int64, want int, dst []byte, maxSize int64) ([]byte, error) {
	limit, budget := chainLimits(maxSize)
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)

	c, err := r.walkChain(p, off, want, limit)
	if err != nil {
		return nil, err
	}
	if len(c.links) == 0 {
		if c.e.size > maxSize {
			return nil, fmt.Errorf("gitobj: %s of %d bytes: %w", typeNames[want], c.e.size, ErrTooLarge)
		}
		src, err := c.p.zdata(c.e)
		if err != nil {
			return nil, err
		}
		return z.inflate(dst[:0], src, c.e.size)
	}
	if err := c.checkTarget(z, maxSize); err != nil {
		return nil, err
	}
	return c.rebuild(z, dst, maxSize, &chainWork{limit: limit, budget: budget})
}

// deltaLink is one delta of a chain: its entry and the pack that holds it.
type deltaLink struct {
	p *pack
	e entry
}

// packPos is the place of an entry: its pack and its offset there.
type packPos struct {
	p   *pack
	off int64
}

// deltaChain is a delta chain walked down to its base.
type deltaChain struct {
	links []deltaLink // the deltas, the one asked for first
	base  []byte      // the base, if it is a loose object
	// p and e are the last entry read: the base if base is nil, else the
	// reference delta whose base it is.
	p *pack
	e entry
}

// walkChain walks the chain of the object at off in p down to its base,
// keeping the deltas on the way, so that the result's size and the work
// can be bounded before any delta is applied. The base must be of type
// want (a delta's object has its base's type). A loose base is read, of
// at most limit bytes; a packed one is left for rebuild.
func (r *Repo) walkChain(p *pack, off int64, want int, limit int64) (deltaChain, error) {
	var c deltaChain
	var seen map[packPos]bool // the targets of reference deltas
	for {
		if err := p.open(r.objects); err != nil {
			return c, err
		}
		e, err := p.entry(off)
		if err != nil {
			return c, err
		}
		c.p, c.e = p, e
		switch e.typ {
		case want:
			return c, nil
		case objCommit, objTree, objBlob, objTag:
			return c, fmt.Errorf("gitobj: object is a %s, not a %s", typeNames[e.typ], typeNames[want])
		case objOfsDelta:
			c.links = append(c.links, deltaLink{p, e})
			off = e.baseOff // always lower: no cycle
		case objRefDelta:
			c.links = append(c.links, deltaLink{p, e})
			q, qoff, ok := r.findPacked(e.baseID, p)
			if !ok {
				c.base, err = r.looseBase(p, e.baseID, want, limit)
				return c, err
			}
			if seen[packPos{q, qoff}] {
				return c, corrupt("pack %s: delta cycle at %d", p.name, off)
			}
			if seen == nil {
				seen = make(map[packPos]bool)
			}
			seen[packPos{q, qoff}] = true
			p, off = q, qoff
		default:
			return c, corrupt("pack %s: bad object type %d at %d", p.name, e.typ, off)
		}
		if len(c.links) > maxDepth {
			return c, fmt.Errorf("gitobj: delta chain over %d deep: %w", maxDepth, ErrTooLarge)
		}
	}
}

// looseBase reads id, the base of a reference delta in p that no pack
// holds, as a loose object of at most limit bytes. A base found nowhere
// makes the pack corrupt.
func (r *Repo) looseBase(p *pack, id ID, want int, limit int64) ([]byte, error) {
	base, err := r.readLoose(id, want, nil, limit)
	if errors.Is(err, ErrNotFound) {
		return nil, corrupt("pack %s: delta base %s not found", p.name, id)
	}
	if err != nil {
		return nil, err
	}
	return base, nil
}

// checkTarget reads, before the work, the size of the result from the
// last delta, so that a blob over maxSize is refused without building it.
func (c *deltaChain) checkTarget(z *inflater, maxSize int64) error {
	top := c.links[0]
	src, err := top.p.zdata(top.e)
	if err != nil {
		return err
	}
	if n, err := z.targetSize(src, top.e.size); err != nil {
		return fmt.Errorf("gitobj: pack %s: %w", top.p.name, err)
	} else if n > uint64(maxSize) {
		return fmt.Errorf("gitobj: object of %d bytes: %w", n, ErrTooLarge)
	}
	return nil
}

// chainWork bounds what building a blob from a delta chain costs: the
// size of each object along it, and the bytes inflated and produced.
type chainWork struct {
	limit, budget int64
	work          int64
}

// spend counts n bytes of an object along the chain against the bounds.
func (w *chainWork) spend(n int64) error {
	if n > w.limit {
		return fmt.Errorf("gitobj: delta chain object of %d bytes: %w", n, ErrTooLarge)
	}
	if w.work += n; w.work > w.budget {
		return fmt.Errorf("gitobj: delta chain over %d bytes of work: %w", w.budget, ErrTooLarge)
	}
	return nil
}

// rebuild inflates the chain's base, unless it is loose, and applies the
// deltas to it from the deepest up, the last into dst, of at most maxSize
// bytes. Every object along the way is counted against w.
func (c *deltaChain) rebuild(z *inflater, dst []byte, maxSize int64, w *chainWork) ([]byte, error) {
	base := c.base
	if base == nil {
		if err := w.spend(c.e.size); err != nil {
			return nil, err
		}
		src, err := c.p.zdata(c.e)
		if err != nil {
			return nil, err
		}
		if base, err = z.inflate(nil, src, c.e.size); err != nil {
			return nil, err
		}
	}
	var delta, spare []byte
	for i := len(c.links) - 1; i >= 0; i-- {
		l := c.links[i]
		if err := w.spend(l.e.size); err != nil {
			return nil, err
		}
		src, err := l.p.zdata(l.e)
		if err != nil {
			return nil, err
		}
		if delta, err = z.inflate(delta[:0], src, l.e.size); err != nil {
			return nil, err
		}
		out, lim := spare, w.limit
		if i == 0 {
			out, lim = dst, maxSize
		}
		if out, err = applyDelta(out, base, delta, lim); err != nil {
			return nil, fmt.Errorf("gitobj: pack %s: %w", l.p.name, err)
		}
		if err := w.spend(int64(len(out))); err != nil {
			return nil, err
		}
		base, spare = out, base
	}
	return base, nil
}
