package gitobj

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"iter"
	"math"
	"runtime/debug"
	"strings"
)

// Index holds the entries of a git index that name a regular file's
// content at stage 0: what [Index.Lookup] finds. It does not change once
// read, and may be used by several goroutines at once.
type Index struct {
	names   string       // the entries' paths, one after another
	entries []indexEntry // sorted by path
}

type indexEntry struct {
	off, end uint32 // the path is names[off:end]
	id       ID
}

// Len returns the number of entries Lookup finds.
func (ix *Index) Len() int { return len(ix.entries) }

// All yields the entries Lookup finds, in path order.
func (ix *Index) All() iter.Seq2[string, ID] {
	return func(yield func(string, ID) bool) {
		for i := range ix.entries {
			if e := &ix.entries[i]; !yield(ix.names[e.off:e.end], e.id) {
				return
			}
		}
	}
}

// Entry returns the i-th entry Lookup finds, in path order: its path and
// blob id.
func (ix *Index) Entry(i int) (string, ID) {
	e := &ix.entries[i]
	return ix.names[e.off:e.end], e.id
}

// Lookup returns the blob id the index lists for path, a slash-separated
// path relative to the work tree. It finds only entries at stage 0 (not
// unmerged) of regular files (mode 100644 or 100755: not symlinks,
// submodules or the directories of a sparse index) that are neither
// skip-worktree nor intent-to-add.
func (ix *Index) Lookup(path string) (ID, bool) {
	lo, hi := 0, len(ix.entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e := &ix.entries[m]; ix.names[e.off:e.end] < path {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ix.entries) {
		if e := &ix.entries[lo]; ix.names[e.off:e.end] == path {
			return e.id, true
		}
	}
	return ID{}, false
}

// ReadIndex reads the file "index" of the git directory, which may be at
// most max bytes long; a longer one is [ErrTooLarge].
//
// It verifies the checksum at the end of the file (or accepts the zeros
// that index.skipHash writes instead) and reads versions 2, 3 and 4. A
// split index, and any extension or entry flag that git itself would
// refuse as unknown, are [ErrUnsupported]; optional extensions are
// skipped. If the repository has no index, the error satisfies
// errors.Is(err, fs.ErrNotExist).
//
// A large index is mapped into memory while it is parsed, not read into
// the heap: only the entries kept stay, and the file's pages are let go
// as the parse goes past them (see mapFile and parseIndexDropping; a
// fault, the file truncated under the reader, is an error).
func (r *Repo) ReadIndex(max int64) (ix *Index, err error) {
	f, size, err := openFile(r.root, "index")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > clamp(max) {
		return nil, fmt.Errorf("gitobj: index has %d bytes: %w", size, ErrTooLarge)
	}
	if size < mapIndexBytes {
		data := make([]byte, size)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, fmt.Errorf("gitobj: reading index: %w", err)
		}
		return parseIndex(data)
	}
	data, err := mapFile(f, size)
	if err != nil {
		return nil, err
	}
	defer unmapFile(data)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fault(recover()) {
			ix, err = nil, corrupt("index: memory fault in the mapped file")
		}
	}()
	return parseIndexDropping(data, dropPages)
}

// mapIndexBytes is the size from which ReadIndex maps the index.
const mapIndexBytes = 1 << 20

const (
	indexHeaderLen = 12
	indexEntryLen  = 62 // an entry's fixed part, up to its flags

	flagExtended      = 0x4000
	flagStage         = 0x3000
	flagNameMask      = 0x0fff
	xflagSkipWorktree = 0x4000
	xflagIntentToAdd  = 0x2000

	modeRegular    = 0o100644
	modeExecutable = 0o100755
)

// parseIndex parses the contents of an index file.
func parseIndex(data []byte) (*Index, error) { return parseIndexDropping(data, nil) }

// dropChunk is how many bytes of a mapped index parseIndexDropping reads
// before it drops them (a multiple of any page size).
const dropChunk = 1 << 20

// parseIndexDropping is parseIndex of data mapped from the file, calling
// drop (if not nil) with each dropChunk of data it has read past, from
// the start, in order, once it no longer needs it: the file's pages
// are let go as it goes (dropPages), so that no more than a few chunks of
// the file are resident at once, whatever its size.
func parseIndexDropping(data []byte, drop func([]byte)) (*Index, error) {
	version, count, rest, err := indexHeader(data, drop)
	if err != nil {
		return nil, err
	}
	p := newIndexParser(data, version, count, rest)
	dropped := len(data) // without drop, none is
	if drop != nil {
		dropped = 0
	}
	for range count {
		if err := p.entry(); err != nil {
			return nil, err
		}
		// A chunk is dropped once the entries read are a chunk past
		// it, so the previous path (which the next is compared with)
		// is never in it.
		if read := len(data) - len(p.rest); read-dropped >= 2*dropChunk {
			drop(data[dropped : dropped+dropChunk])
			dropped += dropChunk
		}
	}
	if err := checkExtensions(p.rest); err != nil {
		return nil, err
	}
	if p.orderErr != nil {
		return nil, p.orderErr
	}
	return &Index{names: p.names.String(), entries: p.entries}, nil
}

// indexHeader checks the checksum and the header of the index file data,
// so that nothing is read from a damaged or foreign file, and returns its
// version, its count of entries and what follows the header, up to the
// checksum.
//
// With drop (parseIndexDropping), each chunk of the file is dropped once
// hashed.
func indexHeader(data []byte, drop func([]byte)) (version, count uint32, rest []byte, err error) {
	if len(data) < indexHeaderLen+sha1.Size {
		return 0, 0, nil, corrupt("index: %d bytes", len(data))
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if sum := [sha1.Size]byte(sum); sum != [sha1.Size]byte{} {
		h := sha1.New()
		for off := 0; off < len(body); off += dropChunk {
			chunk := body[off:min(off+dropChunk, len(body))]
			h.Write(chunk)
			if drop != nil {
				drop(chunk)
			}
		}
		if [sha1.Size]byte(h.Sum(nil)) != sum {
			return 0, 0, nil, corrupt("index: checksum mismatch")
		}
	}
	if string(body[:4]) != "DIRC" {
		return 0, 0, nil, corrupt("index: no DIRC signature")
	}
	version = binary.BigEndian.Uint32(body[4:])
	if version < 2 || version > 4 {
		return 0, 0, nil, fmt.Errorf("gitobj: index version %d: %w", version, ErrUnsupported)
	}
	return version, binary.BigEndian.Uint32(body[8:]), body[indexHeaderLen:], nil
}

// indexParser reads the entries of an index, one after another, into the
// paths and entries of an Index.
type indexParser struct {
	version  uint32
	rest     []byte // what is left to read, up to the checksum
	maxNames int64  // the most bytes the kept paths may take

	names   strings.Builder
	entries []indexEntry

	prev, buf []byte // the previous entry's path; buf holds it in version 4
	prevStage int
	// An empty path or entries out of order are errors, unless the index
	// is split: the entries of a split index may leave their paths to the
	// shared index, and it says so only in an extension after them.
	orderErr error
}

// newIndexParser prepares to read the count entries in rest of the index
// file data, of the given version. It bounds the memory the entries and
// their paths may take by the size of the file, whatever count says.
func newIndexParser(data []byte, version, count uint32, rest []byte) *indexParser {
	// The paths of a version 2 or 3 index fit in the file; those of
	// version 4, once expanded, may take 16 times its size.
	capacity := int(min(int64(count), int64(len(rest)/indexEntryLen)))
	maxNames := int64(len(rest))
	if version == 4 {
		maxNames = 16 * int64(len(data))
	}
	maxNames = min(maxNames, math.MaxUint32)
	p := &indexParser{version: version, rest: rest, maxNames: maxNames, prevStage: -1}
	p.names.Grow(len(rest) - capacity*indexEntryLen)
	p.entries = make([]indexEntry, 0, capacity)
	return p
}

// entry reads the next entry, and keeps it if Lookup is to find it.
func (p *indexParser) entry() error {
	rest := p.rest
	if len(rest) < indexEntryLen {
		return corrupt("index: truncated entry")
	}
	mode := binary.BigEndian.Uint32(rest[24:])
	id := ID(rest[40:60])
	flags := binary.BigEndian.Uint16(rest[60:])
	stage := int(flags&flagStage) >> 12
	xflags, n, err := extendedFlags(rest, flags)
	if err != nil {
		return err
	}

	// The path, and how it compares with the previous one.
	var path []byte
	var cmp int
	if p.version == 4 {
		path, cmp, n, err = p.prefixedPath(rest, n)
	} else {
		path, cmp, n, err = p.paddedPath(rest, n)
	}
	if err != nil {
		return err
	}
	if nl := int(flags & flagNameMask); nl < flagNameMask && len(path) != nl || nl == flagNameMask && len(path) < nl {
		return corrupt("index: bad path length")
	}
	if p.orderErr == nil && (len(path) == 0 || cmp < 0 || cmp == 0 && stage <= p.prevStage) {
		p.orderErr = corrupt("index: empty path or entries out of order at %q", path)
	}
	p.prev, p.prevStage = path, stage
	p.rest = rest[n:]

	if p.orderErr != nil || stage != 0 || mode != modeRegular && mode != modeExecutable || xflags != 0 {
		return nil
	}
	return p.keep(path, id)
}

// extendedFlags reads the extended flags of the entry at the start of
// rest, whose flags are flags, if it has them, and returns them and the
// offset after them. Flags other than skip-worktree and intent-to-add are
// unsupported: git refuses an entry with flags it does not know.
func extendedFlags(rest []byte, flags uint16) (uint16, int, error) {
	n := indexEntryLen
	var xflags uint16
	if flags&flagExtended != 0 {
		if len(rest) < n+2 {
			return 0, 0, corrupt("index: truncated entry")
		}
		xflags = binary.BigEndian.Uint16(rest[n:])
		if xflags&^(xflagSkipWorktree|xflagIntentToAdd) != 0 {
			return 0, 0, fmt.Errorf("gitobj: index entry flags %#04x: %w", xflags, ErrUnsupported)
		}
		n += 2
	}
	return xflags, n, nil
}

// prefixedPath reads the path of a version 4 entry, at rest[n:]: the
// number of bytes to strip from the end of the previous path, then the
// NUL-terminated bytes that replace them. It returns the path, how it
// compares with the previous one, and the offset after it.
func (p *indexParser) prefixedPath(rest []byte, n int) ([]byte, int, int, error) {
	strip, k := offsetVarint(rest[n:])
	if k == 0 || strip > uint64(len(p.prev)) {
		return nil, 0, 0, corrupt("index: bad path prefix")
	}
	n += k
	end := bytes.IndexByte(rest[n:], 0)
	if end < 0 {
		return nil, 0, 0, corrupt("index: unterminated path")
	}
	keep := len(p.prev) - int(strip)
	tail := rest[n : n+end]
	cmp := bytes.Compare(tail, p.prev[keep:])
	p.buf = append(p.buf[:keep], tail...)
	return p.buf, cmp, n + end + 1, nil
}

// paddedPath reads the path of a version 2 or 3 entry, at rest[n:]. It
// returns the path, how it compares with the previous one, and the offset
// of the next entry.
func (p *indexParser) paddedPath(rest []byte, n int) ([]byte, int, int, error) {
	end := bytes.IndexByte(rest[n:], 0)
	if end < 0 {
		return nil, 0, 0, corrupt("index: unterminated path")
	}
	path := rest[n : n+end]
	cmp := bytes.Compare(path, p.prev)
	n = (n + end + 8) &^ 7 // the path ends with 1 to 8 NULs
	if n > len(rest) {
		return nil, 0, 0, corrupt("index: truncated entry")
	}
	return path, cmp, n, nil
}

// keep adds the entry of path and id to those Lookup finds, within the
// bound on the bytes of all their paths.
func (p *indexParser) keep(path []byte, id ID) error {
	off := p.names.Len()
	if int64(off)+int64(len(path)) > p.maxNames {
		return fmt.Errorf("gitobj: index paths over %d bytes: %w", p.maxNames, ErrTooLarge)
	}
	p.names.Write(path)
	p.entries = append(p.entries, indexEntry{uint32(off), uint32(p.names.Len()), id})
	return nil
}

// checkExtensions checks the extensions that follow the entries, in rest,
// up to the checksum. Optional extensions are skipped; a split index, and
// a required extension this package does not know, are [ErrUnsupported],
// for then the entries alone do not say what the index holds.
func checkExtensions(rest []byte) error {
	for len(rest) > 0 {
		if len(rest) < 8 {
			return corrupt("index: truncated extension")
		}
		sig := rest[:4]
		size := binary.BigEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			return corrupt("index: truncated extension")
		}
		switch {
		case string(sig) == "link":
			return fmt.Errorf("gitobj: split index: %w", ErrUnsupported)
		case 'A' <= sig[0] && sig[0] <= 'Z', string(sig) == "sdir":
			// Optional extensions (the uppercase ones) only cache what the
			// entries say; "sdir" marks a sparse index, whose directory
			// entries are already left out.
		default:
			return fmt.Errorf("gitobj: index extension %q: %w", sig, ErrUnsupported)
		}
		rest = rest[8+size:]
	}
	return nil
}

// offsetVarint decodes the variable-length integer of a version 4 index's
// path prefix, also that of a pack's offset delta: seven bits a byte, most
// significant first, with one added to all but the last group. It returns
// the value and the number of bytes read, or 0 bytes if b holds no valid
// number below 2⁶³.
func offsetVarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i > 0 {
			if v >= 1<<55 {
				return 0, 0
			}
			v = (v + 1) << 7
		}
		v |= uint64(c & 0x7f)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
