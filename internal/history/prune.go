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
	"time"

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
// the file it saves), and, with MaxAge set, the versions older than that
// but the newest of each file (see age.go); then, while the objects still referenced total more
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
	r := &pruneRun{
		s:         s,
		start:     s.now(),
		protected: make(map[string]bool),
		present:   make(map[string]map[string]int64),
		refs:      make(map[string]int),
	}
	fail := func(err error) (PruneStats, error) { return r.st, &Error{Op: "prune", Err: err} }
	unlock, err := s.lock(storeLock, false)
	if err != nil {
		return fail(err)
	}
	defer unlock()

	if err := r.readIndexes(); err != nil {
		return fail(err)
	}
	if err := r.readObjects(); err != nil {
		return fail(err)
	}
	r.keepNewest()
	r.dropAged()
	r.countRefs()
	r.dropOverCap()
	if err := r.migrateLegacy(); err != nil {
		return fail(err)
	}
	if err := r.rewriteIndexes(); err != nil {
		return fail(err)
	}
	if err := r.removeObjects(); err != nil {
		return fail(err)
	}
	r.countKeptInline()
	if err := s.writeTotal(r.st.BytesKept); err != nil {
		return fail(err)
	}
	if s.maxAge > 0 {
		if err := s.writeAged(r.start); err != nil {
			return fail(err)
		}
	}
	return r.st, nil
}

// pruneRun is one Prune: what it has read of the store and what it has
// decided so far. Its steps run in the order Prune calls them, all under
// the store lock Prune holds, and each reads what the steps before it left.
type pruneRun struct {
	s         *Store
	start     time.Time // when the run began: ages are measured from it
	st        PruneStats
	files     []*indexFile                // indexes with at least one version
	protected map[string]bool             // objects named by corrupt indexes
	objEnts   []fs.DirEntry               // the entries of objects/, as first read
	present   map[string]map[string]int64 // key ("" for the old layout) -> sum -> size
	refs      map[string]int              // loc -> versions kept that reference it
	total     int64                       // bytes the kept versions hold
}

// readIndexes reads every index, so that the later steps decide from the
// whole store, and removes the index temps whose writers died.
func (r *pruneRun) readIndexes() error {
	ents, err := r.s.index.ReadDir()
	if err != nil {
		return err
	}
	for _, e := range ents {
		if isTemp(e.Name()) {
			// Index temps are only written under the store lock,
			// which we hold exclusively: this one's writer died.
			if err := r.s.index.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		key, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		if err := r.readIndex(e.Name(), key); err != nil {
			return err
		}
	}
	r.st.Files = len(r.files)
	return nil
}

// readIndex reads the index file name of the file whose key is key. A corrupt
// index protects every sum it mentions, since which of its lines name
// objects can no longer be told.
func (r *pruneRun) readIndex(name, key string) error {
	data, err := r.s.index.ReadFile(name)
	if err != nil {
		return err
	}
	vs, bad := parseIndex(data, "")
	f := &indexFile{key: key, versions: vs, drop: make([]bool, len(vs)), corrupt: bad > 0}
	if f.corrupt {
		r.st.CorruptIndexes++
		for _, sum := range hexSum().FindAll(data, -1) {
			r.protected[string(sum)] = true
		}
	}
	if len(vs) > 0 {
		r.files = append(r.files, f)
	}
	return nil
}

// readObjects records what is on disk: each file's objects, and the old
// shared ones, so that references can be matched to the bytes they hold.
func (r *pruneRun) readObjects() error {
	objEnts, err := r.s.objects.ReadDir()
	if err != nil {
		return err
	}
	r.objEnts = objEnts
	for _, e := range objEnts {
		key := e.Name()
		d, err := r.s.objects.Sub(key, false)
		if err != nil {
			return err
		}
		sums, err := listObjects(d)
		d.Close()
		if err != nil {
			return err
		}
		if legacyDir(key) {
			key = ""
		}
		if r.present[key] == nil {
			r.present[key] = make(map[string]int64)
		}
		for sum, size := range sums {
			r.present[key][sum] = size
		}
	}
	return nil
}

// loc names where a version's object is: "<key>/<sum>", "/<sum>" in
// the old layout, "" if it is missing.
func (r *pruneRun) loc(key string, v Version) string {
	if v.Absent {
		return ""
	}
	if _, ok := r.present[key][v.SHA256]; ok {
		return key + "/" + v.SHA256
	}
	if _, ok := r.present[""][v.SHA256]; ok {
		return "/" + v.SHA256
	}
	return ""
}

// size is the size on disk of the object at l, a loc.
func (r *pruneRun) size(l string) int64 {
	key, sum, _ := strings.Cut(l, "/")
	return r.present[key][sum]
}

// keepNewest marks all but the newest KeepVersions of each file to be
// dropped: the per-file limit applies before the byte cap.
func (r *pruneRun) keepNewest() {
	for _, f := range r.files {
		if f.corrupt {
			continue
		}
		for i := range len(f.versions) - r.s.keep {
			f.drop[i] = true
		}
	}
}

// countRefs counts references and the bytes they hold, so that the byte
// cap is measured against what stays. Inline contents belong to their
// version alone.
func (r *pruneRun) countRefs() {
	for _, f := range r.files {
		for i, e := range f.versions {
			if _, n := e.inline(); !f.drop[i] {
				r.total += n
			}
			if l := r.loc(f.key, e.Version); !f.drop[i] && l != "" {
				if r.refs[l] == 0 {
					r.total += r.size(l)
				}
				r.refs[l]++
			}
		}
	}
}

// dropOverCap, when the kept versions are over the byte cap, drops the
// oldest versions across files, never the newest of a file, until they
// are not.
func (r *pruneRun) dropOverCap() {
	if r.s.maxBytes < 0 || r.total <= r.s.maxBytes {
		return
	}
	type cand struct {
		f *indexFile
		i int
	}
	var cands []cand
	for _, f := range r.files {
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
		if r.total <= r.s.maxBytes {
			break
		}
		c.f.drop[c.i] = true
		_, n := c.f.versions[c.i].inline()
		r.total -= n
		if l := r.loc(c.f.key, c.f.versions[c.i].Version); l != "" {
			if r.refs[l]--; r.refs[l] == 0 {
				r.total -= r.size(l)
			}
		}
	}
}

// migrateLegacy moves kept objects of the old layout into their files'
// directories, before the old copies can be removed.
func (r *pruneRun) migrateLegacy() error {
	for _, f := range r.files {
		if f.corrupt {
			continue
		}
		for i, e := range f.versions {
			v := e.Version
			l := r.loc(f.key, v)
			if f.drop[i] || !strings.HasPrefix(l, "/") {
				continue
			}
			if err := r.migrateOne(f.key, v.SHA256, l); err != nil {
				return err
			}
		}
	}
	return nil
}

// migrateOne moves the old-layout object at l, named sum, into the
// directory of the file whose key is key, and moves its reference with
// it, so that removeObjects keeps the new copy and may drop the old one.
func (r *pruneRun) migrateOne(key, sum, l string) error {
	if moved, err := r.s.migrate(key, sum); err != nil {
		return err
	} else if !moved {
		return nil
	}
	if r.present[key] == nil {
		r.present[key] = make(map[string]int64)
	}
	r.present[key][sum] = r.size(l)
	if r.refs[l]--; r.refs[l] == 0 {
		r.total -= r.size(l)
	}
	nl := key + "/" + sum
	if r.refs[nl] == 0 {
		r.total += r.size(nl)
	}
	r.refs[nl]++
	return nil
}

// rewriteIndexes rewrites the indexes that lost versions, before removing
// any object.
func (r *pruneRun) rewriteIndexes() error {
	for _, f := range r.files {
		if !slices.Contains(f.drop, true) {
			continue
		}
		if err := r.rewriteIndex(f); err != nil {
			return err
		}
	}
	return nil
}

// rewriteIndex writes f's index without its dropped versions, and counts
// what they held.
func (r *pruneRun) rewriteIndex(f *indexFile) error {
	var buf bytes.Buffer
	for i, e := range f.versions {
		if f.drop[i] {
			r.st.VersionsRemoved++
			_, n := e.inline()
			r.st.BytesRemoved += n
			continue
		}
		b, err := e.line()
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	// WriteFile fsyncs the file and the directory: the new index is
	// durable before objects it no longer references disappear.
	return r.s.index.WriteFile(f.key+".jsonl", buf.Bytes(), 0o644)
}

// removeObjects removes unreferenced objects and leftover temp files, in
// every object directory Prune read.
func (r *pruneRun) removeObjects() error {
	for _, e := range r.objEnts {
		if err := r.sweepDir(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// sweepDir removes from the object directory key what no kept version
// references and no corrupt index protects, and counts the bytes and
// objects removed and kept.
func (r *pruneRun) sweepDir(key string) error {
	d, err := r.s.objects.Sub(key, false)
	if err != nil {
		return err
	}
	lk := key
	if legacyDir(key) {
		lk = ""
	}
	keep := make(map[string]bool)
	for sum := range r.present[lk] {
		if r.refs[lk+"/"+sum] > 0 {
			keep[sum] = true
		}
	}
	before, err := listObjects(d)
	if err == nil {
		var removed int64
		removed, err = removeUnreferenced(d, keep, r.protected)
		r.st.BytesRemoved += removed
	}
	if err == nil {
		var after map[string]int64
		after, err = listObjects(d)
		for sum, n := range after {
			r.st.BytesKept += n
			delete(before, sum)
		}
		r.st.ObjectsRemoved += len(before)
	}
	d.Close()
	return err
}

// countKeptInline adds the inline contents of the kept versions to
// BytesKept, which then is the exact total Save's running count starts
// from.
func (r *pruneRun) countKeptInline() {
	for _, f := range r.files {
		for i, e := range f.versions {
			if _, n := e.inline(); !f.drop[i] {
				r.st.BytesKept += n
			}
		}
	}
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
