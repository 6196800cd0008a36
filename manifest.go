//go:build unix

package editguard

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/maphash"
	"iter"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/gitobj"
)

// A manifest's files are a base and what differs from it.
//
// A checkpoint taken from a change journal's changes (scanDirty) is the
// one it was made from but for a few paths. Copying every file's entry for
// each checkpoint would make a command's cost grow with the tree; so the
// files of a manifest are a fileBase, shared by every manifest made from
// it and never changed once made, and the entries added or changed (over)
// and removed (gone) since it. A checkpoint copies only those, and starts
// from a new base (mergeBase) once they pass a fraction of it (overlayLimit),
// so the copy stays small against the tree and the base is rebuilt about
// once per that many changes.
//
// On disk the same: a manifest with a base written in full is written as a
// delta on that base (see saveManifest), never on another delta.

// fileBase is the files a manifest holds in full: never changed once a
// manifest has it, shared by the manifests made from it.
//
// It is held compact, as the hook server holds one or two for as long as
// it runs: the paths one after another in one string, in order (names),
// and per file, in that order, an entry with its path's offset and its
// sums in binary (packedEntry); a hash table of the entries' indexes by
// path finds one in constant time. An entry whose sums are not the
// lowercase hexadecimal a scan or a manifest file gives (only a test makes
// one) is kept as it is, in odd.
type fileBase struct {
	names string
	ents  []packedEntry
	table []uint32 // by hash of the path (baseSeed): index+1, 0 for none
	odd   map[uint32]cpEntry

	// open says the base was made by deriveFiles for the one manifest
	// being made on it, which seal folds its changes into.
	open bool

	mu sync.Mutex
	// name and sum are the full manifest that holds these files on disk
	// ("" until one is written or read).
	name, sum string
	bySum     []uint32 // the entries' indexes by SHA-256, made on first use
}

// packedEntry is a cpEntry in a fileBase, and where its path starts in
// the base's names (it ends where the next one starts).
type packedEntry struct {
	size, mtime, ctime int64
	ino                uint64
	mode, off          uint32
	sha                [32]byte
	git                [20]byte
	flags              uint8 // entryBacked, entryGit, entryOdd
}

// entryOdd marks a packedEntry whose cpEntry is in its base's odd.
const entryOdd = 1 << 7

// baseSeed hashes the paths of every fileBase's table.
var baseSeed = maphash.MakeSeed()

// len is how many files b holds.
func (b *fileBase) len() int {
	if b == nil {
		return 0
	}
	return len(b.ents)
}

// path returns the path of b's i-th file (in path order).
func (b *fileBase) path(i int) string {
	end := len(b.names)
	if i+1 < len(b.ents) {
		end = int(b.ents[i+1].off)
	}
	return b.names[b.ents[i].off:end]
}

// entry returns b's i-th file's entry.
func (b *fileBase) entry(i int) cpEntry {
	pe := &b.ents[i]
	if pe.flags&entryOdd != 0 {
		return b.odd[uint32(i)]
	}
	e := cpEntry{Size: pe.size, MtimeNS: pe.mtime, CtimeNS: pe.ctime, Ino: pe.ino, Mode: pe.mode,
		SHA256: hex.EncodeToString(pe.sha[:]), Backed: pe.flags&entryBacked != 0}
	if pe.flags&entryGit != 0 {
		e.Git = hex.EncodeToString(pe.git[:])
	}
	return e
}

// sameEntry reports whether b's i-th file's entry is o's j-th file's.
func (b *fileBase) sameEntry(i int, o *fileBase, j int) bool {
	x, y := b.ents[i], o.ents[j]
	if x.flags&entryOdd != 0 || y.flags&entryOdd != 0 {
		return b.entry(i) == o.entry(j)
	}
	x.off, y.off = 0, 0
	return x == y
}

// index returns the index of the file p in b, -1 if b has none.
func (b *fileBase) index(p string) int {
	if b == nil || len(b.table) == 0 {
		return -1
	}
	mask := uint64(len(b.table) - 1)
	for h := maphash.String(baseSeed, p) & mask; ; h = (h + 1) & mask {
		v := b.table[h]
		if v == 0 {
			return -1
		}
		if b.path(int(v-1)) == p {
			return int(v - 1)
		}
	}
}

// has reports whether b has the file p.
func (b *fileBase) has(p string) bool { return b.index(p) >= 0 }

// file returns p's entry in b.
func (b *fileBase) file(p string) (cpEntry, bool) {
	if i := b.index(p); i >= 0 {
		return b.entry(i), true
	}
	return cpEntry{}, false
}

// search returns the index of the first file of b whose path is not
// below p.
func (b *fileBase) search(p string) int {
	lo, hi := 0, len(b.ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.path(m) < p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// count returns how many of b's files have the content sum: not backed
// (the checkpoint store holds it), and backed.
func (b *fileBase) count(sum string) (stored, backed int32) {
	add := func(pe *packedEntry) {
		if pe.flags&entryBacked != 0 {
			backed++
		} else {
			stored++
		}
	}
	for i, e := range b.odd {
		if e.SHA256 == sum {
			add(&b.ents[i])
		}
	}
	var key [32]byte
	if len(sum) != len(key)*2 || !lowerHex(sum) {
		return stored, backed
	}
	hex.Decode(key[:], []byte(sum))
	bySum := b.sumOrder()
	i, _ := slices.BinarySearchFunc(bySum, key, func(j uint32, k [32]byte) int { return bytes.Compare(b.ents[j].sha[:], k[:]) })
	for ; i < len(bySum) && b.ents[bySum[i]].sha == key; i++ {
		if pe := &b.ents[bySum[i]]; pe.flags&entryOdd == 0 {
			add(pe)
		}
	}
	return stored, backed
}

// sumOrder returns the indexes of b's entries in the order of their
// SHA-256, made once.
func (b *fileBase) sumOrder() []uint32 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bySum == nil {
		b.bySum = make([]uint32, len(b.ents))
		for i := range b.bySum {
			b.bySum[i] = uint32(i)
		}
		slices.SortFunc(b.bySum, func(x, y uint32) int { return bytes.Compare(b.ents[x].sha[:], b.ents[y].sha[:]) })
	}
	return b.bySum
}

// written returns the full manifest that holds b, "" if none.
func (b *fileBase) written() (name, sum string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.name, b.sum
}

// setWritten records that the full manifest name, of SHA-256 sum, holds b
// (the first one only: any of them is as good).
func (b *fileBase) setWritten(name, sum string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.name == "" {
		b.name, b.sum = name, sum
	}
}

// baseBuilder makes a fileBase from files added in path order.
type baseBuilder struct {
	names strings.Builder
	ents  []packedEntry
	odd   map[uint32]cpEntry
}

func newBaseBuilder(n, nameBytes int) *baseBuilder {
	bb := &baseBuilder{ents: make([]packedEntry, 0, n)}
	bb.names.Grow(nameBytes)
	return bb
}

// maxBaseNames is the most bytes a base's paths may take together: their
// offsets are 32 bits. A tree whose covered paths take more (a million
// paths of 4 KiB) is refused with a panic, not misread.
const maxBaseNames = math.MaxUint32

// add adds the file p, after every file added before.
func (bb *baseBuilder) add(p string, e cpEntry) {
	pe := packedEntry{size: e.Size, mtime: e.MtimeNS, ctime: e.CtimeNS, ino: e.Ino, mode: e.Mode, off: bb.addName(p)}
	if e.Backed {
		pe.flags |= entryBacked
	}
	if len(e.SHA256) == 64 && lowerHex(e.SHA256) && (e.Git == "" || len(e.Git) == 40 && lowerHex(e.Git)) {
		hex.Decode(pe.sha[:], []byte(e.SHA256))
		if e.Git != "" {
			hex.Decode(pe.git[:], []byte(e.Git))
			pe.flags |= entryGit
		}
	} else {
		pe.flags |= entryOdd
		if bb.odd == nil {
			bb.odd = map[uint32]cpEntry{}
		}
		bb.odd[uint32(len(bb.ents))] = e
	}
	bb.ents = append(bb.ents, pe)
}

// addName appends the path p to the names and returns its offset.
func (bb *baseBuilder) addName(p string) uint32 {
	off := bb.names.Len()
	if off+len(p) > maxBaseNames {
		panic("editguard: a checkpoint's paths take more than 4 GiB")
	}
	bb.names.WriteString(p)
	return uint32(off)
}

// addFrom adds b's i-th file, after every file added before.
func (bb *baseBuilder) addFrom(b *fileBase, i int) {
	pe := b.ents[i]
	if pe.flags&entryOdd != 0 {
		bb.add(b.path(i), b.odd[uint32(i)])
		return
	}
	pe.off = bb.addName(b.path(i))
	bb.ents = append(bb.ents, pe)
}

// base returns the fileBase of the files added.
func (bb *baseBuilder) base() *fileBase {
	// Kept for as long as the base is: without room to spare.
	names, ents := bb.names.String(), bb.ents
	if bb.names.Cap()-len(names) > len(names)/16 {
		names = strings.Clone(names)
	}
	if cap(ents)-len(ents) > len(ents)/16 {
		ents = slices.Clone(ents)
	}
	return packBase(names, slices.Clip(ents), bb.odd)
}

// packBase makes the fileBase of the paths names and the entries ents,
// in path order, and the cpEntry of those marked entryOdd: their table.
func packBase(names string, ents []packedEntry, odd map[uint32]cpEntry) *fileBase {
	b := &fileBase{names: names, ents: ents, odd: odd}
	if len(b.ents) == 0 {
		return b
	}
	size := 1
	for size < 2*len(b.ents) {
		size <<= 1
	}
	b.table = make([]uint32, size)
	mask := uint64(size - 1)
	for i := range b.ents {
		h := maphash.String(baseSeed, b.path(i)) & mask
		for b.table[h] != 0 {
			h = (h + 1) & mask
		}
		b.table[h] = uint32(i + 1)
	}
	return b
}

// sortedBase returns the fileBase of the files added, in any order; of a
// path added more than once, the last. A full scan adds them so, as its
// workers meet them: the entries are sorted where they are, by their
// paths, and the paths copied once in that order, so that no map of the
// tree's files, nor a second copy of its entries, is made.
func (bb *baseBuilder) sortedBase() *fileBase {
	names, ents := bb.names.String(), bb.ents
	n := len(ents)
	at := func(i uint32) string {
		end := len(names)
		if int(i)+1 < n {
			end = int(ents[i+1].off)
		}
		return names[ents[i].off:end]
	}
	perm := make([]uint32, n) // the entries' indexes in path order
	for i := range perm {
		perm[i] = uint32(i)
	}
	if !slices.IsSortedFunc(perm, func(x, y uint32) int { return strings.Compare(at(x), at(y)) }) {
		slices.SortFunc(perm, func(x, y uint32) int {
			if c := strings.Compare(at(x), at(y)); c != 0 {
				return c
			}
			return int(x) - int(y)
		})
	}
	for k := 1; k < n; k++ {
		if at(perm[k-1]) == at(perm[k]) {
			// A path added twice (none is, by a walk): the last one, by
			// way of a builder of their own.
			added := &fileBase{names: names, ents: ents, odd: bb.odd}
			nb := newBaseBuilder(n, len(names))
			for x, i := range perm {
				if x+1 < n && at(perm[x+1]) == at(i) {
					continue
				}
				nb.addFrom(added, int(i))
			}
			return nb.base()
		}
	}
	// The paths in their order, and their offsets there.
	var sorted strings.Builder
	sorted.Grow(len(names))
	offs := make([]uint32, n)
	var odd map[uint32]cpEntry
	for k, i := range perm {
		offs[k] = uint32(sorted.Len())
		sorted.WriteString(at(i))
		if ents[i].flags&entryOdd != 0 {
			if odd == nil {
				odd = map[uint32]cpEntry{}
			}
			odd[uint32(k)] = bb.odd[i]
		}
	}
	// The entries moved to their places, cycle by cycle: the k-th is
	// the one that was perm[k]-th (perm[k] = k once it is there).
	for k := range perm {
		if perm[k] == uint32(k) {
			continue
		}
		tmp, j := ents[k], uint32(k)
		for {
			from := perm[j]
			perm[j] = j
			if from == uint32(k) {
				ents[j] = tmp
				break
			}
			ents[j] = ents[from]
			j = from
		}
	}
	for k := range ents {
		ents[k].off = offs[k]
	}
	if cap(ents)-len(ents) > len(ents)/16 {
		ents = slices.Clone(ents) // kept for as long as the base is
	}
	return packBase(sorted.String(), slices.Clip(ents), odd)
}

// baseOf makes a fileBase of the files of files.
func baseOf(files map[string]cpEntry) *fileBase {
	paths := slices.Sorted(maps.Keys(files))
	nb := 0
	for _, p := range paths {
		nb += len(p)
	}
	bb := newBaseBuilder(len(paths), nb)
	for _, p := range paths {
		bb.add(p, files[p])
	}
	return bb.base()
}

// mergeBase makes a fileBase of b's files (b may be nil) but for those in
// gone, with over's added or in their place: a walk of b's files and
// over's sorted paths side by side.
func mergeBase(b *fileBase, over map[string]cpEntry, gone map[string]struct{}) *fileBase {
	added := slices.Sorted(maps.Keys(over))
	nb := 0
	if b != nil {
		nb = len(b.names)
	}
	for _, p := range added {
		nb += len(p)
	}
	bb := newBaseBuilder(b.len()+len(added), nb)
	j := 0
	for i := range b.len() {
		p := b.path(i)
		for ; j < len(added) && added[j] < p; j++ {
			bb.add(added[j], over[added[j]])
		}
		if j < len(added) && added[j] == p {
			bb.add(p, over[p])
			j++
			continue
		}
		if _, ok := gone[p]; !ok {
			bb.addFrom(b, i)
		}
	}
	for ; j < len(added); j++ {
		bb.add(added[j], over[added[j]])
	}
	return bb.base()
}

// overlayLimit is how many entries a manifest may differ from its base by
// before the next checkpoint starts from a new one.
func overlayLimit(baseLen int) int { return baseLen/8 + 256 }

// newFiles starts m's files empty, to be filled by setFile and made a base
// by seal.
func (m *cpManifest) newFiles() {
	m.base, m.over, m.gone, m.n = nil, map[string]cpEntry{}, nil, 0
}

// deriveFiles starts m's files as prev's: sharing prev's base, with copies
// of what prev changed of it; or, when that is past overlayLimit (or prev
// has no base), on a new base of all of prev's files, over which m's own
// changes are folded when it is sealed.
func (m *cpManifest) deriveFiles(prev *cpManifest) {
	if prev.base != nil && len(prev.over)+len(prev.gone) <= overlayLimit(prev.base.len()) {
		m.base, m.over, m.n = prev.base, maps.Clone(prev.over), prev.n
		if m.over == nil {
			m.over = map[string]cpEntry{}
		}
		if len(prev.gone) > 0 {
			m.gone = maps.Clone(prev.gone)
		}
		return
	}
	m.base, m.over, m.gone = mergeBase(prev.base, prev.over, prev.gone), map[string]cpEntry{}, nil
	m.base.open = true
	m.n = m.base.len()
}

// seal makes m's files a base of their own if m has none (a full scan's
// manifest), or folds its changes into the base deriveFiles made for it
// (open). Called once m is complete.
func (m *cpManifest) seal() {
	switch {
	case m.base == nil:
		m.base, m.over, m.gone = baseOf(m.over), nil, nil
		m.n = m.base.len()
	case m.base.open && m.flat():
		m.base.open = false
	case m.base.open:
		m.base, m.over, m.gone = mergeBase(m.base, m.over, m.gone), nil, nil
		m.n = m.base.len()
	}
}

// flat reports whether m's files are its base's, with nothing over them.
func (m *cpManifest) flat() bool { return len(m.over) == 0 && len(m.gone) == 0 }

// file returns p's entry.
func (m *cpManifest) file(p string) (cpEntry, bool) {
	if e, ok := m.over[p]; ok {
		return e, true
	}
	if m.base == nil {
		return cpEntry{}, false
	}
	if _, ok := m.gone[p]; ok {
		return cpEntry{}, false
	}
	return m.base.file(p)
}

// has reports whether m has the file p (file, without the entry).
func (m *cpManifest) has(p string) bool {
	if _, ok := m.over[p]; ok {
		return true
	}
	if _, ok := m.gone[p]; ok {
		return false
	}
	return m.base.has(p)
}

// gitBlob returns the git blob id p's entry records (cpEntry.Git), and
// whether it records one (and p is a file of m); from a base, without
// making the entry. An id that is not 40 lowercase hexadecimal digits
// (none a scan or a manifest file gives) reads as zeros.
func (m *cpManifest) gitBlob(p string) (gitobj.ID, bool) {
	if e, ok := m.over[p]; ok {
		return gitID(e.Git)
	}
	if _, ok := m.gone[p]; ok {
		return gitobj.ID{}, false
	}
	i := m.base.index(p)
	if i < 0 {
		return gitobj.ID{}, false
	}
	if pe := &m.base.ents[i]; pe.flags&entryOdd == 0 {
		return pe.git, pe.flags&entryGit != 0
	}
	return gitID(m.base.odd[uint32(i)].Git)
}

// cachedStat looks p up in m as a stat cache, without making its entry:
// ok says m has the file p with e's stat (cpEntry.sameStat), its mtime and
// ctime both before before; then blob and listed are its entry's Git, as
// gitBlob returns it.
func (m *cpManifest) cachedStat(p string, e cpEntry, before int64) (blob gitobj.ID, listed, ok bool) {
	fresh := func(q cpEntry) bool { return q.sameStat(e) && q.MtimeNS < before && q.CtimeNS < before }
	if q, in := m.over[p]; in {
		if !fresh(q) {
			return gitobj.ID{}, false, false
		}
		blob, listed = gitID(q.Git)
		return blob, listed, true
	}
	if _, in := m.gone[p]; in {
		return gitobj.ID{}, false, false
	}
	i := m.base.index(p)
	if i < 0 {
		return gitobj.ID{}, false, false
	}
	pe := &m.base.ents[i]
	if pe.flags&entryOdd != 0 {
		q := m.base.odd[uint32(i)]
		if !fresh(q) {
			return gitobj.ID{}, false, false
		}
		blob, listed = gitID(q.Git)
		return blob, listed, true
	}
	if pe.size != e.Size || pe.mtime != e.MtimeNS || pe.ctime != e.CtimeNS || pe.ino != e.Ino || pe.mode != e.Mode || pe.mtime >= before || pe.ctime >= before {
		return gitobj.ID{}, false, false
	}
	return pe.git, pe.flags&entryGit != 0, true
}

// gitID is gitBlob of an entry's Git.
func gitID(s string) (gitobj.ID, bool) {
	if len(s) == 40 && lowerHex(s) {
		id, _ := gitobj.ParseID(s)
		return id, true
	}
	return gitobj.ID{}, s != ""
}

// numFiles is how many files m has.
func (m *cpManifest) numFiles() int { return m.n }

// setFile sets p's entry; only while m is made.
func (m *cpManifest) setFile(p string, e cpEntry) {
	if !m.has(p) {
		m.n++
	}
	if m.over == nil {
		m.over = map[string]cpEntry{}
	}
	m.over[p] = e
	delete(m.gone, p)
	m.sums = nil
}

// delFile removes p; only while m is made.
func (m *cpManifest) delFile(p string) {
	if !m.has(p) {
		return
	}
	m.n--
	delete(m.over, p)
	if m.base.has(p) {
		if m.gone == nil {
			m.gone = map[string]struct{}{}
		}
		m.gone[p] = struct{}{}
	}
	m.sums = nil
}

// allFiles yields every file of m, in no order.
func (m *cpManifest) allFiles() iter.Seq2[string, cpEntry] {
	return func(yield func(string, cpEntry) bool) {
		for p, e := range m.over {
			if !yield(p, e) {
				return
			}
		}
		for i := range m.base.len() {
			p := m.base.path(i)
			if _, ok := m.over[p]; ok {
				continue
			}
			if _, ok := m.gone[p]; ok {
				continue
			}
			if !yield(p, m.base.entry(i)) {
				return
			}
		}
	}
}

// sortedPaths returns m's paths in order: its base's merged with what m
// changed (a cost of the tree's size, paid only by a manifest written in
// full, or by a walk of a new git index beside it).
func (m *cpManifest) sortedPaths() []string {
	added := m.overOnly()
	out := make([]string, 0, m.n)
	i := 0
	for j := range m.base.len() {
		p := m.base.path(j)
		if _, ok := m.gone[p]; ok {
			continue
		}
		for ; i < len(added) && added[i] < p; i++ {
			out = append(out, added[i])
		}
		out = append(out, p)
	}
	return append(out, added[i:]...)
}

// eachGitBlob calls fn with every file of m in path order and the git
// blob id its entry records, as gitBlob returns them: its base's, merged
// with what m changed, read from the packed entries without a lookup per
// file.
func (m *cpManifest) eachGitBlob(fn func(p string, blob gitobj.ID, listed bool)) {
	changed := m.sortedOver()
	gone := slices.Sorted(maps.Keys(m.gone))
	over := func(p string) {
		blob, listed := gitID(m.over[p].Git)
		fn(p, blob, listed)
	}
	i, g := 0, 0
	for j := range m.base.len() {
		p := m.base.path(j)
		for ; i < len(changed) && changed[i] < p; i++ {
			over(changed[i])
		}
		if i < len(changed) && changed[i] == p {
			over(p)
			i++
			continue
		}
		for ; g < len(gone) && gone[g] < p; g++ {
		}
		if g < len(gone) && gone[g] == p {
			continue
		}
		if pe := &m.base.ents[j]; pe.flags&entryOdd == 0 {
			fn(p, pe.git, pe.flags&entryGit != 0)
		} else {
			blob, listed := gitID(m.base.odd[uint32(j)].Git)
			fn(p, blob, listed)
		}
	}
	for ; i < len(changed); i++ {
		over(changed[i])
	}
}

// pathBytes is at least the length of m's paths put together.
func (m *cpManifest) pathBytes() int {
	n := 0
	if m.base != nil {
		n = len(m.base.names)
	}
	for p := range m.over {
		n += len(p)
	}
	return n
}

// appendFiles appends every file of m in path order, as a full manifest
// lists them (appendEntry): its base's merged with what m changed, the
// base's entries encoded from their packed form. After each it calls
// flush, which returns what to append to next.
func (m *cpManifest) appendFiles(b []byte, flush func([]byte) []byte) []byte {
	changed := m.sortedOver()
	i := 0
	for j := range m.base.len() {
		p := m.base.path(j)
		for ; i < len(changed) && changed[i] < p; i++ {
			b = flush(appendEntry(b, changed[i], m.over[changed[i]]))
		}
		if i < len(changed) && changed[i] == p {
			b = flush(appendEntry(b, p, m.over[p]))
			i++
			continue
		}
		if _, ok := m.gone[p]; ok {
			continue
		}
		if pe := &m.base.ents[j]; pe.flags&entryOdd == 0 {
			b = flush(appendPacked(b, p, pe))
		} else {
			b = flush(appendEntry(b, p, m.base.odd[uint32(j)]))
		}
	}
	for ; i < len(changed); i++ {
		b = flush(appendEntry(b, changed[i], m.over[changed[i]]))
	}
	return b
}

// appendPacked is appendEntry of a packed entry.
func appendPacked(b []byte, p string, pe *packedEntry) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
	b = append(b, p...)
	b = binary.LittleEndian.AppendUint64(b, uint64(pe.size))
	b = binary.LittleEndian.AppendUint64(b, uint64(pe.mtime))
	b = binary.LittleEndian.AppendUint64(b, uint64(pe.ctime))
	b = binary.LittleEndian.AppendUint64(b, pe.ino)
	b = binary.LittleEndian.AppendUint32(b, pe.mode)
	b = append(b, pe.flags&(entryBacked|entryGit))
	b = hex.AppendEncode(b, pe.sha[:])
	if pe.flags&entryGit != 0 {
		b = hex.AppendEncode(b, pe.git[:])
	}
	return b
}

// overOnly returns, in order, the paths m has that its base does not.
func (m *cpManifest) overOnly() []string {
	var out []string
	for p := range m.over {
		if !m.base.has(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// under calls fn with every path of m below the directory dir, in no
// order; overSorted is m.sortedOver().
func (m *cpManifest) under(dir string, overSorted []string, fn func(p string)) {
	prefix := dir + "/"
	if b := m.base; b != nil {
		for i := b.search(prefix); i < len(b.ents); i++ {
			p := b.path(i)
			if !strings.HasPrefix(p, prefix) {
				break
			}
			if _, ok := m.gone[p]; !ok {
				fn(p)
			}
		}
	}
	i, _ := slices.BinarySearch(overSorted, prefix)
	for ; i < len(overSorted) && strings.HasPrefix(overSorted[i], prefix); i++ {
		if !m.base.has(overSorted[i]) {
			fn(overSorted[i]) // not met in the base's paths above
		}
	}
}

// sortedOver returns the paths of m's over in order.
func (m *cpManifest) sortedOver() []string { return slices.Sorted(maps.Keys(m.over)) }

// sumCounts counts a content's files: not backed by git's objects (the
// checkpoint store holds them), and backed.
type sumCounts struct{ stored, backed int32 }

// manifestSums is what a manifest names by content, besides its base's
// files (fileBase.count): the counts of the base's files it changed or
// removed (shadow), to take away, and those of its own over.
type manifestSums struct {
	shadow, over map[string]sumCounts
}

func (m *cpManifest) sumsOf() *manifestSums {
	m.sumsMu.Lock()
	defer m.sumsMu.Unlock()
	if m.sums != nil {
		return m.sums
	}
	s := &manifestSums{shadow: map[string]sumCounts{}, over: map[string]sumCounts{}}
	add := func(to map[string]sumCounts, e cpEntry) {
		c := to[e.SHA256]
		if e.Backed {
			c.backed++
		} else {
			c.stored++
		}
		to[e.SHA256] = c
	}
	for p, e := range m.over {
		add(s.over, e)
		if b, ok := m.base.file(p); ok {
			add(s.shadow, b)
		}
	}
	for p := range m.gone {
		if b, ok := m.base.file(p); ok {
			add(s.shadow, b)
		}
	}
	m.sums = s
	return s
}

// names reports whether a file of m has the content sum: one whose
// content the checkpoint store holds, or with backed, any.
func (m *cpManifest) names(sum string, backed bool) bool {
	s := m.sumsOf()
	count := func(c sumCounts) int32 {
		if backed {
			return c.stored + c.backed
		}
		return c.stored
	}
	if count(s.over[sum]) > 0 {
		return true
	}
	if m.base == nil {
		return false
	}
	stored, bk := m.base.count(sum)
	return count(sumCounts{stored, bk})-count(s.shadow[sum]) > 0
}

// UnmarshalJSON reads a checkpoint an earlier version wrote into an
// active record ("before"), its files a JSON object.
func (m *cpManifest) UnmarshalJSON(data []byte) error {
	var v struct {
		StartNS   int64              `json:"start_ns"`
		Files     map[string]cpEntry `json:"files"`
		Unchecked []string           `json:"unchecked,omitempty"`
		Exclude   string             `json:"exclude,omitempty"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*m = cpManifest{StartNS: v.StartNS, Unchecked: v.Unchecked, Exclude: v.Exclude}
	m.newFiles()
	for p, e := range v.Files {
		m.setFile(p, e)
	}
	m.seal()
	return nil
}
