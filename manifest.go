//go:build unix

package editguard

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
)

// A manifest's files are a base and what differs from it.
//
// A checkpoint taken from a change journal's changes (scanDirty) is the
// one it was made from but for a few paths. Copying every file's entry for
// each checkpoint would make a command's cost grow with the tree; so the
// files of a manifest are a fileBase, shared by every manifest made from
// it and never changed once made, and the entries added or changed (over)
// and removed (gone) since it. A checkpoint copies only those, and starts
// from a new base (flatten) once they pass a fraction of it (overlayLimit),
// so the copy stays small against the tree and the base is rebuilt about
// once per that many changes.
//
// On disk the same: a manifest with a base written in full is written as a
// delta on that base (see saveManifest), never on another delta.

// fileBase is the files a manifest holds in full: never changed once a
// manifest has it, shared by the manifests made from it.
type fileBase struct {
	files map[string]cpEntry

	mu sync.Mutex
	// name and sum are the full manifest that holds these files on disk
	// ("" until one is written or read).
	name, sum string
	paths     []string             // in order, made on first use
	sums      map[string]sumCounts // by SHA-256, made on first use
}

// sumCounts counts a content's files: not backed by git's objects (the
// checkpoint store holds them), and backed.
type sumCounts struct{ stored, backed int32 }

func (b *fileBase) sortedPaths() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.paths == nil {
		b.paths = slices.Sorted(maps.Keys(b.files))
	}
	return b.paths
}

func (b *fileBase) sumCounts() map[string]sumCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sums == nil {
		b.sums = make(map[string]sumCounts, len(b.files))
		for _, e := range b.files {
			c := b.sums[e.SHA256]
			if e.Backed {
				c.backed++
			} else {
				c.stored++
			}
			b.sums[e.SHA256] = c
		}
	}
	return b.sums
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
// has no base), as a copy of all of prev's files, to be made a new base.
func (m *cpManifest) deriveFiles(prev *cpManifest) {
	if prev.base != nil && len(prev.over)+len(prev.gone) <= overlayLimit(len(prev.base.files)) {
		m.base, m.over, m.n = prev.base, maps.Clone(prev.over), prev.n
		if m.over == nil {
			m.over = map[string]cpEntry{}
		}
		if len(prev.gone) > 0 {
			m.gone = maps.Clone(prev.gone)
		}
		return
	}
	m.newFiles()
	m.over = make(map[string]cpEntry, prev.n)
	for p, e := range prev.allFiles() {
		m.over[p] = e
	}
	m.n = len(m.over)
}

// seal makes m's files a base of their own if m has none (a full scan's
// manifest, or one derived from a copy). Called once m is complete.
func (m *cpManifest) seal() {
	if m.base == nil {
		over := m.over
		if over == nil {
			over = map[string]cpEntry{}
		}
		m.base, m.over, m.gone, m.n = &fileBase{files: over}, nil, nil, len(over)
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
	e, ok := m.base.files[p]
	return e, ok
}

// numFiles is how many files m has.
func (m *cpManifest) numFiles() int { return m.n }

// setFile sets p's entry; only while m is made.
func (m *cpManifest) setFile(p string, e cpEntry) {
	if _, ok := m.file(p); !ok {
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
	if _, ok := m.file(p); !ok {
		return
	}
	m.n--
	delete(m.over, p)
	if m.base != nil {
		if _, ok := m.base.files[p]; ok {
			if m.gone == nil {
				m.gone = map[string]struct{}{}
			}
			m.gone[p] = struct{}{}
		}
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
		if m.base == nil {
			return
		}
		for p, e := range m.base.files {
			if _, ok := m.over[p]; ok {
				continue
			}
			if _, ok := m.gone[p]; ok {
				continue
			}
			if !yield(p, e) {
				return
			}
		}
	}
}

// sortedPaths returns m's paths in order: its base's, made once, when m is
// flat; else merged with what m changed (a cost of the tree's size, paid
// only by a manifest written in full).
func (m *cpManifest) sortedPaths() []string {
	if m.base == nil {
		return slices.Sorted(maps.Keys(m.over))
	}
	bp := m.base.sortedPaths()
	if m.flat() {
		return bp
	}
	added := m.overOnly()
	out := make([]string, 0, m.n)
	i := 0
	for _, p := range bp {
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

// overOnly returns, in order, the paths m has that its base does not.
func (m *cpManifest) overOnly() []string {
	var out []string
	for p := range m.over {
		if m.base == nil {
			out = append(out, p)
		} else if _, ok := m.base.files[p]; !ok {
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
	if m.base != nil {
		bp := m.base.sortedPaths()
		i, _ := slices.BinarySearch(bp, prefix)
		for ; i < len(bp) && strings.HasPrefix(bp[i], prefix); i++ {
			if _, ok := m.file(bp[i]); ok {
				fn(bp[i])
			}
		}
	}
	i, _ := slices.BinarySearch(overSorted, prefix)
	for ; i < len(overSorted) && strings.HasPrefix(overSorted[i], prefix); i++ {
		if m.base == nil {
			fn(overSorted[i])
		} else if _, ok := m.base.files[overSorted[i]]; !ok {
			fn(overSorted[i]) // not met in the base's paths above
		}
	}
}

// sortedOver returns the paths of m's over in order.
func (m *cpManifest) sortedOver() []string { return slices.Sorted(maps.Keys(m.over)) }

// manifestSums is what a manifest names by content: its base's counts
// (sumCounts) less those of the base's files it changed or removed
// (shadow), and those of its own over.
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
		if m.base != nil {
			if b, ok := m.base.files[p]; ok {
				add(s.shadow, b)
			}
		}
	}
	if m.base != nil {
		for p := range m.gone {
			add(s.shadow, m.base.files[p])
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
	return count(m.base.sumCounts()[sum])-count(s.shadow[sum]) > 0
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
