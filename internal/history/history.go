//go:build unix

// Package history keeps every content that editguard displaces, so that any of
// it can be restored.
//
// Before a commit replaces or deletes a file, the caller hands the bytes about
// to be displaced (or the fact that the file did not exist) to [Store.Save].
// Save returns only once the snapshot is durable: the version index is
// fsynced, and so are the object file and the directories that name them;
// unless Meta.Lazy says the caller makes the index line durable otherwise
// (an intent in the ledger that carries the bytes, or a syncfs).
// Contents of at most Options.InlineLimit bytes (32 KiB by default) are kept
// in their index line instead of an object, so that a snapshot of a small
// file costs one append and one fsync.
//
// The store is a directory (normally <root>/.editguard/history), reached only
// through a [statedir.Dir]: no element of it is ever followed if it is a
// symlink, and a symlink or an entry of the wrong type anywhere in it fails
// with a *statedir.UnsafeError. It is laid out as
//
//	objects/<key>/<sha256>      one file's contents over the inline limit, stored once per distinct content
//	index/<key>.jsonl           one file's versions, oldest first, one JSON object a line (with "data", base64, if inline)
//	locks/store.lock            shared by Save, Load and SetLedgerSeq, exclusive for Prune
//	locks/<key>.lock            serialises one file's Saves, trims and Loads
//	locks/total.lock, total     a running total of object bytes (see Store.OverCap)
//
// where <key> is sha256(path)[:32]. Paths are slash-separated and relative to
// the workspace root; each index line repeats its path. Version IDs are "v"
// followed by a per-file sequence number ("v000042"), assigned under the
// file's lock, so they are unique per file even when several processes save
// at once, and they sort in order of saving.
//
// # Retention
//
// Objects are deduplicated within one file's history only, and live in that
// file's own directory. That is what makes retention local: everything a
// file's versions reference is in objects/<key>/, and nothing else references
// it. So Save, holding the file's lock, trims the file's index to the newest
// KeepVersions versions once it holds more than a quarter more (rewriting
// that one index atomically; the slack spares most saves the rewrite) and
// removes the objects in objects/<key>/ that the kept versions no longer
// name. Its cost
// depends on KeepVersions, never on how many files have history, and it holds
// for any mix of processes, since every Save of every process trims.
//
// The byte cap (MaxBytes) is global, so it is left to [Store.Prune], which
// scans every index. Save keeps a cheap running total of object bytes in the
// file total (an flock, a read and a write of a few bytes, not fsynced: Prune
// recomputes it exactly), and [Store.OverCap] reports when it passed the cap,
// so the caller runs Prune then and only then.
//
// Stores written before this layout kept objects in objects/<sha256[:2]>/<sha256>,
// shared by all files. Load still reads them; the first Prune (which Save
// requests through OverCap when the store has no total yet) copies each
// still-referenced one into its file's directory and removes the old ones.
//
// All methods are safe for concurrent use by goroutines and by processes that
// open the same directory. Lock files are never removed.
package history

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
)

// Default retention, used when the corresponding Options field is zero.
const (
	DefaultKeepVersions       = 50
	DefaultMaxBytes     int64 = 1 << 30
)

// Options configures retention. A nil *Options means the defaults.
type Options struct {
	KeepVersions int   // versions kept per file, trimmed by every Save; <= 0 means DefaultKeepVersions
	MaxBytes     int64 // cap on total object bytes after Prune; 0 means DefaultMaxBytes, < 0 unlimited
	// InlineLimit is the largest content kept in its index line rather
	// than an object (see Save); 0 means DefaultInlineLimit, < 0 none.
	InlineLimit int
	// MaxAge, if positive, makes Prune drop the versions saved longer ago
	// than that, except the newest of each file (see age.go); 0 keeps
	// versions whatever their age.
	MaxAge time.Duration
}

// Meta describes the operation that displaced a content.
type Meta struct {
	Op      string // "write_file", "edit_file", "restore_file", "delete", ...
	Session string
	// Later, if set, is handed the trim of the path's old versions that
	// Save would run before returning (retention: see Options), to run it
	// after the caller has answered. The trim takes the locks it needs.
	Later func(trim func())
	// Intent is the seq of the ledger record that announced the change
	// displacing this content, if any; the version records it, so that
	// the ledger's records can be matched with their versions (Intents).
	Intent uint64
	// Lazy lets Save append the version's index line without fsyncing it:
	// the caller holds the content durably elsewhere (inline or Absent
	// content in the intent), or records durably elsewhere that the
	// content's object holds it (the intent names the object), and makes
	// the line durable later (SyncIndex), or saves the version again after
	// a crash. Content kept in an object file is made durable as always.
	Lazy bool
	// Link, if set, lets Save make a missing object (content over the
	// inline limit) by linking the file that holds content instead of
	// writing a copy: Link(dirfd, name) must give exactly that file the
	// name in the directory dirfd and make its bytes durable, or fail and
	// add no name, in which case Save writes the copy. The caller
	// guarantees that no program can change the file while it may, and
	// detaches the object (Detach) if that cannot last.
	Link func(dirfd int, name string) error
	// Linked, if set, is called when Save has linked the object.
	Linked func()
}

// Version is one displaced content of one file.
type Version struct {
	ID   string    `json:"version"` // "v000042": per-file sequence number, sortable, typeable
	Time time.Time `json:"time"`
	Path string    `json:"path"` // the exact bytes of the name
	// PathHex is only in the index line: the name's bytes in hex when they
	// are not valid UTF-8, beside Path's readable form (internal/rawpath).
	// A decoded Version has it empty and Path exact.
	PathHex   string `json:"path_hex,omitempty"`
	SHA256    string `json:"sha256"` // "" when Absent
	Size      int64  `json:"size_bytes"`
	Absent    bool   `json:"absent,omitempty"` // the file did not exist
	Op        string `json:"op"`
	Session   string `json:"session,omitempty"`
	LedgerSeq uint64 `json:"ledger_seq,omitempty"`
	Intent    uint64 `json:"intent,omitempty"` // Meta.Intent
}

// Store is a history directory, and every file in it, reached through
// package statedir: no symlink in it is ever followed, and an entry of the
// wrong type is refused.
type Store struct {
	dir                   *statedir.Dir
	objects, index, locks *statedir.Dir
	lockFiles             *statedir.Locks // in locks; nil when readOnly
	keep                  int
	inline                int                      // InlineLimit; -1: none
	maxBytes              int64                    // < 0: unlimited
	maxAge                time.Duration            // 0: none
	agedAt                atomic.Int64             // see age.go
	now                   func() time.Time         // the clock versions are stamped by
	readOnly              bool                     // opened by Lookup: no locks, no writes
	spareTrim             atomic.Pointer[trimBufs] // buffers kept between trims
	hook                  atomic.Pointer[Hook]

	// durable maps the names (objects and index files, as Dir.Join gives
	// them) whose directory entry this Store has fsynced to the inode the
	// name pointed to then. While the name points to the same file its
	// entry stays durable, so later Saves skip the directory fsync; a name
	// that was removed and created again (by a trim, or by another
	// process's Save that died before its own fsync) points to a new inode
	// and is synced again.
	durable sync.Map

	// counted maps a path to the versionCount its last trim saw.
	counted sync.Map

	// overCap is set by a Save that found the running total over the
	// cap, or no total at all; OverCap reports and clears it.
	overCap atomic.Bool
}

var (
	// ErrNoVersion is wrapped by errors for a version (or file) the store
	// does not know. It matches fs.ErrNotExist.
	ErrNoVersion = fmt.Errorf("no such version (%w)", fs.ErrNotExist)
	// ErrCorrupt is wrapped by *CorruptObjectError.
	ErrCorrupt = errors.New("stored content is corrupt")
	// ErrCorruptIndex is wrapped when a complete index line cannot be decoded.
	// (An incomplete last line is a torn append and is silently ignored.)
	ErrCorruptIndex = errors.New("history index is corrupt")
	// ErrInvalid (matching fs.ErrInvalid) is wrapped when a path is not a clean, relative,
	// slash-separated path (see io/fs.ValidPath), or an ID or sum is malformed.
	ErrInvalid = fmt.Errorf("invalid argument (%w)", fs.ErrInvalid)
)

// Error records a failed store operation on one file.
type Error struct {
	Op      string // "open", "save", "list", "get", "load", "set_ledger_seq", "prune", "paths"
	Path    string // workspace-relative path, or "" for store-wide operations
	Version string // version ID, if any
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("history: ")
	b.WriteString(e.Op)
	if e.Path != "" {
		b.WriteString(" " + e.Path)
	}
	if e.Version != "" {
		b.WriteString(" " + e.Version)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// CorruptObjectError reports an object whose bytes no longer hash to its name.
type CorruptObjectError struct {
	Object string // file name of the object
	Want   string // sha256 the object should have
	Got    string // sha256 of the bytes found
}

func (e *CorruptObjectError) Error() string {
	return fmt.Sprintf("stored content is corrupt: %s hashes to %s, want %s", e.Object, e.Got, e.Want)
}

func (e *CorruptObjectError) Unwrap() error { return ErrCorrupt }

// Open opens the history store in dir, creating its directories if needed
// (durably: each new directory and its parent are fsynced), so that a Save
// never depends on a directory entry that is not yet durable. The Store
// keeps dir and its subdirectories open; Close releases them.
func Open(dir *statedir.Dir, opts *Options) (*Store, error) {
	s := &Store{dir: dir, keep: DefaultKeepVersions, maxBytes: DefaultMaxBytes, inline: DefaultInlineLimit, now: time.Now}
	if opts != nil {
		if opts.InlineLimit != 0 {
			s.inline = max(opts.InlineLimit, -1)
		}
		if opts.KeepVersions > 0 {
			s.keep = opts.KeepVersions
		}
		if opts.MaxBytes != 0 {
			s.maxBytes = opts.MaxBytes
		}
		s.maxAge = max(opts.MaxAge, 0)
	}
	// A file's object directory is created by its first Save that needs
	// it (durably: see Save), so opening a workspace stays cheap.
	for _, sub := range []struct {
		name string
		d    **statedir.Dir
	}{{"objects", &s.objects}, {"index", &s.index}, {"locks", &s.locks}} {
		d, err := dir.Sub(sub.name, true)
		if err != nil {
			s.Close()
			return nil, &Error{Op: "open", Err: err}
		}
		*sub.d = d
	}
	// A Save takes the store lock, its file's lock and the total's lock,
	// and the ledger's SetLedgerSeq the first two again: they stay open.
	s.lockFiles = s.locks.Locks(4)
	if err := s.initTotal(); err != nil {
		s.Close()
		return nil, &Error{Op: "open", Err: err}
	}
	return s, nil
}

// Lookup opens an existing store for reading only, as a verification must:
// it creates nothing and takes no lock (so it may see a Save in progress as
// a torn last index line, which it ignores). Only List, Get, Load and Paths
// may be used; a missing subdirectory reads as empty.
func Lookup(dir *statedir.Dir) (*Store, error) {
	s := &Store{dir: dir, readOnly: true, now: time.Now}
	for _, sub := range []struct {
		name string
		d    **statedir.Dir
	}{{"objects", &s.objects}, {"index", &s.index}} {
		d, err := dir.Sub(sub.name, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			s.Close()
			return nil, &Error{Op: "open", Err: err}
		}
		*sub.d = d
	}
	return s, nil
}

// Close closes the store's directories (not dir, which the caller owns).
func (s *Store) Close() error {
	var err error
	if s.lockFiles != nil {
		err = s.lockFiles.Close()
	}
	for _, d := range []*statedir.Dir{s.objects, s.index, s.locks} {
		if d != nil {
			if cerr := d.Close(); err == nil {
				err = cerr
			}
		}
	}
	return err
}

// lock takes the lock file name in locks/: shared or exclusive. It waits
// without limit: the store's locks are held only for a Save or a Prune.
func (s *Store) lock(name string, shared bool) (func() error, error) {
	if s.readOnly {
		return func() error { return nil }, nil
	}
	l, err := s.lockFiles.Lock(context.Background(), name, &filelock.Options{Shared: shared, Timeout: -1})
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

const storeLock = "store.lock"

// lockPath takes the store's lock shared (so that no Prune rewrites an
// index or removes an object meanwhile) and path's lock exclusively (so
// that appends, trims and object changes of one file are serialised), and
// returns the function that releases both.
func (s *Store) lockPath(path string) (func(), error) {
	unlockStore, err := s.lock(storeLock, true)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock(fileLock(path), false)
	if err != nil {
		unlockStore()
		return nil, err
	}
	return func() { unlock(); unlockStore() }, nil
}

func pathKey(path string) string {
	h := sha256.Sum256([]byte(path))
	return hex.EncodeToString(h[:])[:32]
}

// objectDir opens objects/<key> for path, creating it durably if create is
// set. A missing directory without create wraps fs.ErrNotExist.
func (s *Store) objectDir(path string, create bool) (*statedir.Dir, error) {
	return s.objects.Sub(pathKey(path), create)
}

// legacyName is where stores before per-file objects kept sum:
// objects/<sum[:2]>/<sum>.
func legacyName(sum string) (dir, name string) { return sum[:2], sum }

// indexName is the name of path's index in index/.
func indexName(path string) string { return pathKey(path) + ".jsonl" }

// fileLock is the name of path's lock in locks/.
func fileLock(path string) string { return pathKey(path) + ".lock" }

// checkPath accepts any name the file system allows: unlike fs.ValidPath
// it does not ask for UTF-8.
func checkPath(path string) error {
	if path == "." || !validPath(path) {
		return fmt.Errorf("%w: path %q is not a clean relative slash-separated path", ErrInvalid, path)
	}
	return nil
}

func validSum(sum string) bool {
	if len(sum) != 2*sha256.Size {
		return false
	}
	for _, c := range []byte(sum) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func formatID(seq uint64) string { return fmt.Sprintf("v%06d", seq) }

// parseID accepts "v000042", "v42" and "42", as people type all three.
func parseID(id string) (uint64, bool) {
	n, err := strconv.ParseUint(strings.TrimPrefix(id, "v"), 10, 64)
	return n, err == nil && n > 0
}

// record is one index line: a Version, or (Kind "ledger_seq") an annotation
// that sets LedgerSeq on the earlier version with the same ID. Data holds
// the content of a version of at most InlineLimit bytes (see Save).
//
// Data is kept as the JSON string it is in the line (base64) and decoded
// only when the content is loaded: listing a file's versions, or loading
// one, need not decode every other version's content.
type record struct {
	Kind string `json:"kind,omitempty"`
	Version
	Data json.RawMessage `json:"data,omitempty"`
}

// decodeLine decodes the index line into v, without scanning an inline
// content: json.Marshal writes a record's data last, a base64 string, and
// such a line is decoded without it, the content's JSON string (quotes
// included) going to *data. That is most of a line's bytes, and checking
// it on every decode made the index reads of a commit (trim, the tail
// scan, the ledger annotation, Record's search) a sixth of its CPU. The
// content is decoded and hash-checked when a version is loaded. A line of
// any other shape is decoded whole. data may be nil.
//
// A line's path is stored as internal/rawpath does; a v that holds one
// (pathLine) gets the exact name back.
func decodeLine(line []byte, v any, data *json.RawMessage) error {
	if err := decodeFields(line, v, data); err != nil {
		return err
	}
	if p, ok := v.(pathLine); ok {
		return p.joinPath()
	}
	return nil
}

// pathLine is a decoded index line that holds a path in its stored form.
type pathLine interface{ joinPath() error }

func (v *Version) joinPath() error {
	p, err := rawpath.Join(v.Path, v.PathHex)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptIndex, err)
	}
	v.Path, v.PathHex = p, ""
	return nil
}

// storedPath returns v with Path in its stored form, for an index line.
func (v Version) storedPath() Version {
	v.Path, v.PathHex = rawpath.Split(v.Path)
	return v
}

func decodeFields(line []byte, v any, data *json.RawMessage) error {
	const key = `,"data":"`
	i := bytes.LastIndex(line, []byte(key))
	if i > 0 && bytes.HasSuffix(line, []byte(`"}`)) {
		val := line[i+len(key)-1 : len(line)-1] // "...", quotes included
		if len(val) >= 2 && bytes.IndexByte(val[1:len(val)-1], '"') < 0 && bytes.IndexByte(val, '\\') < 0 {
			head := make([]byte, i+1)
			copy(head, line[:i])
			head[i] = '}'
			if err := json.Unmarshal(head, v); err != nil {
				return err
			}
			if data != nil {
				*data = json.RawMessage(val)
			}
			return nil
		}
	}
	if data != nil {
		*data = nil
	}
	return json.Unmarshal(line, v)
}

// entry is one version as its index holds it: inline content, if any.
type entry struct {
	Version
	data json.RawMessage // the content as a JSON string (base64); nil: an object (or Absent)
}

// line encodes e as an index line, without the newline.
func (e entry) line() ([]byte, error) {
	return json.Marshal(record{Version: e.Version.storedPath(), Data: e.data})
}

// inline reports whether e's content is in its index line, and how many
// bytes it holds there.
func (e entry) inline() (bool, int64) {
	if e.data == nil {
		return false, 0
	}
	return true, e.Size
}

// content decodes e's inline content.
func (e entry) content() ([]byte, error) {
	var b []byte
	if err := json.Unmarshal(e.data, &b); err != nil {
		return nil, fmt.Errorf("%w: inline content of %s: %v", ErrCorruptIndex, e.ID, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// emptyContent is the inline form of an empty content.
var emptyContent = json.RawMessage(`""`)

const kindLedgerSeq = "ledger_seq"

// parseIndex decodes an index file. Versions come back in file order, which
// is the order of their sequence numbers, with annotations applied. Lines
// about other paths (a 128-bit key collision) are skipped. A last line with
// no newline is a torn append (a crash in the middle of a write) and is
// ignored; bad counts complete lines that do not decode.
func parseIndex(data []byte, path string) (vs []entry, bad int) {
	pos := make(map[uint64]int)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // torn tail
		}
		line := data[:i]
		data = data[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r record
		seq, ok := uint64(0), false
		if err := decodeLine(line, &r, &r.Data); err == nil {
			seq, ok = parseID(r.ID)
		}
		if !ok {
			bad++
			continue
		}
		if path != "" && r.Path != path {
			continue
		}
		switch r.Kind {
		case "":
			pos[seq] = len(vs)
			e := entry{Version: r.Version}
			switch {
			case r.Absent:
			case r.Data != nil:
				e.data = r.Data
			case r.Size == 0:
				// An empty content is held by no object, inline or not.
				e.data = emptyContent
			}
			vs = append(vs, e)
		case kindLedgerSeq:
			if j, ok := pos[seq]; ok {
				vs[j].LedgerSeq = r.LedgerSeq
			}
		}
	}
	return vs, bad
}

// versions reads path's index, oldest first.
func (s *Store) versions(op, path string) ([]entry, error) {
	if err := checkPath(path); err != nil {
		return nil, &Error{Op: op, Path: path, Err: err}
	}
	if s.index == nil {
		return nil, nil // a read-only store without an index directory
	}
	data, err := s.index.ReadFile(indexName(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{Op: op, Path: path, Err: err}
	}
	vs, bad := parseIndex(data, path)
	if bad > 0 {
		return vs, &Error{Op: op, Path: path, Err: fmt.Errorf("%w: %d undecodable line(s) in %s", ErrCorruptIndex, bad, s.index.Join(indexName(path)))}
	}
	return vs, nil
}

// List returns path's versions, newest first. A path with no history has
// an empty list and no error. List takes no lock: index files only grow by
// whole appended lines or are replaced by rename, so a reader sees a
// consistent index.
func (s *Store) List(path string) ([]Version, error) {
	es, err := s.versions("list", path)
	if err != nil {
		return nil, err
	}
	vs := make([]Version, len(es))
	for i, e := range es {
		vs[len(es)-1-i] = e.Version
	}
	return vs, nil
}

// Newest returns path's newest version for which match is true, and
// whether there is one. It decodes the index from its end and stops at the
// first match, so finding a version saved a moment ago costs one line,
// however long the history.
func (s *Store) Newest(path string, match func(Version) bool) (Version, bool, error) {
	if err := checkPath(path); err != nil {
		return Version{}, false, &Error{Op: "newest", Path: path, Err: err}
	}
	if s.index == nil {
		return Version{}, false, nil
	}
	f, err := s.index.Open(indexName(path), os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Version{}, false, nil
	}
	if err != nil {
		return Version{}, false, &Error{Op: "newest", Path: path, Err: err}
	}
	defer f.Close()
	var found Version
	ok := false
	ledgerSeq := map[string]uint64{} // annotations met (after their versions)
	_, err = backLines(f, func(line []byte) (bool, error) {
		var r record
		if err := decodeLine(line, &r, &r.Data); err != nil {
			return false, fmt.Errorf("%w: an undecodable line in %s", ErrCorruptIndex, s.index.Join(indexName(path)))
		}
		if r.Path != path {
			return false, nil
		}
		switch r.Kind {
		case kindLedgerSeq:
			if _, ok := ledgerSeq[r.ID]; !ok {
				ledgerSeq[r.ID] = r.LedgerSeq
			}
		case "":
			if n, ok := ledgerSeq[r.ID]; ok {
				r.Version.LedgerSeq = n
			}
			if match(r.Version) {
				found, ok = r.Version, true
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return Version{}, false, &Error{Op: "newest", Path: path, Err: err}
	}
	if ok {
		return found, true, nil
	}
	return Version{}, false, nil
}

// Get returns one version of path. id may be given as "v000042", "v42" or
// "42". An unknown id gives an error wrapping ErrNoVersion (and fs.ErrNotExist).
func (s *Store) Get(path, id string) (Version, error) {
	e, err := s.get("get", path, id)
	return e.Version, err
}

func (s *Store) get(op, path, id string) (entry, error) {
	seq, ok := parseID(id)
	if !ok {
		return entry{}, &Error{Op: op, Path: path, Version: id, Err: fmt.Errorf("%w: version ID %q", ErrInvalid, id)}
	}
	es, err := s.versions(op, path)
	if err != nil {
		return entry{}, err
	}
	for _, e := range es {
		if n, _ := parseID(e.ID); n == seq {
			return e, nil
		}
	}
	return entry{}, &Error{Op: op, Path: path, Version: id, Err: ErrNoVersion}
}

// Load returns a version and its content (nil for an Absent version). The
// content is hashed and compared with the version's sha256; a mismatch is a
// *CorruptObjectError (wrapping ErrCorrupt). Load holds the store lock
// shared and path's lock, so neither a Prune nor a Save's trim can remove
// the object between the index lookup and the read.
func (s *Store) Load(path, id string) (Version, []byte, error) {
	fail := func(v Version, err error) (Version, []byte, error) {
		return v, nil, &Error{Op: "load", Path: path, Version: id, Err: err}
	}
	if err := checkPath(path); err != nil {
		return fail(Version{}, err)
	}
	unlock, err := s.lockPath(path)
	if err != nil {
		return fail(Version{}, err)
	}
	defer unlock()
	e, err := s.get("load", path, id)
	v := e.Version
	if err != nil {
		return Version{}, nil, err
	}
	if v.Absent {
		return v, nil, nil
	}
	if !validSum(v.SHA256) {
		return fail(v, fmt.Errorf("%w: sha256 %q", ErrCorruptIndex, v.SHA256))
	}
	name, data := s.index.Join(indexName(path))+" ("+v.ID+")", []byte(nil)
	if e.data != nil {
		if data, err = e.content(); err != nil {
			return fail(v, err)
		}
	} else {
		name, data, err = s.readObject(path, v.SHA256)
		if err != nil {
			return fail(v, err)
		}
	}
	if err := checkContent(name, data, v.SHA256); err != nil {
		return fail(v, err)
	}
	return v, data, nil
}

// checkContent returns a *CorruptObjectError for name if data does not
// hash to sum.
func checkContent(name string, data []byte, sum string) error {
	if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
		return &CorruptObjectError{Object: name, Want: sum, Got: hex.EncodeToString(h[:])}
	}
	return nil
}

// InlineLimit is the largest content Save keeps in an index line; larger
// content goes to an object (-1: every content does).
func (s *Store) InlineLimit() int { return s.inline }

// LoadObject returns path's object whose content has the SHA-256 sum,
// hashed and compared with sum (a mismatch is a *CorruptObjectError); an
// object that is not there is an error matching fs.ErrNotExist.
func (s *Store) LoadObject(path, sum string) ([]byte, error) {
	fail := func(err error) ([]byte, error) { return nil, &Error{Op: "load object", Path: path, Err: err} }
	if err := checkPath(path); err != nil {
		return fail(err)
	}
	if !validSum(sum) {
		return fail(fmt.Errorf("%w: sha256 %q is not 64 lowercase hex digits", ErrInvalid, sum))
	}
	unlock, err := s.lockPath(path)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	name, data, err := s.readObject(path, sum)
	if err == nil {
		err = checkContent(name, data, sum)
	}
	if err != nil {
		return fail(err)
	}
	return data, nil
}

// Paths returns the paths that have history, sorted.
func (s *Store) Paths() ([]string, error) {
	if s.index == nil {
		return nil, nil
	}
	ents, err := s.index.ReadDir()
	if err != nil {
		return nil, &Error{Op: "paths", Err: err}
	}
	var paths []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jsonl") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p, err := s.firstPath(e.Name())
		if err != nil {
			return nil, &Error{Op: "paths", Err: err}
		}
		if p != "" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths, nil
}

// readObject reads path's object sum: from objects/<key>/<sum>, or, for a
// store written before per-file objects, objects/<sum[:2]>/<sum>. It returns
// the name it read, for messages.
func (s *Store) readObject(path, sum string) (string, []byte, error) {
	if s.objects == nil {
		return "", nil, fmt.Errorf("%w: no objects directory", fs.ErrNotExist)
	}
	d, err := s.objectDir(path, false)
	if err == nil {
		data, err := d.ReadFile(sum)
		name := d.Join(sum)
		d.Close()
		if !errors.Is(err, fs.ErrNotExist) {
			return name, data, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, err
	}
	sub, name := legacyName(sum)
	d, err = s.objects.Sub(sub, false)
	if err != nil {
		return s.objects.Join(sub + "/" + name), nil, err
	}
	defer d.Close()
	data, err := d.ReadFile(name)
	return d.Join(name), data, err
}

// firstPath returns the path named by the first complete line of an index.
func (s *Store) firstPath(name string) (string, error) {
	f, err := s.index.Open(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // replaced under us; its path is in the new one
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil {
		return "", nil // empty, or only a torn line
	}
	var r record
	if decodeLine(line, &r, &r.Data) != nil {
		return "", nil
	}
	return r.Path, nil
}

// validPath is fs.ValidPath without its check of UTF-8: a path that is
// relative, slash-separated, without empty, "." or ".." elements (other
// than the whole path "."), and without a NUL byte.
func validPath(p string) bool {
	if p == "." {
		return true
	}
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for {
		i := strings.IndexByte(p, '/')
		elem := p
		if i >= 0 {
			elem = p[:i]
		}
		if elem == "" || elem == "." || elem == ".." {
			return false
		}
		if i < 0 {
			return true
		}
		p = p[i+1:]
	}
}
