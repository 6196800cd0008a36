package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"

	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
)

// What a change displaces must be durable before the change is made
// (guarantee 4). For a small file that costs an fsync of the file's history
// index, on top of the intent's fsync in the ledger and the new content's:
// three device flushes at once where a bare replace has one. Instead, the
// intent of a change that displaces at most carryLimit bytes carries those
// bytes itself (an empty file's none, and a change that creates the file
// says so in its observed state), and its history version is saved
// lazily: the index line is written, not fsynced, before the change. The
// intent's fsync makes the displaced bytes durable; the index lines are
// made durable later, many at a time, by catchUp. A larger displaced content is saved as an object,
// made durable before the change as always, and its intent says so
// (DisplacedObject): its line is lazy too, and catchUp finds the object
// by the intent's SHA256Before.
//
// The history's mark (history.Store.Synced) names a ledger record such that
// every intent up to it has its version durable in history. catchUp moves
// it: for each intent after it, it fsyncs the index holding the intent's
// version, or, if the version is not there and the change may have been
// made (a power cut took the line, or the writer died before writing it),
// saves the intent's bytes (or its object's) to history again, durably.
// It stops at an intent whose writer is still at work (it holds the
// file's lock). The workspace runs it CatchUpDelay after a lazy change,
// and Close runs it last if there was one. Open runs its saves alone,
// before resolving intents, so that the version a recovered outcome names
// is there.

// carryLimit is the largest displaced content an intent carries. It is
// below the history's inline limit, so that the version is an index line.
const carryLimit = 16 << 10

// CatchUpDelay is how long after a lazy change the background catchUp
// runs: the changes of a burst share its fsyncs, one per file changed, so
// a longer delay saves fsyncs under load. What it costs is the ledger that
// a catch-up (or an Open after a crash) reads: catchUpBytes of carried
// content since the last one start the catch-up sooner.
const (
	CatchUpDelay = 10 * time.Second
	catchUpBytes = 16 << 20
)

// histSync schedules catchUp.
type histSync struct {
	mu     sync.Mutex
	timer  *catchUpTimer // the catchUp due, if any
	closed bool
	wg     sync.WaitGroup // the catchUp due or running in the background
	run    sync.Mutex     // one catchUp at a time in this process
	// marked is set once the history's mark is known to exist: only
	// then may a version be saved lazily.
	marked atomic.Bool
	// lazy is set once this process saved a version lazily: Close then
	// runs a last catchUp.
	lazy atomic.Bool
	// carried counts the bytes saved lazily since the catchUp due was
	// scheduled; dueBytes and dueDelay, if set, replace catchUpBytes and
	// CatchUpDelay (tests).
	carried  int
	dueBytes int
	dueDelay time.Duration
}

// lazySaved schedules a catchUp after a change whose version, n bytes,
// was saved lazily.
func (e *Engine) lazySaved(n int) {
	h := &e.hsync
	h.lazy.Store(true)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	due := h.dueBytes
	if due == 0 {
		due = catchUpBytes
	}
	if h.timer != nil {
		if h.carried += n; h.carried < due {
			return
		}
		if h.timer.t.Stop() {
			// Not fired yet: fire it now. (Reset on a timer that
			// fired would run its function a second time.)
			h.timer.t.Reset(0)
			return
		}
		// It fired, and its catchUp may have begun before this
		// change: one more, at once.
		e.scheduleCatchUp(0)
		h.carried = 0
		return
	}
	h.carried = n
	delay := CatchUpDelay
	if h.dueDelay > 0 {
		delay = h.dueDelay
	}
	if n >= due {
		delay = 0
	}
	e.scheduleCatchUp(delay)
}

// catchUpTimer is a catchUp scheduled by scheduleCatchUp.
type catchUpTimer struct{ t *time.Timer }

// scheduleCatchUp runs a catchUp in the background after delay, as the
// one due. The caller holds hsync.mu.
func (e *Engine) scheduleCatchUp(delay time.Duration) {
	h := &e.hsync
	tk := &catchUpTimer{}
	h.timer = tk
	h.wg.Add(1)
	tk.t = time.AfterFunc(delay, func() {
		defer h.wg.Done()
		h.mu.Lock() // after tk.t is set: the caller holds it
		if h.timer == tk {
			h.timer = nil
		}
		h.mu.Unlock()
		e.CatchUp(false)
	})
}

// StopCatchUp cancels the background catchUp due and waits for one
// running; the workspace's Close then runs the last one itself (Lazy).
func (e *Engine) StopCatchUp() {
	h := &e.hsync
	h.mu.Lock()
	h.closed = true
	if h.timer != nil && h.timer.t.Stop() {
		h.timer = nil
		h.wg.Done()
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// carried returns what the intent in says its change displaces, if the
// intent holds all of it (see writeIntent): the bytes it carries (1 B to
// carryLimit), no bytes for an empty file, or absent for a change that
// creates the file.
func carried(in *ledger.Record) (content []byte, absent, ok bool) {
	switch {
	case in.Observed == nil:
		return nil, false, false
	case !in.Observed.Exists:
		return nil, true, true
	case len(in.Displaced) > 0:
		return in.Displaced, false, true
	case in.Observed.Size == 0 && in.SHA256Before == emptySHA256:
		return []byte{}, false, true
	}
	return nil, false, false
}

// emptySHA256 is the SHA-256 of no bytes.
const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// CatchUp moves the history's mark as far as it can (see above). It is
// best effort: what it cannot do now, a later run does, and until then the
// intents hold the bytes. At Open (atOpen) it only saves again the versions
// a power cut may have taken: the indexes it finds whole are the business
// of the catch-up of the process that wrote them, or of the next one to
// save lazily, so an Open pays for no fsync and leaves the mark alone.
func (e *Engine) CatchUp(atOpen bool) {
	e.hsync.run.Lock()
	defer e.hsync.run.Unlock()
	// At Open, a catch-up running in another process does what this one
	// would, and Open does not wait for its fsyncs.
	wait := time.Duration(0)
	if atOpen {
		wait = intentLockWait
	}
	unlock, err := e.cfg.Hist.LockSynced(wait)
	if err != nil {
		return
	}
	defer unlock()
	seq, hash, exists, ok := e.cfg.Hist.Synced()
	recs, last, anchored, err := e.cfg.Led.Since(ledger.Position{Seq: seq, Hash: hash})
	if err != nil {
		return
	}
	if !exists && !e.hsync.marked.Load() {
		// No version was ever saved lazily here (the mark is created,
		// durably, before the first one is): the mark starts at the
		// ledger's end.
		if e.cfg.Hist.SetSynced(last.Seq, last.Hash) == nil {
			e.hsync.marked.Store(true)
		}
		return
	}
	if ok {
		e.hsync.marked.Store(true)
	} else {
		// A damaged mark is rewritten below, even at Open.
		atOpen = false
	}
	if anchored && last.Seq == seq {
		return
	}
	dirty, upTo := e.keepVersions(recs, last)
	if atOpen {
		return
	}
	e.markSynced(dirty, upTo, ledger.Position{Seq: seq, Hash: hash}, ok)
}

// keepVersions makes sure, in ledger order, that the version of each
// sealed intent in recs (the ledger after the mark; last is its end) is
// in history (see versionKept). It returns the files whose indexes may
// need an fsync, and upTo, how far the mark may move: to last, or to just
// before the first intent whose version it could not keep (its writer is
// still at work, or the save failed), which a later run tries again.
func (e *Engine) keepVersions(recs []*ledger.Record, last ledger.Position) (dirty map[string]bool, upTo ledger.Position) {
	outcomes, first := intentIndex(recs)
	saved := map[string]map[uint64]string{} // the versions of each file's intents
	dirty = map[string]bool{}
	upTo = last
	for _, in := range recs {
		if in.Outcome != ledger.OutcomePending || !e.sealed(in) {
			continue // not an intent, or not one this workspace wrote
		}
		if _, ok := saved[in.Path]; !ok {
			saved[in.Path], _ = e.cfg.Hist.Intents(in.Path, first[in.Path])
		}
		kept, sync := e.versionKept(in, outcomes[in.Seq], saved[in.Path])
		if !kept {
			upTo = ledger.Position{Seq: in.Seq - 1, Hash: in.Prev}
			break
		}
		if sync {
			dirty[in.Path] = true
		}
	}
	return dirty, upTo
}

// intentIndex returns, of recs, each outcome record by the seq of its
// intent and the seq of each file's first intent, from which keepVersions
// reads the file's history index.
func intentIndex(recs []*ledger.Record) (outcomes map[uint64]*ledger.Record, first map[string]uint64) {
	outcomes = map[uint64]*ledger.Record{}
	first = map[string]uint64{} // the first intent of each file
	for _, r := range recs {
		if r.Intent != 0 {
			outcomes[r.Intent] = r
		}
		if _, ok := first[r.Path]; !ok && r.Outcome == ledger.OutcomePending {
			first[r.Path] = r.Seq
		}
	}
	return outcomes, first
}

// markSynced fsyncs the indexes of the files dirty, then moves the
// history's mark from mark to upTo, or rewrites it if it is damaged (!ok).
// If the fsyncs fail the mark stays where it is, so a later catch-up
// does them again.
func (e *Engine) markSynced(dirty map[string]bool, upTo, mark ledger.Position, ok bool) {
	paths := make([]string, 0, len(dirty))
	for p := range dirty {
		paths = append(paths, p)
	}
	// Many indexes: one syncfs of the history's file system pays for all
	// of them, where each would pay an fsync (oneByOne).
	var flush func() error
	if !OneByOne(len(paths), e.histFD()) {
		flush = func() error { return SyncFS(e.histFD()) }
	}
	if e.cfg.Hist.SyncIndexesWith(paths, flush) != nil {
		return
	}
	if upTo.Seq != mark.Seq || upTo.Hash != mark.Hash || !ok {
		// A mark that cannot be written (a planted entry in its place,
		// a full disk) would make every catch-up read the ledger from
		// further back: versions are then saved durably.
		e.hsync.marked.Store(e.cfg.Hist.SetSynced(upTo.Seq, upTo.Hash) == nil)
	}
}

// versionKept reports whether the version of what the intent in's change
// displaced is in history, making it so if it can; sync says that its
// index may need an fsync. out is the intent's outcome record, if any.
func (e *Engine) versionKept(in, out *ledger.Record, saved map[uint64]string) (kept, sync bool) {
	content, absent, ok := carried(in)
	object := !ok && in.DisplacedObject && in.Observed != nil && in.Observed.Exists
	if !ok && !object {
		return true, false // its version was saved durably, if at all
	}
	// The content too: an intent whose fsync failed is cut from the
	// ledger, and its seq given to a later record.
	sum := in.SHA256Before
	if saved == nil {
		// A damaged index: saving to it fails too, and verify reports
		// it. Waiting for it would hold the mark back for good.
		return true, false
	}
	if s, ok := saved[in.Seq]; ok && s == sum {
		return true, true
	}
	for later := range saved {
		if later > in.Seq {
			// A later change's version is in the index, and lines are
			// appended in the order of the file's changes: this one's
			// line was not lost but cut by retention (a trim rewrites
			// the index durably), and is not to be saved again.
			return true, false
		}
	}
	if out == nil {
		// Its writer may be at work: it holds the file's lock from
		// before the intent until after the outcome.
		ctx, cancel := context.WithTimeout(context.Background(), intentLockWait)
		defer cancel()
		locks, err := e.LockFiles(ctx, in.Path)
		if err != nil {
			return false, false
		}
		defer UnlockAll(locks)
		// Under the lock, the writer may have finished meanwhile.
		now, err := e.cfg.Hist.Intents(in.Path, in.Seq)
		if s, ok := now[in.Seq]; err != nil || ok && s == sum {
			return true, err == nil
		}
	} else if out.Outcome == "error" || out.Outcome == "dry_run" {
		return true, false // nothing was changed
	} else if e.savedBefore(in, out, absent) {
		return true, false
	}
	// The change may have been made, and its version is not in history:
	// a power cut took the line, or the writer died before writing it.
	// The ledger is read, not trusted: bytes that are not what the
	// intent says it displaced are not saved as a version of the file.
	if absent {
		_, err := e.cfg.Hist.Save(in.Path, nil, true, "",
			history.Meta{Op: in.Tool, Session: in.Session, Intent: in.Seq})
		return err == nil, false
	}
	if object {
		// The object was durable before the change was made: if it is
		// not there (or not whole), the change was not made. LoadObject
		// checks its hash.
		var err error
		if content, err = e.cfg.Hist.LoadObject(in.Path, sum); err != nil {
			return true, false
		}
	} else if s := sha256.Sum256(content); hex.EncodeToString(s[:]) != sum {
		return true, false
	}
	_, err := e.cfg.Hist.Save(in.Path, content, false, sum,
		history.Meta{Op: in.Tool, Session: in.Session, Intent: in.Seq})
	return err == nil, false
}

// savedBefore reports whether the version out names is the one the
// intent in's change saved durably before it wrote the intent (a move,
// SavedIntent): a version of the same change, linked to no intent, with
// the content, or the absence, the intent says it displaced. It is not
// to be saved again.
func (e *Engine) savedBefore(in, out *ledger.Record, absent bool) bool {
	if out.HistoryVersion == "" {
		return false
	}
	v, err := e.cfg.Hist.Get(in.Path, out.HistoryVersion)
	return err == nil && v.Intent == 0 && v.Op == in.Tool && v.Session == in.Session &&
		v.Absent == absent && (absent || v.SHA256 == in.SHA256Before)
}

// Lazy reports whether this process saved a version lazily: the
// workspace's Close then runs a last CatchUp.
func (e *Engine) Lazy() bool { return e.hsync.lazy.Load() }

// SetCatchUp makes n bytes saved lazily, instead of catchUpBytes, start
// the catch-up before its delay, and the delay d instead of CatchUpDelay;
// 0 leaves either as it is (tests).
func (e *Engine) SetCatchUp(n int, d time.Duration) {
	e.hsync.mu.Lock()
	if n > 0 {
		e.hsync.dueBytes = n
	}
	if d > 0 {
		e.hsync.dueDelay = d
	}
	e.hsync.mu.Unlock()
}

// intentLockWait is how long Open waits for the file lock of an intent's
// file: a writer that holds it is alive and will record the outcome itself.
const intentLockWait = time.Millisecond

// histFD is the history directory's descriptor, for a syncfs of its file
// system.
func (e *Engine) histFD() int { return int(e.cfg.HistDir.File().Fd()) }
