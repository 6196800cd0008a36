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

func (c *seenCache) put(sum string, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey == nil {
		c.byKey = map[string]*list.Element{}
	}
	if e, ok := c.byKey[sum]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[sum] = c.order.PushFront(seenEntry{sum, slices.Clone(data)})
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
	if len(data) > seenFileMax || !isHexSHA256(sum) {
		return
	}
	if s.persist == "" {
		s.seen.put(sum, data)
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
	trimSeen(d)
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

// trimSeen removes the oldest files of a persistent session's store while
// it holds more than seenDiskFiles files or seenDiskMax bytes, and temp
// files that a crash left.
func trimSeen(d interface {
	ReadDir() ([]fs.DirEntry, error)
	Remove(string) error
}) {
	ents, err := d.ReadDir()
	if err != nil {
		return
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
	slices.SortFunc(files, func(a, b file) int { return int(min(max(a.mtime-b.mtime, -1), 1)) })
	for len(files) > seenDiskFiles || total > seenDiskMax {
		d.Remove(files[0].name)
		total -= files[0].size
		files = files[1:]
	}
}
