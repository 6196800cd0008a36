//go:build unix

// Package ledger is editguard's audit log: an append-only, hash-chained
// JSON Lines file with one Record per mutation attempt, accepted or refused.
//
// # Format
//
// Each line is one Record encoded by encoding/json and terminated by '\n'.
// Records carry Seq, contiguous from 1, and Prev, the Hash of the record
// before them ("" for the first), so every hash covers the whole history up
// to its record. Editing, deleting, reordering, inserting or cutting a record
// breaks the chain at that record, and Verify names it.
//
// # The head anchor
//
// What the chain cannot show by itself is a cut at a record boundary that
// removes the last records. So a second file beside the ledger, the head
// anchor (name + ".head"), holds the seq and hash of the last committed
// record. It is rewritten once records are on stable storage, so it may lag
// the ledger but is never ahead of it: during a burst of appends it moves
// at most every Options.AnchorEvery (each move costs an fdatasync) and
// catches up after, and a crash between an fsync and the anchor's move
// leaves it behind, which is fine. Close brings it current. Verify
// reports ReasonTruncated when the ledger ends before the anchored record,
// when the ledger is missing or empty but the anchor exists, or when the
// record at the anchored seq has another hash; Append refuses to chain new
// records onto such a ledger, so it never overwrites that evidence.
//
// What still passes: the anchor is a copy in the same directory, not a
// secret. Deleting both the ledger and its anchor, deleting the anchor and
// then cutting the ledger, or rewriting both consistently (the chain has no
// key) is not detected. A copy of the head kept elsewhere, out of reach of
// whoever can write the state directory, is what proves it against that.
//
// # Intents
//
// A change may be recorded in two records. The intent (Outcome "pending")
// is written and made durable before the change is made, and names what the
// change will leave (SHA256After); the outcome record follows once the
// change is done or has failed, and names the intent by its seq (Intent).
// The outcome need not be durable before the change is reported: if power
// is cut first, the durable intent still accounts for the change, and
// Unresolved finds intents without an outcome near the end of the ledger so
// that the caller can append one (Outcome "ok" or "interrupted"), judged
// from the file itself. Filter, and so editguard's log, shows an intent
// only while no outcome follows it.
//
// # Canonical encoding and the hash
//
// Hash is the lowercase hex SHA-256 of the record's canonical encoding: the
// output of json.Marshal on the Record with Hash set to "" (fields in
// declaration order, no insignificant space, HTML-escaped strings, RawMessage
// fields compacted, Time in RFC 3339 with nanoseconds in UTC). Hash is the
// last field and is never omitted, so that encoding ends in `"hash":""}`;
// the line on disk is the same bytes with the hash written between the
// quotes. A line is valid only if it is exactly that canonical form, so
// verification is deterministic: decode, re-encode, compare, hash.
//
// # Files, concurrency and crashes
//
// A Ledger reaches its files only through a *statedir.Dir: the ledger, its
// anchor, its lock and the quarantine are opened without following
// symlinks, and a symlink or an entry of the wrong type at any of those
// names fails with a *statedir.UnsafeError. So a repository that ships its
// own .editguard/ cannot make the ledger write anywhere else.
//
// Appends are serialised across goroutines by a mutex and across processes
// by flock(2) on a sidecar lock file (name + ".lock", never deleted; see
// package filelock). Under the lock an appender re-reads the end of the
// file, because another process may have appended since. A record is
// written with a single write (Write) and then fsynced (Wait; Append is
// both): a caller can write a record under a lock of its own that orders
// the records and wait for the fsync after releasing it, and concurrent
// Waits share one fsync. A process
// killed mid-append can leave a final line without its newline (a torn
// tail); it was never acknowledged, and the next Open or Append cuts it
// under the lock, after copying the torn bytes to the quarantine directory
// so that nothing is deleted unseen. Complete lines are never cut.
//
// Scan, Filter and Verify only read: they create no file (not even the lock
// file) and repair nothing.
package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
)

// FileState is what was seen of a file at one moment.
type FileState struct {
	Exists  bool   `json:"exists"`
	SHA256  string `json:"sha256,omitempty"`
	Size    int64  `json:"size_bytes,omitempty"`
	MtimeMS int64  `json:"mtime_ms,omitempty"`
	// Read is, in a baseline, how the session had read the file; nil in
	// an observation, and in records written before it was kept.
	Read *Read `json:"read,omitempty"`
}

// Read says how a session read the file its baseline is of: what a
// change's decision depends on beside the content's hash.
type Read struct {
	// Full is set when the session saw the whole file as it is.
	Full bool `json:"full"`
	// Diffed says the session read the whole file once but has seen
	// another writer's change since only as a diff.
	Diffed bool `json:"diffed,omitempty"`
	// Shown says the read is of what another program's tool showed.
	Shown bool `json:"shown,omitempty"`
	// FromLine and ToLine are the lines a partial read showed (1-based,
	// inclusive), of TotalLines; zero when the read was full or its
	// extent is not known.
	FromLine   int `json:"from_line,omitempty"`
	ToLine     int `json:"to_line,omitempty"`
	TotalLines int `json:"total_lines,omitempty"`
	// Encoding is the encoding the file was read in, which later edits
	// reuse; "" for the one detected.
	Encoding string `json:"encoding,omitempty"`
	// Version is the history version of the file that holds the content
	// read, when the decision rests on it (a merge over another writer's
	// change).
	Version string `json:"version,omitempty"`
}

// Kept names a content history keeps that a record's decision rests on:
// a version of a history path, and the content's SHA-256 and size. An
// apply_patch's text is kept this way, under a path no workspace file
// can have.
type Kept struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size_bytes"`
}

// FileCheck is what a multi-file call checked of one of its files before
// it was refused: the name, what the caller expected of the file (the
// session's baseline, or an explicit precondition) and what was observed.
type FileCheck struct {
	Path string `json:"path"` // as resolved inside the root: the exact bytes of the name
	// PathHex is only in the stored form, as in Record.
	PathHex      string          `json:"path_hex,omitempty"`
	Precondition json.RawMessage `json:"precondition,omitempty"`
	Baseline     *FileState      `json:"baseline,omitempty"`
	Observed     *FileState      `json:"observed,omitempty"`
}

// fileCheckJSON is FileCheck without its methods.
type fileCheckJSON FileCheck

// MarshalJSON writes c's stored form: Path readable, its exact bytes in
// PathHex when they are not UTF-8.
func (c FileCheck) MarshalJSON() ([]byte, error) {
	w := fileCheckJSON(c)
	w.Path, w.PathHex = rawpath.Split(c.Path)
	return json.Marshal(&w)
}

// UnmarshalJSON reads a stored FileCheck back, with Path the exact name.
func (c *FileCheck) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*fileCheckJSON)(c)); err != nil {
		return err
	}
	p, err := rawpath.Join(c.Path, c.PathHex)
	if err != nil {
		return err
	}
	c.Path, c.PathHex = p, ""
	return nil
}

// Record is one mutation attempt.
//
// The field order is part of the format: it fixes the canonical encoding
// that Hash covers, and Hash must stay last.
type Record struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Session string    `json:"session,omitempty"`
	Tool    string    `json:"tool"` // write_file, edit_file, restore_file, delete ...
	Path    string    `json:"path"` // as resolved inside the root: the exact bytes of the name
	// PathHex is only in the stored form: the name's bytes in hex when
	// they are not valid UTF-8, beside Path's readable form (see
	// internal/rawpath). In memory it is always empty and Path holds the
	// exact name: MarshalJSON and UnmarshalJSON convert.
	PathHex        string          `json:"path_hex,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`         // the call's arguments as the caller gave them, for replay; may be nil
	Precondition   json.RawMessage `json:"precondition,omitempty"` // explicit precondition supplied by the caller, verbatim
	Baseline       *FileState      `json:"baseline,omitempty"`     // the session baseline injected, if any
	Observed       *FileState      `json:"observed,omitempty"`     // what was on disk at evaluation, under the lock
	Outcome        string          `json:"outcome"`                // "ok", "error", "dry_run", "pending", "interrupted"
	ErrorCode      string          `json:"error_code,omitempty"`   // STALE_FILE, NOT_READ, NO_MATCH, ...
	ErrorReason    string          `json:"error_reason,omitempty"`
	SHA256Before   string          `json:"sha256_before,omitempty"`
	SHA256After    string          `json:"sha256_after,omitempty"`
	Strategy       string          `json:"strategy,omitempty"` // "exchange", "rename", "create", "delete"
	HistoryVersion string          `json:"history_version,omitempty"`
	Approval       string          `json:"approval,omitempty"`  // "auto", "accepted", "declined", "asked", "failed"
	Result         json.RawMessage `json:"result,omitempty"`    // the structured result or error object returned, for replay
	Displaced      []byte          `json:"displaced,omitempty"` // an intent's copy of the content its change displaces, when small (base64)
	// DisplacedObject marks an intent whose change keeps what it displaces
	// (SHA256Before) as a history object, durable before the change, with
	// the version's index line made durable later.
	DisplacedObject bool `json:"displaced_object,omitempty"`
	// Seal authenticates an intent: a MAC, under a key the ledger does
	// not know, of what recovery acts on (see editguard's trust.go).
	Seal string `json:"seal,omitempty"`
	// Recovered marks an outcome appended by recovery for an intent or a
	// transaction whose writer stopped before recording it.
	Recovered bool `json:"recovered,omitempty"`
	// Timing is how long the attempt took, and where the time went.
	Timing *Timing `json:"timing,omitempty"`
	// Text names where history keeps the text of the call (an
	// apply_patch's), for replay and for a person to see what was sent.
	Text *Kept `json:"text,omitempty"`
	// Files are, for a refused call of several files (an apply_patch),
	// what it checked of each file before the refusal, in order.
	Files []FileCheck `json:"files,omitempty"`
	// Intent stays just before Prev: intentOf finds it there without
	// decoding the line.
	Intent uint64 `json:"intent,omitempty"` // the seq of the intent record this record is the outcome of
	Prev   string `json:"prev"`             // Hash of the previous record; "" for the first
	Hash   string `json:"hash"`             // see the package documentation
}

// Timing says how long an attempt took, in milliseconds (to the
// microsecond): in all, from its start to its outcome record, and the
// parts of that spent waiting for the file's locks (LockWaitMS), observing
// the file and checking it against the read or precondition (CheckMS),
// waiting for a person's approval (ApprovalMS), and making the change
// durable: the history's copy, the new content's write and fsync, the
// swap and the directory's fsync (DurableMS). The parts do not overlap:
// their sum is at most TotalMS.
type Timing struct {
	TotalMS    float64 `json:"total_ms"`
	LockWaitMS float64 `json:"lock_wait_ms,omitempty"`
	CheckMS    float64 `json:"check_ms,omitempty"`
	ApprovalMS float64 `json:"approval_ms,omitempty"`
	DurableMS  float64 `json:"durable_ms,omitempty"`
}

// recordJSON is Record without its methods, for its stored form.
type recordJSON Record

// MarshalJSON writes r's stored form (see marshalRecord).
func (r Record) MarshalJSON() ([]byte, error) { return marshalRecord(&r) }

// UnmarshalJSON reads a stored record back (see unmarshalRecord).
func (r *Record) UnmarshalJSON(b []byte) error { return unmarshalRecord(b, r) }

// marshalRecord encodes r's stored form: Path as its readable form with
// the exact bytes in PathHex when they are not UTF-8, and every other
// string as valid UTF-8 (encoding/json would store each invalid byte as
// U+FFFD all the same, but then the record would not decode to what was
// hashed). The package encodes and decodes records with these two
// functions, not through the methods, which would cost encoding/json a
// second pass over every line.
func marshalRecord(r *Record) ([]byte, error) {
	w := recordJSON(*r)
	w.Path, w.PathHex = rawpath.Split(r.Path)
	for _, s := range []*string{&w.Session, &w.Tool, &w.Outcome, &w.ErrorCode, &w.ErrorReason, &w.Strategy, &w.HistoryVersion, &w.Approval, &w.Seal} {
		*s = rawpath.Display(*s)
	}
	return json.Marshal(&w)
}

// unmarshalRecord decodes a stored record into r, a new Record, with Path
// the exact name.
func unmarshalRecord(b []byte, r *Record) error {
	if err := json.Unmarshal(b, (*recordJSON)(r)); err != nil {
		return err
	}
	p, err := rawpath.Join(r.Path, r.PathHex)
	if err != nil {
		return err
	}
	r.Path, r.PathHex = p, ""
	return nil
}

// Options configure a Ledger. A nil *Options means the zero value.
type Options struct {
	// DisableGroupCommit makes every Append write and fsync its own record.
	// By default, Appends that arrive on one Ledger while a commit is in
	// progress share one fsync (each is written on its own), which
	// multiplies throughput under concurrency at no cost to durability:
	// each Append still returns only after its record is on stable storage.
	DisableGroupCommit bool
	// LockTimeout bounds the wait for another process's append (0 means
	// filelock.DefaultTimeout); a longer wait fails with filelock.ErrBusy.
	LockTimeout time.Duration
	// AnchorEvery is the shortest time between two moves of the head
	// anchor during a burst of appends (0 means DefaultAnchorEvery; < 0
	// moves it after every fsync, before Wait returns).
	AnchorEvery time.Duration
}

// Recovery describes a torn final line that was cut from the ledger.
type Recovery struct {
	Offset     int64  // where the torn line began; the file's new size
	Bytes      int64  // how many bytes were removed
	Quarantine string // the file holding the removed bytes, relative to the workspace root
}

// A Ledger appends records to one ledger file. It is safe for concurrent use
// by multiple goroutines, and several processes may append to the same file
// at once.
type Ledger struct {
	dir   *statedir.Dir   // the directory holding the ledger; owned by the caller
	name  string          // the ledger's name in dir
	locks *statedir.Locks // keeps the lock file open between commits
	opts  Options
	hook  atomic.Pointer[Hook]

	// commitMu serialises commits inside this process. The flock alone does
	// not: it belongs to the open file description, which all goroutines of
	// this Ledger share.
	commitMu sync.Mutex
	f        *statedir.File // guarded by commitMu
	tail     tailState      // guarded by commitMu
	closed   bool           // guarded by commitMu
	// anchored is the last anchor write of this Ledger, whose fdatasync
	// runs after the commit returns; guarded by commitMu.
	anchored *anchorSync

	// gen counts the records this Ledger has written; guarded by commitMu.
	gen uint64
	// matched is the head anchor last found in the file, and where the file
	// ended then: while the file only grows, the anchored record is still
	// there, and a commit need not look for it again (during a burst the
	// anchor lags the tail, and looking meant reading and hashing records
	// under the lock). Guarded by commitMu.
	matched struct {
		h    head
		ino  uint64
		size int64
	}
	// retired are ledger files that loadTail replaced after the name came
	// to denote another file; the next sync fsyncs and closes them, as
	// records of this Ledger may be waiting in them. Guarded by commitMu.
	retired []*statedir.File
	// foreignEnd is where the bytes end that loadTail last found at the
	// end of the file without this Ledger having written them (or when the
	// end was not known). A failed fsync cuts back to syncedEnd only if
	// that is not before foreignEnd. Guarded by commitMu.
	foreignEnd int64

	// syncMu serialises fsyncs; it is taken before commitMu, never after.
	syncMu     sync.Mutex
	synced     uint64 // writes up to this gen are settled: durable, or in failed
	syncedEnd  int64  // the file's size as of the last good fsync
	syncedHead head   // the last record as of the last good fsync
	// anchorAt is when the head anchor last moved, and anchorTimer the
	// move that is due, if any; both guarded by syncMu.
	anchorAt    time.Time
	anchorTimer *time.Timer
	// anchorStopped is set by Close; guarded by syncMu.
	anchorStopped bool
	failed        []syncFailure // guarded by syncMu

	mu        sync.Mutex // guards recovered
	recovered *Recovery
}

// tailState caches the end of the file as this Ledger last saw it under the
// lock. It is trusted only while the file still has the same identity and
// size: appends only grow the file, and a torn-tail repair only cuts back to
// a record boundary at or after the cached one, so an unchanged size means
// an unchanged last record.
type tailState struct {
	valid bool
	size  int64
	seq   uint64
	hash  string
}

// Open opens the ledger name in dir for appending, creating it if needed.
// Under the lock it checks the end of the file and cuts a torn final line
// left by a writer that died mid-append, after saving it to the quarantine
// directory; Recovered reports what was cut. Complete records are never
// removed. dir must stay open while the Ledger is in use.
func Open(dir *statedir.Dir, name string, opts *Options) (*Ledger, error) {
	l := &Ledger{dir: dir, name: name, locks: dir.Locks(1)}
	if opts != nil {
		l.opts = *opts
	}
	lk, err := l.lock()
	if err != nil {
		l.locks.Close()
		return nil, err
	}
	defer lk.Unlock()
	f, err := l.openFile()
	if err != nil {
		l.locks.Close()
		return nil, err
	}
	l.f = f
	if err := l.loadTail(); err != nil {
		l.f.Close()
		l.locks.Close()
		return nil, err
	}
	l.syncedEnd = l.tail.size
	return l, nil
}

// lock takes the cross-process lock.
func (l *Ledger) lock() (*filelock.Lock, error) {
	return l.locks.Lock(context.Background(), l.name+".lock", &filelock.Options{Timeout: l.opts.LockTimeout})
}

// openFile opens the ledger file for appending, creating it (durably) if it
// does not exist. The caller holds the lock.
func (l *Ledger) openFile() (*statedir.File, error) {
	f, err := l.dir.Open(l.name, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// Without this fsync a crash could forget the new directory entry,
		// and with it every record fsynced into the file.
		if err := l.dir.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return l.dir.Open(l.name, os.O_RDWR|os.O_APPEND, 0)
}

// Recovered reports the most recent torn-tail repair done by this Ledger,
// at Open or during an Append, or nil if it has cut nothing.
func (l *Ledger) Recovered() *Recovery {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recovered
}

// Name returns the ledger's path relative to the workspace root, for
// messages.
func (l *Ledger) Name() string { return l.dir.Join(l.name) }

// Append adds r to the ledger and waits until it is on stable storage: it
// is Write followed by Wait. It sets r.Seq, r.Prev and r.Hash, and r.Time
// to the current time if it is zero (a non-zero Time is kept, in UTC).
//
// Append returns only after the record is on stable storage: the ledger is
// the account of what editguard changed, and a caller reports success to
// its client after Append, so a record that a power failure could still
// take away would leave an acknowledged change unaccounted for.
//
// On error the record is not in the ledger, except where Wait says
// otherwise (a failed fsync after another process appended), and r.Seq,
// r.Prev and r.Hash are cleared. A ledger that its head anchor shows was
// cut is not appended to: the error is a *VerifyError with ReasonTruncated.
func (l *Ledger) Append(r *Record) error {
	p, err := l.Write(r)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Pending is a record that Write put in the ledger file; Wait makes it
// durable.
type Pending struct {
	l   *Ledger
	r   *Record
	gen uint64
}

// Write adds r to the ledger file with one write, under the cross-process
// lock, and returns without waiting for it to reach stable storage; the
// record's place in the chain (r.Seq, r.Prev, r.Hash) is fixed. The caller
// must call Wait before it reports the record's attempt as done.
//
// Splitting the append lets a caller write the record while it holds a
// lock that orders the records (editguard's lock of the file), and wait for the
// fsync after releasing it, so that commits waiting for the same lock do
// not also wait for this fsync, and concurrent Waits share one.
//
// On error the record is not in the ledger (Write cuts back whatever part
// of its write reached the file) and r.Seq, r.Prev and r.Hash are cleared.
func (l *Ledger) Write(r *Record) (*Pending, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	fail := func(err error) (*Pending, error) {
		r.Seq, r.Prev, r.Hash = 0, "", ""
		return nil, err
	}
	if l.closed {
		return fail(fmt.Errorf("ledger: append to %s: %w", l.Name(), os.ErrClosed))
	}
	lk, err := l.lock()
	if err != nil {
		return fail(err)
	}
	defer lk.Unlock()
	if err := l.loadTail(); err != nil {
		return fail(err)
	}
	// The anchor is only checked here: a ledger cut behind it is not
	// chained onto. Wait moves it.
	hf, _, _, err := l.checkHead()
	if err != nil {
		return fail(err)
	}
	if hf != nil {
		hf.Close()
	}

	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	} else {
		r.Time = r.Time.Round(0).UTC()
	}
	r.Seq, r.Prev = l.tail.seq+1, l.tail.hash
	line, err := seal(r)
	if err != nil {
		return fail(fmt.Errorf("ledger: encode record: %w", err))
	}
	start := l.tail.size
	err = l.fault("write", l.Name())
	if err == nil {
		_, err = l.f.Write(line)
	}
	if err != nil {
		// Cut back what may have reached the file, so that the record we
		// report as failed is not in the ledger. If even that fails, the
		// next loadTail sees a size it does not know and re-reads the end.
		l.tail.valid = false
		if terr := l.f.Truncate(start); terr == nil {
			l.f.Sync()
		}
		return fail(fmt.Errorf("ledger: append to %s: %w", l.Name(), err))
	}
	l.tail.size = start + int64(len(line))
	l.tail.seq, l.tail.hash = r.Seq, r.Hash
	l.gen++
	return &Pending{l: l, r: r, gen: l.gen}, nil
}

// Wait returns once the record is on stable storage. Concurrent Waits share
// one fsync: each fsync covers every record written before it began.
//
// If the fsync fails, the records it covered are cut from the ledger when
// nothing was appended after them (the error then says the record is not
// in the ledger, and r.Seq, r.Prev and r.Hash are cleared); otherwise they
// stay, and the error says their durability is unknown.
func (p *Pending) Wait() error {
	l := p.l
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	for {
		if p.gen <= l.synced {
			for _, f := range l.failed {
				if p.gen >= f.lo && p.gen <= f.hi {
					if f.cut {
						p.r.Seq, p.r.Prev, p.r.Hash = 0, "", ""
					}
					return f.err
				}
			}
			return nil
		}
		l.sync(p.gen)
	}
}

// syncFailure is a span of writes whose fsync failed.
type syncFailure struct {
	lo, hi uint64 // generations
	cut    bool   // the records were cut from the file
	err    error
}

// sync fsyncs the ledger, covering every record written so far, and moves
// the head anchor to the last of them. The caller holds syncMu; gen is the
// write the caller waits for, which DisableGroupCommit makes the last one
// covered.
func (l *Ledger) sync(gen uint64) {
	l.commitMu.Lock()
	upTo, end, h := l.gen, l.tail.size, head{seq: l.tail.seq, hash: l.tail.hash}
	if l.opts.DisableGroupCommit {
		upTo = gen
	}
	files := append(l.retired, l.f)
	l.retired = nil
	l.commitMu.Unlock()

	err := l.fault("fsync", l.Name())
	for _, f := range files {
		if err == nil {
			// The fsync is what Append promises: see its doc comment.
			err = f.Sync()
		}
	}
	for _, f := range files[:len(files)-1] {
		f.Close() // replaced by loadTail; only this sync still needed it
	}
	if err == nil {
		l.synced, l.syncedEnd, l.syncedHead = upTo, end, h
		l.moveAnchor()
		return
	}
	err = fmt.Errorf("ledger: append to %s: %w", l.Name(), err)
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	fl := syncFailure{lo: l.synced + 1, hi: upTo, err: err}
	// The records since the last good fsync are cut back if they are all
	// this Ledger's and the last in the file, so that records reported as
	// failed are not in the ledger. The cut covers writes after upTo too:
	// their Waits fail with this error.
	if !l.closed && l.foreignEnd <= l.syncedEnd && l.tail.valid {
		if lk, lerr := l.lock(); lerr == nil {
			cur, serr := l.dir.Stat(l.name)
			if serr == nil && cur.Exists && cur.Ino == l.f.Ino() && cur.Size == l.tail.size &&
				l.f.Truncate(l.syncedEnd) == nil && l.f.Sync() == nil {
				fl.cut, fl.hi = true, l.gen
				fl.err = fmt.Errorf("%w (the record was cut from the ledger)", err)
			}
			lk.Unlock()
		}
	}
	l.tail.valid = false
	l.failed = append(l.failed, fl)
	l.synced = fl.hi
}

// DefaultAnchorEvery is the default Options.AnchorEvery. Each move of the
// head anchor costs an fdatasync, so a move per append would add a device
// flush to every commit; instead the anchor follows a burst of appends at
// most this far behind, and moves at once after a quiet spell.
const DefaultAnchorEvery = 100 * time.Millisecond

// moveAnchor moves the head anchor to the last durable record, now if it
// has not moved for anchorEvery, else once anchorEvery has passed since it
// last did. The caller holds syncMu.
func (l *Ledger) moveAnchor() {
	if l.anchorTimer != nil || l.anchorStopped {
		return // a move is due; it will take the newest head
	}
	every := l.opts.AnchorEvery
	if every == 0 {
		every = DefaultAnchorEvery
	}
	if wait := every - time.Since(l.anchorAt); wait > 0 {
		l.moveAnchorIn(wait)
		return
	}
	l.anchorAt = time.Now()
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if !l.anchor(l.syncedHead, every < 0) && !l.closed {
		l.moveAnchorIn(every) // the last move's fdatasync is still running
	}
}

// moveAnchorIn arranges for moveAnchor to run after d. The caller holds
// syncMu.
func (l *Ledger) moveAnchorIn(d time.Duration) {
	l.anchorTimer = time.AfterFunc(d, func() {
		l.syncMu.Lock()
		defer l.syncMu.Unlock()
		l.anchorTimer = nil
		l.moveAnchor()
	})
}

// anchor moves the head anchor to h, which is on stable storage, unless
// another process has moved it further. The caller holds commitMu. Unless
// wait is set, it returns false without moving the anchor while the
// fdatasync of its last move is still running. A failure to move it is not
// an error: Verify accepts a lagging anchor.
func (l *Ledger) anchor(h head, wait bool) bool {
	if l.closed || h.seq == 0 {
		return true
	}
	if a := l.anchored; a != nil {
		if wait {
			<-a.done
		}
		select {
		case <-a.done:
		default:
			return false
		}
	}
	lk, err := l.lock()
	if err != nil {
		return true
	}
	defer lk.Unlock()
	// A ledger moved away is not recreated here: the next Write does
	// that, and anchors the new file once its records are durable.
	if st, err := l.dir.Stat(l.name); err != nil || !st.Exists || st.Ino != l.f.Ino() || l.loadTail() != nil {
		return true
	}
	hf, slot, cur, err := l.checkHead()
	if err != nil {
		return true
	}
	if (hf != nil && cur.seq >= h.seq) || l.writeHead(hf, slot, cur, h) != nil || hf == nil {
		if hf != nil {
			hf.Close()
		}
	}
	return true
}

// loadTail brings l.tail up to date with the file. The caller holds the
// cross-process lock, so a final line without its newline belongs to a
// writer that died: loadTail saves it to the quarantine and cuts it. If the
// name now denotes a different file (the ledger was moved or removed),
// loadTail reopens the name.
func (l *Ledger) loadTail() error {
	// The name's lstat: the size of the open file if the name still
	// denotes it (an open file's inode does not change).
	cur, err := l.dir.Stat(l.name)
	if err != nil {
		return err
	}
	size := cur.Size
	if !cur.Exists || !cur.Regular() || cur.Ino != l.f.Ino() {
		f, err := l.openFile()
		if err != nil {
			return err
		}
		// A sync may still be needed for records of this Ledger in the
		// old file: it closes it.
		l.retired = append(l.retired, l.f)
		l.f = f
		l.tail.valid = false
		size = f.Size()
	}
	if l.tail.valid && size == l.tail.size {
		return nil
	}

	last, end, err := lastLine(l.f, size)
	if err != nil {
		return err
	}
	if end < size {
		q, err := l.quarantine(end, size)
		if err != nil {
			return fmt.Errorf("ledger: save torn tail of %s: %w", l.Name(), err)
		}
		if err := l.f.Truncate(end); err != nil {
			return fmt.Errorf("ledger: cut torn tail of %s: %w", l.Name(), err)
		}
		// Make the cut durable before records are appended after it, so a
		// crash cannot bring the torn bytes back in front of them.
		if err := l.f.Sync(); err != nil {
			return err
		}
		l.mu.Lock()
		l.recovered = &Recovery{Offset: end, Bytes: size - end, Quarantine: q}
		l.mu.Unlock()
	}
	t := tailState{valid: true, size: end}
	if last != nil {
		h, err := lineHead(last)
		if err != nil {
			return &VerifyError{Reason: ReasonMalformed, Err: fmt.Errorf("last record of %s: %w", l.Name(), err)}
		}
		t.seq, t.hash = h.seq, h.hash
	}
	if l.matched.size >= 0 && (!l.tail.valid || size < l.tail.size || end < size || t.seq < l.tail.seq || !l.extends()) {
		// Replaced, cut, torn, or no longer what was known followed by
		// what others wrote: the anchored record must be found again.
		l.matched.size = -1
	}
	l.tail = t
	l.foreignEnd = end
	return nil
}

// extends reports whether the file still ends, at the size the tail was
// found at, with the tail's record: whether what others wrote since only
// followed it. The caller holds commitMu.
func (l *Ledger) extends() bool {
	last, end, err := lastLine(l.f, l.tail.size)
	if err != nil || last == nil || end != l.tail.size {
		return false
	}
	h, err := lineHead(last)
	return err == nil && h.seq == l.tail.seq && h.hash == l.tail.hash
}

// quarantine copies the bytes [off, size) of the ledger, a torn final line,
// to a new file in the quarantine directory and makes it durable, before
// the caller cuts them: nothing that was never hashed is deleted unseen
// (the bytes may be a record whose newline was lost, or what an intruder
// wrote). It returns the file's path relative to the workspace root.
func (l *Ledger) quarantine(off, size int64) (string, error) {
	torn := make([]byte, size-off)
	if _, err := l.f.ReadAt(torn, off); err != nil && err != io.EOF {
		return "", err
	}
	q, err := l.dir.Sub("quarantine", true)
	if err != nil {
		return "", err
	}
	defer q.Close()
	base := strings.TrimSuffix(l.name, ".jsonl")
	name := fmt.Sprintf("%s-%d-%d.torn", base, off, time.Now().UnixNano())
	f, err := q.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(torn)
	if err == nil {
		// The copy must be on stable storage before the cut is: otherwise
		// a crash after the cut could lose the bytes from both places.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// And so must its directory entry.
		err = q.Sync()
	}
	if err != nil {
		q.Remove(name)
		return "", err
	}
	return q.Join(name), nil
}

// lastLine returns the last complete line of f (without its newline) and
// the offset just past it, reading backwards from size. With no complete
// line it returns nil and 0.
func lastLine(f io.ReaderAt, size int64) (line []byte, end int64, err error) {
	var buf []byte // the bytes [pos, size) of the file
	pos := size
	end = -1
	chunk := int64(4096)
	for pos > 0 {
		n := min(chunk, pos)
		pos -= n
		b := make([]byte, n, n+int64(len(buf)))
		if _, err := f.ReadAt(b, pos); err != nil && err != io.EOF {
			return nil, 0, err
		}
		buf = append(b, buf...)
		chunk = min(2*chunk, 1<<20)
		if end < 0 {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				continue
			}
			end = pos + int64(i) + 1
		}
		nl := int(end - 1 - pos) // index of the line's newline in buf
		if j := bytes.LastIndexByte(buf[:nl], '\n'); j >= 0 {
			return buf[j+1 : nl], end, nil
		}
	}
	if end < 0 {
		return nil, 0, nil
	}
	return buf[:end-1], end, nil
}

// Close releases the ledger's file. Appends after Close fail with an error
// wrapping os.ErrClosed. The directory stays open: it belongs to the caller.
func (l *Ledger) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return fmt.Errorf("ledger: close %s: %w", l.Name(), os.ErrClosed)
	}
	// The anchor catches up with what is durable, had a sync left it
	// behind.
	l.anchorStopped = true
	if l.anchorTimer != nil {
		l.anchorTimer.Stop()
		l.anchorTimer = nil
	}
	l.anchor(l.syncedHead, true)
	l.closed = true
	if a := l.anchored; a != nil {
		<-a.done
	}
	for _, f := range l.retired {
		f.Close()
	}
	l.locks.Close()
	return l.f.Close()
}

// A Hook, set on a Ledger with SetHook, is called before an append's write
// and its fsync (op "write" or "fsync", name the ledger's path), and the step
// fails with its error, unmade, if it returns one. It is for fault-injection
// tests; there is no global hook.
type Hook func(op, name string) error

// SetHook installs h on l (nil removes it). It may be called while l is in
// use.
func (l *Ledger) SetHook(h Hook) {
	if h == nil {
		l.hook.Store(nil)
		return
	}
	l.hook.Store(&h)
}

func (l *Ledger) fault(op, name string) error {
	if h := l.hook.Load(); h != nil {
		return (*h)(op, name)
	}
	return nil
}
