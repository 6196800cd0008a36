//go:build unix

package history

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/statedir"
)

// PruneStats reports what Prune did.
type PruneStats struct {
	Files           int   // files with history
	VersionsRemoved int   // index entries dropped
	ObjectsRemoved  int   // object files removed
	BytesRemoved    int64 // bytes of removed objects and inline contents (and leftover temp files)
	BytesKept       int64 // bytes of the objects and inline contents that remain
	CorruptIndexes  int   // index files left untouched because a line did not decode
}

// indexFile is one index as Prune sees it.
type indexFile struct {
	key      string  // the file's key: its index and object directory names
	versions []entry // oldest first
	drop     []bool
	corrupt  bool
}

// hexSum finds SHA-256 sums in a corrupt index; it is compiled only when
// Prune meets one, not at every start of a program.
var hexSum = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9a-f]{64}`) })

// legacyDir reports whether an entry of objects/ is a fan-out directory of
// the layout before per-file objects (objects/<sum[:2]>/<sum>).
func legacyDir(name string) bool { return len(name) == 2 }

// Prune applies retention to the whole store. It first drops all but the
// newest KeepVersions versions of every file (Save already does this for
// the file it saves); then, while the objects still referenced total more
// than MaxBytes, it drops the oldest remaining versions across all files,
// except that the newest version of a file is never dropped. It moves each
// object still referenced in the old shared layout into its file's
// directory, removes every object no remaining version references, and
// temp files left by interrupted Saves, and records the exact total of
// object bytes for Save's running count (see OverCap).
//
// Prune holds the store lock exclusively throughout, so it runs while no Save,
// SetLedgerSeq or Load is in progress in any process, and those wait for it.
// That is what makes "unreferenced" safe to act on. Prune scans every index
// and object: it is not meant for a commit's critical section; run it
// afterwards, when OverCap says so.
//
// Rewritten indexes are replaced atomically (temp file, fsync, rename,
// directory fsync) before any object is removed, so a crash never leaves an
// index entry pointing at a removed object; at worst unreferenced objects
// remain until the next trim or Prune. An index with an undecodable line is
// left as it is, and every object it might name is kept. A symlink or
// wrong-type entry in the store fails with a *statedir.UnsafeError.
func (s *Store) Prune() (PruneStats, error) {
	var st PruneStats
	fail := func(err error) (PruneStats, error) { return st, &Error{Op: "prune", Err: err} }
	unlock, err := s.lock(storeLock, false)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	ents, err := s.index.ReadDir()
	if err != nil {
		return fail(err)
	}
	var files []*indexFile
	protected := make(map[string]bool) // objects named by corrupt indexes
	for _, e := range ents {
		if isTemp(e.Name()) {
			// Index temps are only written under the store lock,
			// which we hold exclusively: this one's writer died.
			if err := s.index.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fail(err)
			}
			continue
		}
		key, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		data, err := s.index.ReadFile(e.Name())
		if err != nil {
			return fail(err)
		}
		vs, bad := parseIndex(data, "")
		f := &indexFile{key: key, versions: vs, drop: make([]bool, len(vs)), corrupt: bad > 0}
		if f.corrupt {
			st.CorruptIndexes++
			for _, sum := range hexSum().FindAll(data, -1) {
				protected[string(sum)] = true
			}
		}
		if len(vs) > 0 {
			files = append(files, f)
		}
	}
	st.Files = len(files)

	// What is on disk: each file's objects, and the old shared ones.
	present := make(map[string]map[string]int64) // key ("" for the old layout) -> sum -> size
	objEnts, err := s.objects.ReadDir()
	if err != nil {
		return fail(err)
	}
	for _, e := range objEnts {
		key := e.Name()
		d, err := s.objects.Sub(key, false)
		if err != nil {
			return fail(err)
		}
		sums, err := listObjects(d)
		d.Close()
		if err != nil {
			return fail(err)
		}
		if legacyDir(key) {
			key = ""
		}
		if present[key] == nil {
			present[key] = make(map[string]int64)
		}
		for sum, size := range sums {
			present[key][sum] = size
		}
	}
	// loc names where a version's object is: "<key>/<sum>", "/<sum>" in
	// the old layout, "" if it is missing.
	loc := func(key string, v Version) string {
		if v.Absent {
			return ""
		}
		if _, ok := present[key][v.SHA256]; ok {
			return key + "/" + v.SHA256
		}
		if _, ok := present[""][v.SHA256]; ok {
			return "/" + v.SHA256
		}
		return ""
	}
	size := func(l string) int64 {
		key, sum, _ := strings.Cut(l, "/")
		return present[key][sum]
	}

	// Keep the newest KeepVersions of each file.
	for _, f := range files {
		if f.corrupt {
			continue
		}
		for i := range len(f.versions) - s.keep {
			f.drop[i] = true
		}
	}

	// Count references and the bytes they hold. Inline contents belong
	// to their version alone.
	refs := make(map[string]int)
	var total int64
	for _, f := range files {
		for i, e := range f.versions {
			if _, n := e.inline(); !f.drop[i] {
				total += n
			}
			if l := loc(f.key, e.Version); !f.drop[i] && l != "" {
				if refs[l] == 0 {
					total += size(l)
				}
				refs[l]++
			}
		}
	}

	// Over the byte cap: drop the oldest versions across files, never the
	// newest of a file.
	if s.maxBytes >= 0 && total > s.maxBytes {
		type cand struct {
			f *indexFile
			i int
		}
		var cands []cand
		for _, f := range files {
			if f.corrupt {
				continue
			}
			for i := range len(f.versions) - 1 {
				if !f.drop[i] {
					cands = append(cands, cand{f, i})
				}
			}
		}
		slices.SortStableFunc(cands, func(a, b cand) int {
			return a.f.versions[a.i].Time.Compare(b.f.versions[b.i].Time)
		})
		for _, c := range cands {
			if total <= s.maxBytes {
				break
			}
			c.f.drop[c.i] = true
			_, n := c.f.versions[c.i].inline()
			total -= n
			if l := loc(c.f.key, c.f.versions[c.i].Version); l != "" {
				if refs[l]--; refs[l] == 0 {
					total -= size(l)
				}
			}
		}
	}

	// Move kept objects of the old layout into their files' directories,
	// before the old copies can be removed.
	for _, f := range files {
		if f.corrupt {
			continue
		}
		for i, e := range f.versions {
			v := e.Version
			l := loc(f.key, v)
			if f.drop[i] || !strings.HasPrefix(l, "/") {
				continue
			}
			if moved, err := s.migrate(f.key, v.SHA256); err != nil {
				return fail(err)
			} else if !moved {
				continue
			}
			if present[f.key] == nil {
				present[f.key] = make(map[string]int64)
			}
			present[f.key][v.SHA256] = size(l)
			if refs[l]--; refs[l] == 0 {
				total -= size(l)
			}
			nl := f.key + "/" + v.SHA256
			if refs[nl] == 0 {
				total += size(nl)
			}
			refs[nl]++
		}
	}

	// Rewrite the indexes that lost versions, before removing any object.
	for _, f := range files {
		if !slices.Contains(f.drop, true) {
			continue
		}
		var buf bytes.Buffer
		for i, e := range f.versions {
			if f.drop[i] {
				st.VersionsRemoved++
				_, n := e.inline()
				st.BytesRemoved += n
				continue
			}
			b, err := e.line()
			if err != nil {
				return fail(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		// WriteFile fsyncs the file and the directory: the new index is
		// durable before objects it no longer references disappear.
		if err := s.index.WriteFile(f.key+".jsonl", buf.Bytes(), 0o644); err != nil {
			return fail(err)
		}
	}

	// Remove unreferenced objects and leftover temp files.
	for _, e := range objEnts {
		key := e.Name()
		d, err := s.objects.Sub(key, false)
		if err != nil {
			return fail(err)
		}
		lk := key
		if legacyDir(key) {
			lk = ""
		}
		keep := make(map[string]bool)
		for sum := range present[lk] {
			if refs[lk+"/"+sum] > 0 {
				keep[sum] = true
			}
		}
		before, err := listObjects(d)
		if err == nil {
			var removed int64
			removed, err = removeUnreferenced(d, keep, protected)
			st.BytesRemoved += removed
		}
		if err == nil {
			var after map[string]int64
			after, err = listObjects(d)
			for sum, n := range after {
				st.BytesKept += n
				delete(before, sum)
			}
			st.ObjectsRemoved += len(before)
		}
		d.Close()
		if err != nil {
			return fail(err)
		}
	}
	for _, f := range files {
		for i, e := range f.versions {
			if _, n := e.inline(); !f.drop[i] {
				st.BytesKept += n
			}
		}
	}
	if err := s.writeTotal(st.BytesKept); err != nil {
		return fail(err)
	}
	return st, nil
}

// listObjects returns the objects in d (named by their sum) and their
// sizes. Anything but a regular file named by a sum is left out.
func listObjects(d *statedir.Dir) (map[string]int64, error) {
	ents, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(ents))
	for _, e := range ents {
		if !validSum(e.Name()) {
			continue
		}
		st, err := d.Stat(e.Name())
		if err != nil {
			return nil, err
		}
		if st.Regular() {
			out[e.Name()] = st.Size
		}
	}
	return out, nil
}

// migrate copies the old-layout object sum into the object directory of
// the file whose key is key. An old object whose bytes no longer match its
// sum is not copied but kept where it is (Load reports it as corrupt).
func (s *Store) migrate(key, sum string) (bool, error) {
	sub, name := legacyName(sum)
	old, err := s.objects.Sub(sub, false)
	if err != nil {
		return false, err
	}
	data, err := old.ReadFile(name)
	old.Close()
	if err != nil {
		return false, err
	}
	if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
		return false, nil
	}
	d, err := s.objects.Sub(key, true)
	if err != nil {
		return false, err
	}
	defer d.Close()
	_, err = s.putObject(d, sum, data, &Meta{})
	return err == nil, err
}
