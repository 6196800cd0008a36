//go:build unix

package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
)

// versionCount is how many versions of a file its index held when the
// version with sequence number seq had just been saved.
type versionCount struct{ seq, versions uint64 }

// mayTrim reports whether the path's index may hold more versions than
// trim keeps, once the version with sequence number seq is saved; when it
// says no, trim would read nothing.
func (s *Store) mayTrim(path string, seq uint64) bool {
	limit := s.keep + s.keep/4
	bound := seq
	if c, ok := s.counted.Load(path); ok && c.(versionCount).seq <= seq {
		bound = c.(versionCount).versions + seq - c.(versionCount).seq
	}
	return bound > uint64(limit)
}

// trim applies KeepVersions to path's index and removes the objects in objs
// (path's object directory, nil if it has none) that no kept version names,
// with temp files left by Saves that died. The caller holds the store lock
// shared and path's lock, so no one else writes the index or objs meanwhile.
// It reads only this file's index and objects, so its cost does not grow
// with the number of files. To spare a rewrite (two fsyncs) on every Save,
// the index may grow a quarter past KeepVersions before it is cut back to
// KeepVersions. It returns the bytes removed.
//
// The index is replaced durably (temporary file, fsync, rename, directory
// fsync) before any object is removed, so a crash never leaves a version
// naming a removed object; at worst unreferenced objects remain until the
// next trim. An index with an undecodable line is left for a person, as
// Prune leaves it.
//
// seq is the sequence number of the version just saved. Every version has
// its own, so a file holds at most the versions this Store last counted
// plus the sequence numbers assigned since (in any process); while that
// bound stays under the limit, trim reads nothing.
func (s *Store) trim(path string, objs *statedir.Dir, seq uint64) (int64, error) {
	if !s.mayTrim(path, seq) {
		return 0, nil
	}
	limit := s.keep + s.keep/4
	name := indexName(path)
	// The index is read and rewritten through buffers kept between trims:
	// with inline contents it runs to hundreds of KiB, and fresh buffers
	// that size cost more in page faults and zeroing than the copy does.
	bufs := s.takeTrimBufs()
	defer s.trimDone(bufs)
	data, err := s.index.ReadFileInto(name, bufs.in)
	if err != nil {
		return 0, err
	}
	bufs.in = data[:0]
	if bytes.Count(data, []byte("\n")) <= limit {
		return 0, nil // annotations count too: an upper bound on versions
	}
	// The lines are copied as they are, not decoded and encoded again:
	// inline contents make an index large, and their base64 need not be
	// decoded to be kept.
	lines, bad := indexLines(data)
	if bad > 0 {
		return 0, nil
	}
	mine := versionsOf(lines, path)
	if mine <= limit {
		s.counted.Store(path, versionCount{seq: seq, versions: uint64(mine)})
		return 0, nil
	}
	buf := &bufs.out
	buf.Reset()
	buf.Grow(len(data)) // the kept lines are fewer: no growing and copying
	refs, removed := keptLines(buf, lines, path, mine-s.keep)
	if err := s.index.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return 0, err
	}
	s.counted.Store(path, versionCount{seq: seq, versions: uint64(s.keep)})
	// WriteFile fsynced the directory: the new index's name is durable.
	if st, err := s.index.Stat(name); err == nil && st.Exists {
		s.durable.Store(s.index.Join(name), st.Ino)
	}
	n, err := s.removeUnreferencedOf(path, objs, refs)
	return removed + n, err
}

// versionsOf counts path's versions in lines (not their annotations), to
// tell whether the index holds more than trim keeps.
func versionsOf(lines []indexLine, path string) int {
	mine := 0
	for _, l := range lines {
		if l.Kind == "" && l.Path == path {
			mine++
		}
	}
	return mine
}

// keptLines writes to buf, one a line, the index lines that trim keeps:
// all but the first drop versions of path and their annotations. It
// returns the objects that the kept versions name, which must stay, and
// the bytes of inline contents dropped.
func keptLines(buf *bytes.Buffer, lines []indexLine, path string, drop int) (refs map[string]bool, removed int64) {
	dropped := make(map[string]bool) // IDs of this path's dropped versions
	refs = make(map[string]bool)
	for _, l := range lines {
		// Lines of another path (a 128-bit key collision) are kept.
		mineLine := l.Path == path
		switch {
		case l.Kind == "" && mineLine && drop > 0:
			drop--
			dropped[l.ID] = true
			if l.Data != nil {
				removed += l.Size
			}
			continue
		case l.Kind != "" && mineLine && dropped[l.ID]:
			continue // an annotation of a dropped version
		}
		buf.Write(l.raw)
		buf.WriteByte('\n')
		if l.Kind == "" && !l.Absent && l.Data == nil {
			refs[l.SHA256] = true
		}
	}
	return refs, removed
}

// removeUnreferencedOf removes from objs, path's object directory (nil if
// the caller has none open), the objects that refs does not name and the
// temp files, as removeUnreferenced does. It returns the bytes removed.
func (s *Store) removeUnreferencedOf(path string, objs *statedir.Dir, refs map[string]bool) (int64, error) {
	if objs == nil {
		// Saved inline: the file may still have objects from larger
		// versions.
		d, err := s.objectDir(path, false)
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		defer d.Close()
		objs = d
	}
	return removeUnreferenced(objs, refs, nil)
}

// removeUnreferenced removes from dir the objects that refs does not name
// and protected does not list, and every temp file; the caller holds the
// lock that keeps writers of dir out. It returns the bytes removed.
func removeUnreferenced(dir *statedir.Dir, refs, protected map[string]bool) (int64, error) {
	ents, err := dir.ReadDir()
	if err != nil {
		return 0, err
	}
	var removed int64
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, ".tmp-") && (!validSum(n) || refs[n] || protected[n]) {
			continue
		}
		st, err := dir.Stat(n)
		if err != nil || !st.Regular() {
			continue // not ours: leave it alone
		}
		if err := dir.Remove(n); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return removed, err
		}
		removed += st.Size
	}
	return removed, nil
}

// The running total of object bytes is kept in the file "total" as two
// decimal numbers: the total, and the floor, the total Prune left when it
// could not get under the cap (else 0). It is updated in place under
// locks/total.lock and never fsynced: a total lost or skewed by a crash
// only moves the next Prune, which recomputes it exactly.
const (
	totalName = "total"
	totalLock = "total.lock"
)

func (s *Store) lockTotal() (func() error, error) { return s.lock(totalLock, false) }

// initTotal makes a new store's total 0. A store that has objects but no
// total was written before the running total existed: the first Save asks
// for a Prune, which computes it (and moves old objects to their files).
func (s *Store) initTotal() error {
	if st, err := s.dir.Stat(totalName); err != nil || st.Exists {
		return err
	}
	ents, err := s.objects.ReadDir()
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		s.overCap.Store(true)
		return nil
	}
	unlock, err := s.lockTotal()
	if err != nil {
		return err
	}
	defer unlock()
	if st, err := s.dir.Stat(totalName); err != nil || st.Exists {
		return err
	}
	return s.dir.WriteFile(totalName, formatTotal(0, 0), 0o644)
}

func formatTotal(total, floor int64) []byte {
	return fmt.Appendf(nil, "%020d %020d\n", total, floor)
}

// account adds delta to the running total and notes when it passed the
// cap: above MaxBytes, and above the floor Prune last left by a sixteenth of
// MaxBytes, so that a store whose newest versions alone exceed the cap is
// not pruned at every Save. The total is kept even without a cap, so that
// it is right when the store is opened with one. Errors are dropped: the
// total is a hint.
func (s *Store) account(delta int64) {
	if delta == 0 {
		return
	}
	unlock, err := s.lockTotal()
	if err != nil {
		return
	}
	defer unlock()
	f, err := s.dir.Open(totalName, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		s.overCap.Store(true) // no total yet: Prune makes one
		return
	}
	if err != nil {
		return
	}
	defer f.Close()
	// The size it was opened with, so one read takes it all; anything
	// that does not parse is a total to recompute.
	buf := make([]byte, min(max(f.Size(), 0), 64))
	n, _ := f.ReadAt(buf, 0)
	var total, floor int64
	if _, err := fmt.Sscanf(string(buf[:n]), "%d %d", &total, &floor); err != nil {
		s.overCap.Store(true)
		return
	}
	total = max(0, total+delta)
	f.WriteAt(formatTotal(total, floor), 0)
	if s.maxBytes >= 0 && total > max(s.maxBytes, floor+s.maxBytes/16) {
		s.overCap.Store(true)
	}
}

// OverCap reports whether a Save of this Store found the running total of
// object bytes over MaxBytes (or found no total, in a store written before
// it was kept) since the last call, and clears the report. The caller then
// runs Prune, outside any commit's critical section.
func (s *Store) OverCap() bool { return s.overCap.Swap(false) }

// writeTotal records the total Prune computed.
func (s *Store) writeTotal(total int64) error {
	unlock, err := s.lockTotal()
	if err != nil {
		return err
	}
	defer unlock()
	floor := int64(0)
	if s.maxBytes >= 0 && total > s.maxBytes {
		floor = total
	}
	return s.dir.WriteFile(totalName, formatTotal(total, floor), 0o644)
}

func isTemp(name string) bool {
	return strings.HasPrefix(name, ".tmp-") || atomicfile.IsTemp(name)
}

// indexLine is what trim needs of one index line, and the line itself.
type indexLine struct {
	Kind    string          `json:"kind"`
	ID      string          `json:"version"`
	Path    string          `json:"path"`
	PathHex string          `json:"path_hex"`
	SHA256  string          `json:"sha256"`
	Size    int64           `json:"size_bytes"`
	Absent  bool            `json:"absent"`
	Data    json.RawMessage `json:"data"` // not decoded: nil unless inline
	raw     []byte
}

func (l *indexLine) joinPath() error {
	p, err := rawpath.Join(l.Path, l.PathHex)
	if err != nil {
		return err
	}
	l.Path, l.PathHex = p, ""
	return nil
}

// trimBufs are the buffers of one trim: the index read, and the index
// written.
type trimBufs struct {
	in  []byte
	out bytes.Buffer
}

// takeTrimBufs returns the store's trim buffers, or new ones while another
// trim has them. Unlike a sync.Pool's, they survive garbage collections,
// which under a stream of commits come between any two trims.
func (s *Store) takeTrimBufs() *trimBufs {
	if b := s.spareTrim.Swap(nil); b != nil {
		return b
	}
	return new(trimBufs)
}

// trimDone gives back buffers takeTrimBufs returned.
func (s *Store) trimDone(b *trimBufs) {
	if cap(b.in) <= maxKeptTrimBuffer && b.out.Cap() <= maxKeptTrimBuffer {
		s.spareTrim.Store(b)
	}
}

// maxKeptTrimBuffer bounds the buffers a Store keeps between trims.
const maxKeptTrimBuffer = 8 << 20

// indexLines splits an index into its complete lines (a torn last line is
// left out, as parseIndex leaves it) and counts those that do not decode.
func indexLines(data []byte) (ls []indexLine, bad int) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		l := indexLine{raw: line}
		if err := decodeLine(line, &l, &l.Data); err != nil {
			bad++
			continue
		}
		if _, ok := parseID(l.ID); !ok {
			bad++
			continue
		}
		ls = append(ls, l)
	}
	return ls, bad
}
