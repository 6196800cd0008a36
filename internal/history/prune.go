//go:build unix

package history

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/editguard/editguard/internal/statedir"
)

// PruneStats reports what Prune did.
type PruneStats struct {
	Files           int   // files with history
	VersionsRemoved int   // index entries dropped
	ObjectsRemoved  int   // object files removed
	BytesRemoved    int64 // bytes of removed objects (and leftover temp files)
	BytesKept       int64 // bytes of the objects that remain
	CorruptIndexes  int   // index files left untouched because a line did not decode
}

// indexFile is one index as Prune sees it.
type indexFile struct {
	name     string
	versions []Version // oldest first
	drop     []bool
	corrupt  bool
}

var hexSum = regexp.MustCompile(`[0-9a-f]{64}`)

// Prune applies retention. It first drops all but the newest KeepVersions
// versions of every file; then, while the objects still referenced total more
// than MaxBytes, it drops the oldest remaining versions across all files,
// except that the newest version of a file is never dropped. Finally it
// removes every object no remaining version references, and temp files left
// by interrupted Saves.
//
// Prune holds the store lock exclusively throughout, so it runs while no Save,
// SetLedgerSeq or Load is in progress in any process, and those wait for it.
// That is what makes "unreferenced" safe to act on: no Save can be between
// reusing an object and recording the version that references it. Prune is
// therefore not meant for a commit's critical section; run it afterwards.
//
// Rewritten indexes are replaced atomically (temp file, fsync, rename,
// directory fsync) before any object is removed, so a crash never leaves an
// index entry pointing at a removed object; at worst unreferenced objects
// remain until the next Prune. An index with an undecodable line is left as
// it is, and every object it might name is kept.
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
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			// Only Prune writes temps here, and we hold the store lock.
			s.index.Remove(name)
			continue
		}
		if !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		data, err := s.index.ReadFile(name)
		if err != nil {
			return fail(err)
		}
		vs, bad := parseIndex(data, "")
		f := &indexFile{name: name, versions: vs, drop: make([]bool, len(vs)), corrupt: bad > 0}
		if f.corrupt {
			st.CorruptIndexes++
			for _, sum := range hexSum.FindAll(data, -1) {
				protected[string(sum)] = true
			}
		}
		if len(vs) > 0 {
			files = append(files, f)
		}
	}
	st.Files = len(files)

	// Keep the newest KeepVersions of each file.
	for _, f := range files {
		if f.corrupt {
			continue
		}
		for i := range len(f.versions) - s.keep {
			f.drop[i] = true
		}
	}

	// Count references and the bytes they hold.
	refs := make(map[string]int)
	var total int64
	for _, f := range files {
		for i, v := range f.versions {
			if f.drop[i] || v.Absent {
				continue
			}
			if refs[v.SHA256] == 0 {
				total += v.Size
			}
			refs[v.SHA256]++
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
			if v := c.f.versions[c.i]; !v.Absent {
				if refs[v.SHA256]--; refs[v.SHA256] == 0 {
					total -= v.Size
				}
			}
		}
	}

	// Rewrite the indexes that lost versions, before removing any object.
	for _, f := range files {
		if !slices.Contains(f.drop, true) {
			continue
		}
		var buf bytes.Buffer
		for i, v := range f.versions {
			if f.drop[i] {
				st.VersionsRemoved++
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				return fail(err)
			}
			buf.Write(b)
			buf.WriteByte('\n')
		}
		// A durable replace (temp, fsync, rename, directory fsync), so
		// the index no longer names an object before it can disappear.
		if err := s.index.WriteFile(f.name, buf.Bytes(), 0o644); err != nil {
			return fail(err)
		}
	}

	// Remove unreferenced objects and leftover temp files.
	fan, err := s.objects.ReadDir()
	if err != nil {
		return fail(err)
	}
	for _, d := range fan {
		if !d.IsDir() {
			continue
		}
		sub, err := s.objects.Sub(d.Name(), false)
		if err != nil {
			return fail(err)
		}
		err = s.pruneFan(sub, refs, protected, &st)
		sub.Close()
		if err != nil {
			return fail(err)
		}
	}
	return st, nil
}

// pruneFan removes the objects of one fan-out directory that nothing
// references, and leftover temp files.
func (s *Store) pruneFan(sub *statedir.Dir, refs map[string]int, protected map[string]bool, st *PruneStats) error {
	objs, err := sub.ReadDir()
	if err != nil {
		return err
	}
	for _, o := range objs {
		info, err := sub.Stat(o.Name())
		if err != nil || !info.Exists {
			continue // removed under us: nothing to do
		}
		if refs[o.Name()] > 0 || protected[o.Name()] {
			st.BytesKept += info.Size
			continue
		}
		if err := sub.Remove(o.Name()); err != nil {
			return err
		}
		st.BytesRemoved += info.Size
		if !strings.HasPrefix(o.Name(), ".tmp-") {
			st.ObjectsRemoved++
		}
	}
	return nil
}

// trim applies KeepVersions to path's index at Save time, so retention holds
// whatever mix of processes saves (a CLI invocation saves once and exits).
// It reads only that file's index, so its cost does not grow with the
// number of files. To spare a rewrite (two fsyncs) on every Save, the index
// may grow a quarter past KeepVersions before it is cut back to
// KeepVersions. The objects of dropped versions are removed by Prune, which
// alone can see every reference to them.
func (s *Store) trim(path string) error {
	limit := s.keep + s.keep/4
	unlock, err := s.lock(fileLock(path), false)
	if err != nil {
		return err
	}
	defer unlock()
	name := indexName(path)
	data, err := s.index.ReadFile(name)
	if err != nil {
		return err
	}
	if bytes.Count(data, []byte("\n")) <= limit {
		return nil // annotations count too: an upper bound on versions
	}
	vs, bad := parseIndex(data, "")
	if bad > 0 || len(vs) <= limit {
		return nil // a damaged index is left for a person, as Prune leaves it
	}
	var buf bytes.Buffer
	for _, v := range vs[len(vs)-s.keep:] {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return s.index.WriteFile(name, buf.Bytes(), 0o644)
}
