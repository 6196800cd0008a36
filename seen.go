package editguard

import (
	"container/list"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"
)

// What a session last read of each file is kept, by content address, so
// that a STALE_FILE error can show the agent what changed since then (see
// staleChanges). It is a bounded cache, never a guarantee: when the content
// is not there, the error says so and the agent reads again.
const (
	// seenFileMax is the largest file whose bytes a read keeps.
	seenFileMax = 1 << 20
	// seenMemoryMax bounds the bytes an in-memory session keeps.
	seenMemoryMax = 32 << 20
	// seenDiskMax and seenDiskFiles bound what a persistent session
	// keeps in .editguard/sessions/NAME.seen/.
	seenDiskMax   = 16 << 20
	seenDiskFiles = 64
	// seenListEvery is how many files a process adds to a persistent
	// session's store at most between two listings of it.
	seenListEvery = 16
)

// seenCache is an in-memory session's store: least recently used content
// goes first.
type seenCache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element // sha256 -> element holding seenEntry
	order list.List                // front: most recently used
	total int
}

type seenEntry struct {
	sum  string
	data []byte
}

func (c *seenCache) put(sum string, data []byte, frozen bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	if e, ok := c.byKey[sum]; ok {
		c.order.MoveToFront(e)
		return
	}
	if !frozen {
		data = slices.Clone(data)
	}
	c.byKey[sum] = c.order.PushFront(seenEntry{sum, data})
	c.total += len(data)
	for c.total > seenMemoryMax {
		e := c.order.Back()
		old := c.order.Remove(e).(seenEntry)
		delete(c.byKey, old.sum)
		c.total -= len(old.data)
	}
}

func (c *seenCache) get(sum string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[sum]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(seenEntry).data, true
}

// remember keeps data, the bytes of a file the session has just read or
// written, whose SHA-256 is sum. Files over seenFileMax are not kept.
// Failures are ignored: the cache only saves the agent a read.
func (s *Session) remember(sum string, data []byte) {
	s.rememberFrozen(sum, data, false)
}

// rememberFrozen is remember; with frozen set, nothing ever writes to
// data, and an in-memory session keeps it without a copy.
func (s *Session) rememberFrozen(sum string, data []byte, frozen bool) {
	if len(data) > seenFileMax || !isHexSHA256(sum) {
		return
	}
	if s.persist == "" {
		s.seen.put(sum, data, frozen)
		return
	}
	d, err := s.w.sessions.Sub(s.seenDir(), true)
	if err != nil {
		return
	}
	defer d.Close()
	if st, err := d.Stat(sum); err == nil && st.Exists {
		return
	}
	// Not fsynced: recall checks the hash, so a file torn by a crash only
	// reads as missing.
	f, tmp, err := d.CreateTemp(".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil || d.Rename(tmp, sum) != nil {
		d.Remove(tmp)
		return
	}
	v, _ := s.w.seenTallies.LoadOrStore(s.seenDir(), &seenTally{})
	t := v.(*seenTally)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.files++
	t.bytes += int64(len(data))
	t.added++
	if !t.listed || t.added >= seenListEvery || t.files > seenDiskFiles || t.bytes > seenDiskMax {
		t.files, t.bytes = trimSeen(d)
		t.listed, t.added = true, 0
	}
}

// seenTally is what a process knows of a persistent session's store: how
// many files and bytes it held when last listed, plus what the process has
// added since. Listing the store costs a stat per file, so a process lists
// it only when its tally says the store may be over its bounds, and after
// every seenListEvery files it added, which bounds what other processes
// writing the same store may add unseen.
type seenTally struct {
	mu           sync.Mutex
	listed       bool
	files, bytes int64
	added        int
}

// expected returns the SHA-256 of what the session last saw of the file at
// resolved and, if an in-memory session still holds them, those bytes: a
// change reads the file and compares instead of hashing it. A persistent
// session's store is on disk, where other programs may change it, so its
// bytes would have to be hashed anyway and none are returned.
func (s *Session) expected(resolved string) (string, []byte) {
	if s.persist != "" {
		return "", nil
	}
	b, ok := s.baseline(resolved)
	if !ok {
		return "", nil
	}
	data, ok := s.seen.get(b.SHA256)
	if !ok {
		return "", nil
	}
	return b.SHA256, data
}

// recall returns the bytes whose SHA-256 is sum, if the session kept them.
func (s *Session) recall(sum string) ([]byte, bool) {
	if s.persist == "" {
		return s.seen.get(sum)
	}
	d, err := s.w.sessions.Sub(s.seenDir(), false)
	if err != nil {
		return nil, false
	}
	defer d.Close()
	data, err := d.ReadFile(sum)
	if err != nil || sha256Hex(data) != sum {
		return nil, false
	}
	return data, true
}

func (s *Session) seenDir() string { return strings.TrimSuffix(s.persist, ".json") + ".seen" }

// trimSeen removes temp files that a crash left from a persistent session's
// store and, if it holds more than seenDiskFiles files or seenDiskMax bytes,
// its oldest files until it holds three quarters of either at most (so that
// the next files do not each make it list the store again). It returns the
// files and bytes left; on an error, the bounds, so that the next file
// lists the store again.
func trimSeen(d interface {
	ReadDir() ([]fs.DirEntry, error)
	Remove(string) error
}) (nfiles, nbytes int64) {
	ents, err := d.ReadDir()
	if err != nil {
		return seenDiskFiles, seenDiskMax
	}
	type file struct {
		name  string
		size  int64
		mtime int64
	}
	var files []file
	var total int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if strings.HasPrefix(e.Name(), ".tmp-") {
			// Another process may be about to rename a fresh one.
			if time.Since(info.ModTime()) > time.Minute {
				d.Remove(e.Name())
			}
			continue
		}
		files = append(files, file{e.Name(), info.Size(), info.ModTime().UnixNano()})
		total += info.Size()
	}
	if len(files) <= seenDiskFiles && total <= seenDiskMax {
		return int64(len(files)), total
	}
	slices.SortFunc(files, func(a, b file) int { return int(min(max(a.mtime-b.mtime, -1), 1)) })
	for len(files) > seenDiskFiles*3/4 || total > seenDiskMax*3/4 {
		d.Remove(files[0].name)
		total -= files[0].size
		files = files[1:]
	}
	return int64(len(files)), total
}
