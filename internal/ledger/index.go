package ledger

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/editguard/editguard/internal/safeopen"
	"github.com/editguard/editguard/internal/statedir"
)

// A session index lists where each session's records are in a ledger, so
// that a reader of one session (editguard log --session, rewind) reads
// those lines and the ledger's tail instead of every line: its cost grows
// with the session and the tail, not with the ledger.
//
// The index is a cache of facts the ledger's bytes prove. It is derived
// from them, kept where the caller says (outside the workspace, so that a
// repository cannot ship one), and trusted for nothing it does not prove:
//
//   - It covers the ledger's first End bytes, which end with the record of
//     seq Seq and hash Hash. Hashes chain, so a ledger whose record at the
//     end of the covered bytes has that seq and hash holds the records the
//     index was built from; one that does not is read in full.
//   - Each entry names a line by its offset, length and seq, and the line
//     found there must be a whole line of that seq, or the ledger is read
//     in full. A line the index names is decoded and matched like any
//     other, so an entry too many costs a decoding, never a wrong answer.
//   - What follows End, the tail, is read line by line.
//
// A reader that finds more than indexRebuildBytes of tail writes a new
// index covering the whole ledger (fsynced, then renamed into place, so
// that a crash leaves the old index or the new one, whole), so the tail
// stays short, and a rebuild's
// cost, a read of the old index and of the tail, is paid once per that
// many bytes appended.
//
// File layout, integers little-endian: a header (indexMagic, End, Seq,
// Hash, the number of keys, the number of entries); the keys, sorted, each
// 16 bytes of the SHA-256 of its text with the place and count of its
// entries; then the entries, each a line's seq, offset and length (without
// its newline), in order of seq within each key. A key is a record's
// session ("s" and the name) or its tool ("t" and the name); the outcome
// of an intent read in the same build is also listed under the intent's
// session, should the two differ (editguard writes an outcome under its
// intent's session).

const (
	indexMagic        = "editguard ledger index 1\n\x00\x00\x00\x00\x00\x00\x00"
	indexHeaderSize   = len(indexMagic) + 8 + 8 + 64 + 8 + 8
	indexKeySize      = 16 + 8 + 8
	indexEntrySize    = 8 + 8 + 8
	indexRebuildBytes = 256 << 10
	minLine           = 64 // no canonical line is shorter: seq, time, tool, path, outcome, prev and hash
)

// Index names a session index and the keys a read uses: every record the
// read's Match may match must have one of these sessions or tools.
type Index struct {
	Path     string // the index file; "" reads without one
	Sessions []string
	Tools    []string
}

func (ix Index) keys() [][16]byte {
	var out [][16]byte
	for _, s := range ix.Sessions {
		out = append(out, indexKey("s", s))
	}
	for _, t := range ix.Tools {
		out = append(out, indexKey("t", t))
	}
	return out
}

func indexKey(kind, name string) [16]byte {
	sum := sha256.Sum256([]byte(kind + "\x00" + name))
	return [16]byte(sum[:16])
}

// indexEntry is one line of the ledger that a key lists.
type indexEntry struct {
	seq, off, n uint64
}

// indexHeader is what an index file says it covers.
type indexHeader struct {
	end, seq      uint64
	hash          string
	keys, entries uint64
}

// FilterIndexed is Filter, reading the lines ix lists and the ledger's
// tail after them instead of every line when ix.Path holds an index that
// matches the ledger, and writing a new index there when the tail is long
// (see above). Without an index it reads every line, as Filter does, and
// writes one when the ledger is long enough. A failure to read or write
// the index is no failure of the read: it then reads every line.
func FilterIndexed(dir *statedir.Dir, name string, m Match, ix Index, fn func(*Record) error) error {
	if ix.Path == "" {
		return Filter(dir, name, m, fn)
	}
	f, size, err := openSized(dir, name)
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	fs := newFilterState(m, fn)
	hdr, idx := openIndex(ix.Path, f, size)
	var start int64
	if idx != nil {
		defer idx.Close()
		if ents, ok := hdr.lookup(idx, ix.keys()); ok && fs.indexed(f, hdr.end, ents) {
			if fs.err != nil {
				return fs.err
			}
			start = int64(hdr.end)
		} else {
			fs = newFilterState(m, fn) // read in full: forget what the entries gave
			hdr, idx = indexHeader{}, nil
		}
	}
	var b *indexBuilder
	if size-start > indexRebuildBytes {
		b = &indexBuilder{intents: map[uint64]string{}}
	}
	if _, err := readLines(f, start, size, func(line []byte, off int64, n int) error {
		if b != nil {
			b.add(line, off)
		}
		if start > 0 {
			n = 0 // numbered from the index's end, not the file's start
		}
		return fs.line(line, n)
	}); err != nil {
		return err
	}
	if b != nil && b.last.n > 0 && !b.odd {
		b.write(ix.Path, hdr, idx, f)
	}
	return fs.finish()
}

// openIndex opens the index at path and checks that it covers a prefix of
// the ledger f of size bytes: nil if there is none or it does not.
func openIndex(path string, f io.ReaderAt, size int64) (indexHeader, *os.File) {
	idx, err := safeopen.Open(path) // a FIFO there is no index, and does not block
	if err != nil {
		return indexHeader{}, nil
	}
	var h indexHeader
	buf := make([]byte, indexHeaderSize)
	if _, err := idx.ReadAt(buf, 0); err == nil && string(buf[:len(indexMagic)]) == indexMagic {
		le := binary.LittleEndian
		p := buf[len(indexMagic):]
		h = indexHeader{end: le.Uint64(p), seq: le.Uint64(p[8:]), hash: string(p[16:80]), keys: le.Uint64(p[80:]), entries: le.Uint64(p[88:])}
		// The counts are bounded before they are multiplied, so that the
		// size they imply cannot wrap.
		// A line lists under at most three keys and is longer than
		// minLine bytes, so a sparse or hostile index cannot claim more
		// entries than the ledger holds lines for.
		if fi, err := idx.Stat(); err == nil && h.end > 0 && int64(h.end) <= size && h.keys <= h.entries && h.entries <= 3*(h.end/minLine+1) &&
			fi.Size() == int64(indexHeaderSize)+int64(h.keys)*indexKeySize+int64(h.entries)*indexEntrySize {
			if line, end, err := lastLine(f, int64(h.end)); err == nil && end == int64(h.end) {
				if seq, ok := seqOf(line); ok && seq == h.seq && lineHash(line) == h.hash {
					return h, idx
				}
			}
		}
	}
	idx.Close()
	return indexHeader{}, nil
}

// lookup returns the entries of keys, in order of seq, each line once.
func (h indexHeader) lookup(idx io.ReaderAt, keys [][16]byte) ([]indexEntry, bool) {
	le := binary.LittleEndian
	var out []indexEntry
	row := make([]byte, indexKeySize)
	for _, k := range keys {
		// Bisect the sorted keys.
		lo, hi := uint64(0), h.keys
		for lo < hi {
			mid := lo + (hi-lo)/2
			if _, err := idx.ReadAt(row, int64(indexHeaderSize)+int64(mid)*indexKeySize); err != nil {
				return nil, false
			}
			switch c := bytes.Compare(row[:16], k[:]); {
			case c == 0:
				lo, hi = mid, mid
			case c < 0:
				lo = mid + 1
			default:
				hi = mid
			}
		}
		if lo >= h.keys || lo != hi || !bytes.Equal(row[:16], k[:]) {
			continue // no record has the key
		}
		first, n := le.Uint64(row[16:]), le.Uint64(row[24:])
		if first+n > h.entries || first+n < first {
			return nil, false
		}
		buf := make([]byte, n*indexEntrySize)
		base := int64(indexHeaderSize) + int64(h.keys)*indexKeySize + int64(first)*indexEntrySize
		if _, err := idx.ReadAt(buf, base); err != nil {
			return nil, false
		}
		for i := range n {
			p := buf[i*indexEntrySize:]
			out = append(out, indexEntry{seq: le.Uint64(p), off: le.Uint64(p[8:]), n: le.Uint64(p[16:])})
		}
	}
	slices.SortFunc(out, func(a, b indexEntry) int { return cmp.Compare(a.seq, b.seq) })
	return slices.CompactFunc(out, func(a, b indexEntry) bool { return a.seq == b.seq }), true
}

// indexed passes the lines ents name to fs, reporting false if one is not
// where its entry says, whole and of its seq: the ledger is then read in
// full, with a new filterState. Every line is checked before any is
// passed, so that none is passed twice.
func (fs *filterState) indexed(f io.ReaderAt, end uint64, ents []indexEntry) bool {
	lines := make([][]byte, len(ents))
	for i, e := range ents {
		if e.n >= end || e.off >= end || e.off+e.n >= end {
			return false
		}
		buf := make([]byte, e.n+1)
		if _, err := f.ReadAt(buf, int64(e.off)); err != nil || buf[e.n] != '\n' {
			return false
		}
		lines[i] = buf[:e.n]
		if seq, ok := seqOf(lines[i]); !ok || seq != e.seq {
			return false
		}
	}
	for _, line := range lines {
		if err := fs.line(line, 0); err != nil {
			fs.err = err
			return true
		}
	}
	return true
}

// indexBuilder collects the keys of the lines read after an index's end.
type indexBuilder struct {
	keys    map[[16]byte][]indexEntry
	intents map[uint64]string // the session of each intent without an outcome yet
	last    indexEntry        // the last line added
	// odd is set by a line whose seq, session or tool cannot be read
	// where a canonical line has them (one written by hand, in another
	// field order): Filter may still match it, so no index is written.
	odd bool
}

// add lists the line at off under its session and tool.
func (b *indexBuilder) add(line []byte, off int64) {
	seq, ok := seqOf(line)
	if !ok {
		b.odd = true
		return
	}
	e := indexEntry{seq: seq, off: uint64(off), n: uint64(len(line))}
	b.last = e
	session, tool, ok := lineKeys(line)
	if !ok {
		b.odd = true
		return
	}
	if b.keys == nil {
		b.keys = map[[16]byte][]indexEntry{}
	}
	put := func(k [16]byte) {
		if l := b.keys[k]; len(l) == 0 || l[len(l)-1].seq != seq {
			b.keys[k] = append(l, e)
		}
	}
	put(indexKey("s", session))
	put(indexKey("t", tool))
	if in, ok := intentOf(line); ok {
		if s, ok := b.intents[in]; ok {
			delete(b.intents, in)
			put(indexKey("s", s))
		}
	} else if bytes.Contains(line, pendingField) {
		b.intents[seq] = session
	}
}

// write writes the index of the whole ledger f to path: old's entries
// (those of the index hdr describes, if old is not nil) and the lines
// added since. It gives up silently: the index is a cache.
func (b *indexBuilder) write(path string, hdr indexHeader, old *os.File, f io.ReaderAt) {
	last := make([]byte, b.last.n)
	if _, err := f.ReadAt(last, int64(b.last.off)); err != nil {
		return
	}
	keys := b.keys
	if keys == nil {
		keys = map[[16]byte][]indexEntry{}
	}
	if old != nil {
		merged, ok := readAllEntries(old, hdr)
		if !ok {
			return
		}
		for k, l := range keys {
			merged[k] = append(merged[k], l...)
		}
		keys = merged
	}
	sorted := slices.SortedFunc(func(yield func([16]byte) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}, func(a, c [16]byte) int { return bytes.Compare(a[:], c[:]) })
	var total uint64
	for _, l := range keys {
		total += uint64(len(l))
	}
	le := binary.LittleEndian
	out := make([]byte, 0, indexHeaderSize+len(sorted)*indexKeySize+int(total)*indexEntrySize)
	out = append(out, indexMagic...)
	out = le.AppendUint64(out, b.last.off+b.last.n+1)
	out = le.AppendUint64(out, b.last.seq)
	h := lineHash(last)
	if len(h) != 64 {
		return
	}
	out = append(out, h...)
	out = le.AppendUint64(out, uint64(len(sorted)))
	out = le.AppendUint64(out, total)
	var first uint64
	for _, k := range sorted {
		out = append(out, k[:]...)
		out = le.AppendUint64(out, first)
		out = le.AppendUint64(out, uint64(len(keys[k])))
		first += uint64(len(keys[k]))
	}
	for _, k := range sorted {
		for _, e := range keys[k] {
			out = le.AppendUint64(out, e.seq)
			out = le.AppendUint64(out, e.off)
			out = le.AppendUint64(out, e.n)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".index-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(out)
	if err == nil {
		// Durable before its name: after a crash the index is the old
		// one or this one, never one whose pages did not all land,
		// whose zeroed keys would read as sessions without records.
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil && cerr == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

// readAllEntries reads every key's entries from the index hdr describes.
func readAllEntries(idx io.ReaderAt, hdr indexHeader) (map[[16]byte][]indexEntry, bool) {
	buf := make([]byte, int(hdr.keys)*indexKeySize+int(hdr.entries)*indexEntrySize)
	if _, err := idx.ReadAt(buf, int64(indexHeaderSize)); err != nil {
		return nil, false
	}
	le := binary.LittleEndian
	ents := buf[int(hdr.keys)*indexKeySize:]
	out := make(map[[16]byte][]indexEntry, hdr.keys)
	for i := range hdr.keys {
		row := buf[i*indexKeySize:]
		first, n := le.Uint64(row[16:]), le.Uint64(row[24:])
		if first+n > hdr.entries || first+n < first {
			return nil, false
		}
		l := make([]indexEntry, n)
		for j := range n {
			p := ents[(first+j)*indexEntrySize:]
			l[j] = indexEntry{seq: le.Uint64(p), off: le.Uint64(p[8:]), n: le.Uint64(p[16:])}
		}
		out[[16]byte(row[:16])] = l
	}
	return out, true
}

var (
	sessionField = []byte(`,"session":"`)
	toolField    = []byte(`,"tool":"`)
	pathField    = []byte(`","path":`)
)

// lineKeys reads the session and tool of a line in the canonical form
// seal writes: {"seq":N,"time":"T", then "session":"S", if any, then
// "tool":"X","path": and the rest. A line in another form, or with a key
// of either name further on (a rewind's arguments name a session), is
// decoded instead, so that the keys are those Filter would match: the
// last of a repeated key, as encoding/json takes it.
func lineKeys(line []byte) (session, tool string, ok bool) {
	if session, tool, ok = canonicalKeys(line); ok &&
		bytes.Count(line, []byte(`"session":`)) <= 1 && bytes.Count(line, []byte(`"tool":`)) == 1 {
		return session, tool, true
	}
	var r struct {
		Session string `json:"session"`
		Tool    string `json:"tool"`
	}
	if json.Unmarshal(line, &r) != nil {
		return "", "", false
	}
	return r.Session, r.Tool, true
}

// canonicalKeys reads the session and tool where a canonical line has
// them, and reports false for a line that does not begin as one does.
func canonicalKeys(line []byte) (session, tool string, ok bool) {
	rest, ok := bytes.CutPrefix(line, seqPrefix)
	if !ok {
		return "", "", false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"time":"`)); !ok {
		return "", "", false
	}
	q := bytes.IndexByte(rest, '"') // a time holds no quote or backslash
	if q < 0 || bytes.IndexByte(rest[:q], '\\') >= 0 {
		return "", "", false
	}
	rest = rest[q+1:]
	if r, ok := bytes.CutPrefix(rest, sessionField); ok {
		t := bytes.Index(r, toolField)
		if t < 0 {
			return "", "", false
		}
		if session, ok = jsonString(append([]byte{'"'}, r[:t]...)); !ok {
			return "", "", false
		}
		rest = r[t:]
	}
	r, ok := bytes.CutPrefix(rest, toolField)
	if !ok {
		return "", "", false
	}
	p := bytes.Index(r, pathField)
	if p < 0 {
		return "", "", false
	}
	tool, ok = jsonString(append([]byte{'"'}, r[:p+1]...))
	return session, tool, ok
}

// jsonString decodes a quoted JSON string.
func jsonString(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(q, '\\') < 0 {
		// Without escapes, a quote inside would end the string there.
		inner := q[1 : len(q)-1]
		return string(inner), bytes.IndexByte(inner, '"') < 0
	}
	var s string
	return s, json.Unmarshal(q, &s) == nil
}
