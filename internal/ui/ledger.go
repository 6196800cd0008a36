package ui

import (
	"slices"
	"sync"

	"github.com/editguard/editguard"
)

// maxScan bounds how many records from the ledger's end one page may pass
// over to find the records a filter the ledger does not check matches.
const maxScan = 1 << 18

// tail returns the last n records f's ledger filter matches with a seq
// below before (0: any), newest first, read back from there: the ledger
// finds that record by bisecting its file, so the cost is the page's.
func (s *Server) tail(f filter, before uint64, n int) ([]*editguard.LedgerRecord, error) {
	var recs []*editguard.LedgerRecord
	err := s.w.Log(f.logFilter(before, n), func(r *editguard.LedgerRecord) error {
		recs = append(recs, r)
		return nil
	})
	slices.Reverse(recs)
	return recs, err
}

// page returns up to n records that f matches with a seq below before (0:
// from the newest), newest first, and whether older ones follow. For the
// conditions the ledger does not check itself it reads further back, at
// most maxScan records.
func (s *Server) page(f filter, before uint64, n int) ([]*editguard.LedgerRecord, bool, error) {
	want := n + 1
	for last := want; ; last *= 4 {
		last = min(last, maxScan)
		recs, err := s.tail(f, before, last)
		if err != nil {
			return nil, false, err
		}
		matched := recs
		if f.local() {
			matched = slices.DeleteFunc(slices.Clone(recs), func(r *editguard.LedgerRecord) bool { return !f.matches(r) })
		}
		if len(matched) >= want || len(recs) < last || last == maxScan {
			return matched[:min(n, len(matched))], len(matched) > n, nil
		}
	}
}

// newestSeq returns the sequence number of the ledger's last record, or 0.
func (s *Server) newestSeq() (uint64, error) {
	recs, err := s.tail(filter{}, 0, 1)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	return recs[0].Seq, nil
}

// record finds the record seq, wherever it lies in the ledger.
func (s *Server) record(seq uint64) (*editguard.LedgerRecord, error) {
	if seq == 0 {
		return nil, nil
	}
	recs, err := s.tail(filter{}, seq+1, 1)
	if err != nil || len(recs) == 0 || recs[0].Seq != seq {
		return nil, err
	}
	return recs[0], nil
}

// groupReach is how far from a record the other records of its patch
// transaction or shell command are looked for, in sequence numbers.
const groupReach = 256

// group returns the records of one patch transaction or shell command
// near the record r, oldest first.
func (s *Server) group(r *editguard.LedgerRecord) ([]*editguard.LedgerRecord, error) {
	key := groupOf(r)
	if key == "" {
		return []*editguard.LedgerRecord{r}, nil
	}
	recs, err := s.tail(filter{Session: r.Session}, r.Seq+groupReach, 2*groupReach)
	if err != nil {
		return nil, err
	}
	var out []*editguard.LedgerRecord
	for _, o := range recs {
		if groupOf(o) == key {
			out = append(out, o)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// histories caches the version lists and current contents of files for
// one request.
type histories struct {
	w   Reader
	by  map[string][]editguard.Version
	cur map[string]nowFile
}

// nowFile is a file as it is now.
type nowFile struct {
	st   editguard.FileState
	data []byte
	err  error
}

func (h *histories) current(p string) nowFile {
	if c, ok := h.cur[p]; ok {
		return c
	}
	var c nowFile
	c.st, c.data, c.err = h.w.Current(p)
	if h.cur == nil {
		h.cur = map[string]nowFile{}
	}
	h.cur[p] = c
	return c
}

func (h *histories) of(p string) []editguard.Version {
	if vs, ok := h.by[p]; ok {
		return vs
	}
	vs, _ := h.w.History(p)
	if h.by == nil {
		h.by = map[string][]editguard.Version{}
	}
	h.by[p] = vs
	return vs
}

// contents returns what the file held before and after the change r
// records: the version r's commit saved, and the current file or the
// version a later change saved, whichever has the SHA-256 r wrote.
func (s *Server) contents(r *editguard.LedgerRecord, h *histories) (before, after content) {
	res := resultOf(r)
	switch {
	case r.HistoryVersion != "":
		data, err := s.w.VersionBytes(r.Path, r.HistoryVersion)
		before = content{Data: data, Absent: err == nil && data == nil}
		if err != nil {
			before.Unknown = err.Error()
		}
	case r.Observed != nil && !r.Observed.Exists:
		before.Absent = true
	default:
		before.Unknown = "no history version keeps it"
	}
	switch {
	case res.Deleted:
		after.Absent = true
	case r.SHA256After == "":
		after.Unknown = "the ledger names no content"
	default:
		after = s.contentWithHash(r.Path, r.SHA256After, r.Seq, h)
	}
	return before, after
}

// contentWithHash finds the bytes of the file p with SHA-256 sum that a
// change at seq left: the file itself, or the first later version that
// history keeps.
func (s *Server) contentWithHash(p, sum string, seq uint64, h *histories) content {
	if c := h.current(p); c.err == nil && c.st.Exists && c.st.SHA256 == sum {
		return content{Data: c.data}
	}
	vs := h.of(p)
	for i := len(vs) - 1; i >= 0; i-- { // oldest first
		v := vs[i]
		if v.SHA256 == sum && !v.Absent && (v.LedgerSeq == 0 || v.LedgerSeq > seq) {
			data, err := s.w.VersionBytes(p, v.ID)
			if err == nil {
				return content{Data: data}
			}
		}
	}
	return content{Unknown: "neither the file nor its history holds it any more"}
}

// changeDiff returns the diff of the change r and the notes on its
// contents.
func (s *Server) changeDiff(r *editguard.LedgerRecord, h *histories) (string, []string) {
	if r.Outcome != "ok" {
		return "", nil
	}
	before, after := s.contents(r, h)
	return diffOf(r.Path, before, after)
}

// statsCache keeps the line counts of changes by ledger sequence number.
type statsCache struct {
	mu sync.Mutex
	m  map[uint64][2]int
}

const statsCacheSize = 20000

func (c *statsCache) get(seq uint64) ([2]int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[seq]
	return v, ok
}

func (c *statsCache) put(seq uint64, v [2]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= statsCacheSize {
		c.m = map[uint64][2]int{}
	}
	c.m[seq] = v
}

// lineCounts returns the lines the change r added and removed, or
// false when they are not counted (not a change, or too large).
func (s *Server) lineCounts(r *editguard.LedgerRecord, h *histories) ([2]int, bool) {
	if r.Outcome != "ok" {
		return [2]int{}, false
	}
	if v, ok := s.stats.get(r.Seq); ok {
		return v, v[0] >= 0
	}
	if sizesOf(r) > statsLimit {
		s.stats.put(r.Seq, [2]int{-1, -1})
		return [2]int{}, false
	}
	before, after := s.contents(r, h)
	d, _ := diffOf(r.Path, before, after)
	sd := showDiffCounts(d)
	v := [2]int{sd.Added, sd.Removed}
	if before.Unknown == "" && after.Unknown == "" {
		s.stats.put(r.Seq, v) // a side not found now may be found later
	}
	return v, true
}

// sizesOf returns the sizes of the contents before and after the change r
// records, as far as the record tells them.
func sizesOf(r *editguard.LedgerRecord) int64 {
	n := resultOf(r).SizeBytes
	if r.Observed != nil {
		n += r.Observed.Size
	}
	return n
}
