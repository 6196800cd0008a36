package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"github.com/editguard/editguard/internal/atomicfile"
)

// Reclaim removes what is editguard's own to remove to make room on a
// full file system, and returns the bytes it freed: the temporary file
// under t's temporary name when history holds its bytes (a dead writer's
// leftover: sweepTemp), and every parked file that still holds the content
// it was parked with, which history holds, without waiting for parkGrace
// (a parked file changed since is quarantined, as by a sweep). The caller
// holds t's lock. Nothing a person or another program wrote is removed.
func (e *Engine) Reclaim(t *Target) int64 {
	var freed int64
	if t != nil && t.Dir != nil {
		freed += e.reclaimTemp(t)
	}
	p := e.parks
	p.mu.Lock()
	defer p.mu.Unlock()
	ents, err := p.dir.ReadDir()
	if err != nil {
		return freed
	}
	for _, ent := range ents {
		sum, _, ok := atomicfile.ParsePark(ent.Name())
		if !ok {
			continue
		}
		info, err := ent.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if e.sweepOne(ent.Name(), sum) != nil {
			continue
		}
		if st, err := p.dir.Stat(ent.Name()); err == nil && !st.Exists {
			freed += info.Size()
		}
	}
	return freed
}

// reclaimTemp removes t's temporary file if history holds its bytes.
func (e *Engine) reclaimTemp(t *Target) int64 {
	tmp := e.TempName(t.Base)
	f, st, err := t.Dir.Open(tmp)
	if err != nil || f == nil {
		return 0
	}
	defer f.Close()
	if st.Size > e.cfg.MaxFileSize {
		return 0 // larger than anything we write: not ours
	}
	data := make([]byte, st.Size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return 0
	}
	s := sha256.Sum256(data)
	if !e.inHistory(t.Resolved, hex.EncodeToString(s[:])) {
		return 0
	}
	if err := t.Dir.Unlink(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0
	}
	return st.Size
}
