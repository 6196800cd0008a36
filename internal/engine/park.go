package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/statedir"
)

// Parked files.
//
// A file that a commit takes off a name (the version it displaced, our new
// file after an undone swap, a deleted file) is not unlinked: it is moved
// to .editguard/displaced, named by the hash its content had when it was
// verified (atomicfile.ParkName). Its content is already in history. A
// program that opened the file before the commit and writes to it late (a
// logger, an "echo >>" descheduled between open and write) writes into a
// file that is still reachable. After parkGrace the parked file is swept:
// if it still hashes to its name it is removed, proven identical to what
// history holds; if not, it is moved to .editguard/quarantine, where it
// stays, named by its hash, time and file name. Only a write later than the
// grace period, into a file the writer opened before the commit, can still
// be lost. On a file system where the move is impossible (the target is on
// another mount than .editguard), the file is unlinked after a last check.

// parkGrace is how long a parked file is kept before it is swept.
const parkGrace = 2 * time.Second

// parks is the state of an Engine's parked files.
type parks struct {
	dir       *statedir.Dir // .editguard/displaced
	at        *atomicfile.Dir
	mu        sync.Mutex // one sweep at a time
	lastSweep time.Time  // guarded by mu
}

func (e *Engine) openParks() error {
	d, err := e.cfg.State.Sub("displaced", true)
	if err != nil {
		return err
	}
	e.parks = &parks{dir: d, at: atomicfile.NewDir(d.File())}
	return nil
}

// SweepParked removes parked files older than parkGrace that are unchanged,
// and quarantines the others. With all set it does not wait for the grace
// period to pass since the last sweep.
func (e *Engine) SweepParked(all bool) error {
	p := e.parks
	if !p.mu.TryLock() {
		return nil // another goroutine is sweeping
	}
	defer p.mu.Unlock()
	return e.sweepParkedLocked(all)
}

// sweepParkedSoon starts a sweep of the parked files in the background if
// one is due, so that the commit after which it is due does not wait for
// it: under load, hundreds of files are parked between two sweeps. Close
// waits for it.
func (e *Engine) sweepParkedSoon() {
	p := e.parks
	if !p.mu.TryLock() {
		return // another goroutine is sweeping
	}
	if time.Since(p.lastSweep) < parkGrace {
		p.mu.Unlock()
		return
	}
	e.cfg.Background.Add(1)
	go func() {
		defer e.cfg.Background.Done()
		defer p.mu.Unlock()
		e.sweepParkedLocked(false)
	}()
}

// sweepParkedLocked is SweepParked with the sweep's mutex held.
func (e *Engine) sweepParkedLocked(all bool) error {
	p := e.parks
	now := time.Now()
	if !all && now.Sub(p.lastSweep) < parkGrace {
		return nil
	}
	p.lastSweep = now
	ents, err := p.dir.ReadDir()
	if err != nil {
		return err
	}
	var first error
	for _, ent := range ents {
		sum, parked, ok := atomicfile.ParsePark(ent.Name())
		if !ok || now.Sub(parked) < parkGrace {
			continue
		}
		if err := e.sweepOne(ent.Name(), sum); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// sweepOne sweeps the parked file name, named by the hash sum.
func (e *Engine) sweepOne(name, sum string) error {
	p := e.parks
	f, err := p.dir.OpenFile(name, 0, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // swept by another process
	}
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) == sum {
		if err := p.dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	q, err := e.cfg.State.Sub("quarantine", true)
	if err != nil {
		return err
	}
	defer q.Close()
	return p.dir.MoveTo(name, q, name)
}
