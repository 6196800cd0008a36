package gitobj

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"math"
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
func (r *Repo) ReadIndex(max int64) (*Index, error) {
	data, err := readFile(r.root, "index", max)
	if err != nil {
		return nil, err
	}
	return parseIndex(data)
}

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
func parseIndex(data []byte) (*Index, error) {
	if len(data) < indexHeaderLen+sha1.Size {
		return nil, corrupt("index: %d bytes", len(data))
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if sum := [sha1.Size]byte(sum); sum != [sha1.Size]byte{} && sum != sha1.Sum(body) {
		return nil, corrupt("index: checksum mismatch")
	}
	if string(body[:4]) != "DIRC" {
		return nil, corrupt("index: no DIRC signature")
	}
	version := binary.BigEndian.Uint32(body[4:])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("gitobj: index version %d: %w", version, ErrUnsupported)
	}
	count := binary.BigEndian.Uint32(body[8:])
	rest := body[indexHeaderLen:]

	// The paths of a version 2 or 3 index fit in the file; those of
	// version 4, once expanded, may take 16 times its size.
	capacity := int(min(int64(count), int64(len(rest)/indexEntryLen)))
	maxNames := int64(len(rest))
	if version == 4 {
		maxNames = 16 * int64(len(data))
	}
	maxNames = min(maxNames, math.MaxUint32)
	var names strings.Builder
	names.Grow(len(rest) - capacity*indexEntryLen)
	entries := make([]indexEntry, 0, capacity)

	var prev, buf []byte // the previous entry's path; buf holds it in version 4
	prevStage := -1
	// An empty path or entries out of order are errors, unless the index
	// is split: the entries of a split index may leave their paths to the
	// shared index, and it says so only in an extension after them.
	var orderErr error
	for range count {
		if len(rest) < indexEntryLen {
			return nil, corrupt("index: truncated entry")
		}
		mode := binary.BigEndian.Uint32(rest[24:])
		id := ID(rest[40:60])
		flags := binary.BigEndian.Uint16(rest[60:])
		stage := int(flags&flagStage) >> 12
		n := indexEntryLen
		var xflags uint16
		if flags&flagExtended != 0 {
			if len(rest) < n+2 {
				return nil, corrupt("index: truncated entry")
			}
			xflags = binary.BigEndian.Uint16(rest[n:])
			if xflags&^(xflagSkipWorktree|xflagIntentToAdd) != 0 {
				return nil, fmt.Errorf("gitobj: index entry flags %#04x: %w", xflags, ErrUnsupported)
			}
			n += 2
		}

		// The path, and how it compares with the previous one.
		var path []byte
		var cmp int
		if version == 4 {
			strip, k := offsetVarint(rest[n:])
			if k == 0 || strip > uint64(len(prev)) {
				return nil, corrupt("index: bad path prefix")
			}
			n += k
			end := bytes.IndexByte(rest[n:], 0)
			if end < 0 {
				return nil, corrupt("index: unterminated path")
			}
			keep := len(prev) - int(strip)
			tail := rest[n : n+end]
			cmp = bytes.Compare(tail, prev[keep:])
			buf = append(buf[:keep], tail...)
			path = buf
			n += end + 1
		} else {
			end := bytes.IndexByte(rest[n:], 0)
			if end < 0 {
				return nil, corrupt("index: unterminated path")
			}
			path = rest[n : n+end]
			cmp = bytes.Compare(path, prev)
			n = (n + end + 8) &^ 7 // the path ends with 1 to 8 NULs
			if n > len(rest) {
				return nil, corrupt("index: truncated entry")
			}
		}
		if nl := int(flags & flagNameMask); nl < flagNameMask && len(path) != nl || nl == flagNameMask && len(path) < nl {
			return nil, corrupt("index: bad path length")
		}
		if orderErr == nil && (len(path) == 0 || cmp < 0 || cmp == 0 && stage <= prevStage) {
			orderErr = corrupt("index: empty path or entries out of order at %q", path)
		}
		prev, prevStage = path, stage
		rest = rest[n:]

		if orderErr != nil || stage != 0 || mode != modeRegular && mode != modeExecutable || xflags != 0 {
			continue
		}
		off := names.Len()
		if int64(off)+int64(len(path)) > maxNames {
			return nil, fmt.Errorf("gitobj: index paths over %d bytes: %w", maxNames, ErrTooLarge)
		}
		names.Write(path)
		entries = append(entries, indexEntry{uint32(off), uint32(names.Len()), id})
	}

	for len(rest) > 0 {
		if len(rest) < 8 {
			return nil, corrupt("index: truncated extension")
		}
		sig := rest[:4]
		size := binary.BigEndian.Uint32(rest[4:])
		if uint64(size) > uint64(len(rest)-8) {
			return nil, corrupt("index: truncated extension")
		}
		switch {
		case string(sig) == "link":
			return nil, fmt.Errorf("gitobj: split index: %w", ErrUnsupported)
		case 'A' <= sig[0] && sig[0] <= 'Z', string(sig) == "sdir":
			// Optional extensions (the uppercase ones) only cache what the
			// entries say; "sdir" marks a sparse index, whose directory
			// entries are already left out.
		default:
			return nil, fmt.Errorf("gitobj: index extension %q: %w", sig, ErrUnsupported)
		}
		rest = rest[8+size:]
	}
	if orderErr != nil {
		return nil, orderErr
	}
	return &Index{names: names.String(), entries: entries}, nil
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
