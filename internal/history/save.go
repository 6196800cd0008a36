//go:build unix

package history

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
)

// verifyLimit is the largest existing object that Save compares byte for
// byte before reusing it; larger ones are trusted on their size. Reading a
// cached object of this size costs far less than the fsync Save saves by
// reusing it.
const verifyLimit = 8 << 20

// DefaultInlineLimit is the largest content Save keeps in the version's
// index line instead of an object file of its own, unless
// Options.InlineLimit says otherwise. The index line is appended and
// fsynced either way; an object costs a file, its fsync and its
// directory's fsync on top, which for small files is most of the time a
// snapshot takes. Inline contents are base64 in the line and count toward
// MaxBytes like objects.
const DefaultInlineLimit = 32 << 10

// Save records content as the newest version of path and returns it.
// absent records that the file did not exist (content and sum are ignored).
// sum is the hex SHA-256 of content as the caller already computed it;
// Save trusts it and hashes content itself only when sum is "".
//
// When Save returns nil the version is durable: the index line is fsynced,
// and so are the object (for content over the inline limit) and the directory
// naming it. The caller may
// then replace or delete the file. On error nothing the caller can observe has
// changed, though an unreferenced object may be left for the next trim to
// remove.
//
// If path then has more than KeepVersions and a quarter versions, Save
// trims it to the newest KeepVersions, removing the oldest from its index
// and the objects no kept version names (see the
// package doc); a failure of that cleanup is not an error of Save, whose
// version is already durable, and the next Save of path tries again.
//
// Save holds the store lock shared (so a concurrent Prune can neither delete
// an object this version is about to reference nor rewrite the index under
// it) and the path's lock exclusively while it writes the object, assigns
// the next sequence number, appends and trims, so concurrent Saves of one
// path, in any process, get distinct IDs and never remove each other's
// objects.
func (s *Store) Save(path string, content []byte, absent bool, sum string, meta Meta) (Version, error) {
	fail := func(err error) (Version, error) { return Version{}, &Error{Op: "save", Path: path, Err: err} }
	if err := checkPath(path); err != nil {
		return fail(err)
	}
	v := Version{Path: path, Absent: absent, Op: meta.Op, Session: meta.Session, Intent: meta.Intent}
	if !absent {
		if sum == "" {
			h := sha256.Sum256(content)
			sum = hex.EncodeToString(h[:])
		}
		if !validSum(sum) {
			return fail(fmt.Errorf("%w: sha256 %q is not 64 lowercase hex digits", ErrInvalid, sum))
		}
		v.SHA256, v.Size = sum, int64(len(content))
	}

	unlock, err := s.lockPath(path)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	// An absent or inline version needs no object directory; a file that
	// never had content larger than the inline limit gets none. It is
	// looked up all the same, so that a symlink or a file planted there
	// is refused at once.
	inline := !absent && len(content) <= s.inline
	objs, err := s.objectDir(path, !absent && !inline)
	if errors.Is(err, fs.ErrNotExist) && (absent || inline) {
		objs, err = nil, nil
	}
	if err != nil {
		return fail(err)
	}
	if objs != nil {
		defer objs.Close()
	}
	var added int64
	e := entry{Version: v}
	switch {
	case inline:
		e.data, added = emptyContent, int64(len(content))
		if len(content) > 0 {
			if e.data, err = json.Marshal(content); err != nil {
				return fail(err)
			}
		}
	case !absent:
		if added, err = s.putObject(objs, sum, content, &meta); err != nil {
			return fail(err)
		}
	}
	err = s.append(path, func(last uint64) ([]byte, error) {
		// Both taken under the path's lock, so a file's versions are
		// in the same order by time as by ID.
		e.ID, e.Time = formatID(last+1), s.now().UTC()
		return e.line()
	}, true, !meta.Lazy)
	v = e.Version
	if err != nil {
		return fail(err)
	}
	// The version is durable; retention of this file's versions follows.
	// A failure to trim loses nothing and is retried by the next Save.
	seq, _ := parseID(v.ID)
	if meta.Later != nil {
		s.account(added)
		if s.mayTrim(path, seq) {
			meta.Later(func() { s.trimLocked(path, seq) })
		}
		return v, nil
	}
	removed, _ := s.trim(path, objs, seq)
	s.account(added - removed)
	return v, nil
}

// Detach makes sure that no entry of path's object directory is the file
// with device dev and inode ino: a file a Save linked (Meta.Link) that
// someone else may now change. The object named linked, if it is that
// file and the file still holds content (whose SHA-256 is sum, and sum is
// linked), is replaced by a copy of content, durably; any other such entry
// (the object, when the file holds other bytes by now, or a temporary name
// a crash left) is removed, since what it should hold is gone or it names
// nothing. Entries that are other files are left alone.
func (s *Store) Detach(path string, dev, ino uint64, linked, sum string, content []byte) error {
	fail := func(err error) error { return &Error{Op: "detach", Path: path, Err: err} }
	if err := checkPath(path); err != nil {
		return fail(err)
	}
	if !validSum(linked) {
		return fail(fmt.Errorf("%w: sha256 %q is not 64 lowercase hex digits", ErrInvalid, linked))
	}
	unlock, err := s.lockPath(path)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	objs, err := s.objectDir(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fail(err)
	}
	defer objs.Close()
	ents, err := objs.ReadDir()
	if err != nil {
		return fail(err)
	}
	removed := false
	for _, e := range ents {
		st, err := objs.Stat(e.Name())
		if err != nil {
			return fail(err)
		}
		if !st.Exists || st.Dev != dev || st.Ino != ino {
			continue
		}
		if e.Name() == linked && sum == linked {
			if _, err := s.copyObject(objs, linked, content, st); err != nil {
				return fail(err)
			}
			continue
		}
		if err := objs.Remove(e.Name()); err != nil {
			return fail(err)
		}
		if validSum(e.Name()) {
			s.account(-st.Size)
		}
		removed = true
	}
	if removed {
		if err := objs.Sync(); err != nil {
			return fail(err)
		}
	}
	return nil
}

// trimLocked is the trim of a Save whose caller ran it later: under the
// store's lock (shared) and the path's.
func (s *Store) trimLocked(path string, seq uint64) {
	unlock, err := s.lockPath(path)
	if err != nil {
		return
	}
	defer unlock()
	removed, _ := s.trim(path, nil, seq)
	s.account(-removed)
}

// putObject makes <sum> in objs (the file's object directory) hold
// content, durably. It returns the bytes it added to the store (0 when the
// object was already there). The caller holds the file's lock, so no one
// else writes objs meanwhile.
func (s *Store) putObject(objs *statedir.Dir, sum string, content []byte, meta *Meta) (int64, error) {
	st, err := objs.Stat(sum)
	if err != nil {
		return 0, err
	}
	if !st.Exists && meta.Link != nil {
		if added, ok := s.linkObject(objs, sum, content, meta); ok {
			return added, nil
		}
	}
	if st.Exists {
		if st.Regular() && st.Size == int64(len(content)) &&
			(len(content) > verifyLimit || sameContent(objs, sum, content)) {
			// The object may have been renamed into place by a Save that
			// died before its directory fsync; without this fsync the
			// version we are about to record could point at a name a power
			// loss takes away. Once done, this Store need not repeat it.
			return 0, s.syncEntry(objs, sum, st.Ino)
		}
		// The name holds other bytes: either the object was damaged, and
		// we replace it with the good content we hold, or sum is not the
		// hash of content, and replacing would destroy a good object that
		// other versions reference. This path is rare, so hashing is
		// affordable here.
		if h := sha256.Sum256(content); hex.EncodeToString(h[:]) != sum {
			return 0, fmt.Errorf("%w: sha256 %s was given for content whose sha256 is %s", ErrInvalid, sum, hex.EncodeToString(h[:]))
		}
	}
	return s.copyObject(objs, sum, content, st)
}

// linkObject makes <sum> in objs the file meta.Link links, durably. It
// reports false, having added no name, if the link fails: the caller
// writes a copy instead.
func (s *Store) linkObject(objs *statedir.Dir, sum string, content []byte, meta *Meta) (int64, bool) {
	var r [8]byte
	rand.Read(r[:])
	tmp := ".tmp-" + hex.EncodeToString(r[:])
	if s.fault("link", objs.Join(tmp)) != nil || meta.Link(int(objs.File().Fd()), tmp) != nil {
		return 0, false
	}
	// Renamed, as a copy is, so that the object's name only ever names
	// durable bytes of the file Link checked it links (Link made the
	// bytes durable before the link).
	if s.fault("rename", objs.Join(tmp)) != nil || objs.Rename(tmp, sum) != nil {
		objs.Remove(tmp)
		return 0, false
	}
	nst, err := objs.Stat(sum)
	if err == nil {
		err = s.syncEntry(objs, sum, nst.Ino)
	}
	if err != nil {
		// Not durably named: no version may name it, and it must not stay
		// a name of a file someone else may change.
		objs.Remove(sum)
		return 0, false
	}
	if meta.Linked != nil {
		meta.Linked()
	}
	return int64(len(content)), true
}

// copyObject writes content as the object <sum> in objs, replacing what
// st says is there, durably.
func (s *Store) copyObject(objs *statedir.Dir, sum string, content []byte, st atomicfile.Stat) (int64, error) {
	// Write a temp file next to the object (O_EXCL, random name), so the
	// object's name only ever points to complete, fsynced bytes.
	if err := s.fault("create", objs.Name()); err != nil {
		return 0, err
	}
	f, tmp, err := objs.CreateTemp(".tmp-")
	if err != nil {
		return 0, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			objs.Remove(tmp)
		}
	}()
	if err := s.fault("write", objs.Join(tmp)); err != nil {
		return 0, err
	}
	if _, err := f.Write(content); err != nil {
		return 0, err
	}
	// Objects are never modified in place; read-only says so.
	if err := f.Chmod(0o444); err != nil {
		return 0, err
	}
	// Without this fsync the rename below could reach the disk before the
	// data, and a crash would leave the object's name on a short or empty file.
	if err := s.fault("fsync", objs.Join(tmp)); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	// Rename, not link: it also repairs a damaged object (or a symlink or
	// other entry planted under the object's name, which rename replaces
	// without following).
	if err := s.fault("rename", objs.Join(tmp)); err != nil {
		return 0, err
	}
	if err := objs.Rename(tmp, sum); err != nil {
		return 0, err
	}
	ok = true
	// Make the new name durable before the index refers to it.
	nst, err := objs.Stat(sum)
	if err != nil {
		return 0, err
	}
	if err := s.syncEntry(objs, sum, nst.Ino); err != nil {
		return 0, err
	}
	if st.Exists {
		return int64(len(content)) - st.Size, nil
	}
	return int64(len(content)), nil
}

// syncEntry fsyncs dir, which holds name, unless this Store already did so
// while name named the same inode. A name that was replaced since, by
// another process's Prune or Save, names a new inode, and is synced again.
func (s *Store) syncEntry(dir *statedir.Dir, name string, ino uint64) error {
	key := dir.Join(name)
	if v, ok := s.durable.Load(key); ok && v == ino {
		return nil
	}
	if err := s.fault("fsync dir", dir.Name()); err != nil {
		return err
	}
	if err := dir.Sync(); err != nil {
		return err
	}
	s.durable.Store(key, ino)
	return nil
}

func sameContent(dir *statedir.Dir, name string, content []byte) bool {
	f, err := dir.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	// Compared a piece at a time: a buffer the size of the content would
	// be allocated, faulted in and zeroed for every Save of a large file.
	buf := compareBufs.Get().(*[64 << 10]byte)
	defer compareBufs.Put(buf)
	for off := 0; ; {
		n, err := f.ReadAt(buf[:], int64(off))
		if n > len(content)-off || !bytes.Equal(buf[:n], content[off:off+n]) {
			return false
		}
		off += n
		if err == io.EOF {
			return off == len(content)
		}
		if err != nil {
			return false
		}
	}
}

// compareBufs holds sameContent's buffers.
var compareBufs = sync.Pool{New: func() any { return new([64 << 10]byte) }}

// append adds one line to path's index. The caller holds the path's lock.
// line is called with the highest version sequence number in the index (0
// for none) and returns the JSON to append. A torn last line left by a crash
// is cut off first. With create set a missing index is created; without, a
// missing index is an error wrapping fs.ErrNotExist. With durable set the
// index file and its directory are fsynced.
func (s *Store) append(path string, line func(last uint64) ([]byte, error), create, durable bool) error {
	name := indexName(path)
	flag := os.O_RDWR | os.O_APPEND
	if create {
		flag |= os.O_CREATE
	}
	f, err := s.index.Open(name, flag, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	last, good, err := scanTail(f)
	if err != nil {
		return err
	}
	if good < f.Size() {
		// A crash interrupted an append: drop the partial line, so the
		// new line starts at a line boundary. We hold the path's lock,
		// so no one else is appending.
		if err := f.Truncate(good); err != nil {
			return err
		}
	}
	b, err := line(last)
	if err != nil {
		return err
	}
	// One write of the whole line: O_APPEND places it at the end, and a
	// crash can only leave a prefix of it, which readers ignore.
	if err := s.fault("write", s.index.Join(name)); err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		return err
	}
	if !durable {
		return f.Close()
	}
	// Without this fsync the appended version could vanish in a power loss
	// after the caller has already replaced the file it describes.
	if err := s.fault("fsync", s.index.Join(name)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The index file may have just been created (by us, or by a Save that
	// died before reaching this line); make its name durable too. The
	// name still denotes the file opened: it is replaced only under the
	// path's lock (trim) or the store lock held exclusively (Prune).
	return s.syncEntry(s.index, name, f.Ino())
}

// scanTail reads the end of an index and returns the sequence number of the
// last version line, and the length of the file up to and including its
// last newline (everything after it is a torn append), as the file was when
// opened.
func scanTail(f *statedir.File) (last uint64, good int64, err error) {
	good, err = backLines(f, func(line []byte) (bool, error) {
		// Only the kind and the ID: an inline content is not decoded.
		var r struct {
			Kind string `json:"kind"`
			ID   string `json:"version"`
		}
		if err := decodeLine(line, &r, nil); err != nil {
			// Without this line we cannot be sure of the highest
			// sequence number; guessing could reuse an ID.
			return false, fmt.Errorf("%w: %s: undecodable line near the end", ErrCorruptIndex, f.Name())
		}
		if r.Kind != "" {
			return false, nil
		}
		seq, ok := parseID(r.ID)
		if !ok {
			return false, fmt.Errorf("%w: %s: bad version ID %q", ErrCorruptIndex, f.Name(), r.ID)
		}
		last = seq
		return true, nil
	})
	if err != nil {
		return 0, 0, err
	}
	return last, good, nil
}

// tailChunk is the size of backLines' first read.
const tailChunk = 16 << 10

var tailBuffers = sync.Pool{New: func() any { b := make([]byte, tailChunk); return &b }}

// backLines calls fn with each complete, non-blank line of f (without its
// newline), the last first, until fn returns true or an error, and returns
// the length of f up to and including its last newline (everything after
// it is a torn append), as f was when opened. It reads backwards in growing
// chunks, so a line near the end costs the same however long the file is.
func backLines(f *statedir.File, fn func(line []byte) (bool, error)) (good int64, err error) {
	end := f.Size() // the lines from end on were handed to fn, or are a torn tail
	good = -1
	// The first read takes a version with a few KiB inline whole, into a
	// buffer that commits share (fn keeps no line after backLines returns).
	first := tailBuffers.Get().(*[]byte)
	defer tailBuffers.Put(first)
	for chunk := int64(tailChunk); ; chunk *= 4 {
		off := max(0, end-chunk)
		var buf []byte
		if chunk == tailChunk {
			buf = (*first)[:end-off]
		} else {
			buf = make([]byte, end-off)
		}
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return 0, err
		}
		if good < 0 {
			nl := bytes.LastIndexByte(buf, '\n')
			if nl < 0 && off > 0 {
				continue // no line boundary yet: read more
			}
			good = off + int64(nl) + 1
			buf, end = buf[:nl+1], good
		}
		start := 0
		if off > 0 {
			// The first line of the chunk may start before it.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				continue // one line longer than the chunk: read more
			}
			start = i + 1
		}
		lines := buf[start:]
		for len(lines) > 0 {
			lines = lines[:len(lines)-1] // drop the newline
			line := lines[bytes.LastIndexByte(lines, '\n')+1:]
			lines = lines[:len(lines)-len(line)]
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if done, err := fn(line); done || err != nil {
				return good, err
			}
		}
		if off == 0 {
			return good, nil
		}
		end = off + int64(start)
	}
}

// SetLedgerSeq records the sequence number of the ledger record that
// describes the commit which displaced version id of path. The ledger record
// is written after the commit, so this is a separate, later step: it appends
// an annotation line to the index (which the next trim folds into the version
// line). The line is not fsynced: it only links history to the ledger, whose
// own record is the authority, and the next Save of the path fsyncs it anyway.
// An id newer than the path's newest version gives an error wrapping
// ErrNoVersion; an annotation of a version already pruned is ignored.
func (s *Store) SetLedgerSeq(path, id string, seq uint64) error {
	fail := func(err error) error { return &Error{Op: "set_ledger_seq", Path: path, Version: id, Err: err} }
	n, ok := parseID(id)
	if !ok {
		return fail(fmt.Errorf("%w: version ID %q", ErrInvalid, id))
	}
	if err := checkPath(path); err != nil {
		return fail(err)
	}
	// Prune must not rewrite the index between our check that the version
	// exists and our append.
	unlock, err := s.lockPath(path)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	err = s.append(path, func(last uint64) ([]byte, error) {
		if n > last {
			return nil, ErrNoVersion
		}
		display, hexBytes := rawpath.Split(path)
		a := struct {
			Kind      string `json:"kind"`
			ID        string `json:"version"`
			Path      string `json:"path"`
			PathHex   string `json:"path_hex,omitempty"`
			LedgerSeq uint64 `json:"ledger_seq"`
		}{kindLedgerSeq, formatID(n), display, hexBytes, seq}
		return json.Marshal(a)
	}, false, false)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(ErrNoVersion) // no index: no version
	}
	if err != nil {
		return fail(err)
	}
	return nil
}

// A Hook, set on a Store with SetHook, is called before each step of Save
// that writes to the disk (op is "create", "write", "fsync", "rename" or
// "fsync dir"; name is the file or directory), and the step fails with its
// error, unmade, if it returns one. It is for fault-injection tests; there is
// no global hook.
type Hook func(op, name string) error

// SetHook installs h on s (nil removes it). It may be called while s is in
// use.
func (s *Store) SetHook(h Hook) {
	if h == nil {
		s.hook.Store(nil)
		return
	}
	s.hook.Store(&h)
}

func (s *Store) fault(op, name string) error {
	if h := s.hook.Load(); h != nil {
		return (*h)(op, name)
	}
	return nil
}

// SyncIndex makes path's index durable: the file, and its name in the
// index directory. It is how the caller of a lazy Save (Meta.Lazy) makes
// the version's line durable. A path without an index has nothing to sync.
func (s *Store) SyncIndex(path string) error { return s.SyncIndexes([]string{path}) }

// SyncIndexes is SyncIndex for several paths: each index file is fsynced,
// and then the index directory once, if any of their names needs it.
func (s *Store) SyncIndexes(paths []string) error { return s.SyncIndexesWith(paths, nil) }

// SyncIndexesWith is SyncIndexes where flush, if not nil, makes every
// write to the store's file system durable (a syncfs(2) of it): it is
// called once, in place of the fsyncs of the index files and their
// directory, which pays off for many indexes.
func (s *Store) SyncIndexesWith(paths []string, flush func() error) error {
	type entry struct {
		name, path string
		ino        uint64
		f          *statedir.File
		err        error
	}
	var opened []*entry
	defer func() {
		for _, e := range opened {
			if e.f != nil {
				e.f.Close()
			}
		}
	}()
	for _, path := range paths {
		if err := checkPath(path); err != nil {
			return &Error{Op: "sync", Path: path, Err: err}
		}
		if s.index == nil {
			return nil
		}
		name := indexName(path)
		f, err := s.index.Open(name, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return &Error{Op: "sync", Path: path, Err: err}
		}
		opened = append(opened, &entry{name: name, path: path, ino: f.Ino(), f: f})
	}
	if flush == nil {
		// The fsyncs at once: a journaling file system commits them
		// together. The fault hook is asked in order first, as if they
		// ran one by one: a fault stops the ones after it.
		todo, failed := opened, error(nil)
		for i, e := range opened {
			if err := s.fault("fsync", s.index.Join(e.name)); err != nil {
				todo, failed = opened[:i], &Error{Op: "sync", Path: e.path, Err: err}
				break
			}
		}
		var wg sync.WaitGroup
		for _, e := range todo {
			wg.Go(func() { e.err = e.f.Sync() })
		}
		wg.Wait()
		for _, e := range todo {
			if e.err != nil {
				return &Error{Op: "sync", Path: e.path, Err: e.err}
			}
		}
		if failed != nil {
			return failed
		}
	}
	var names []*entry
	for _, e := range opened {
		if v, ok := s.durable.Load(s.index.Join(e.name)); !ok || v != e.ino {
			names = append(names, e)
		}
	}
	if flush != nil {
		err := s.fault("syncfs", s.index.Join("."))
		if err == nil {
			err = flush()
		}
		if err != nil {
			return &Error{Op: "sync", Path: paths[0], Err: err}
		}
		// The flush made the names durable too.
		for _, e := range names {
			s.durable.Store(s.index.Join(e.name), e.ino)
		}
		return nil
	}
	if len(names) == 0 {
		return nil
	}
	// One fsync of the directory makes every name in it durable.
	if err := s.syncEntry(s.index, names[0].name, names[0].ino); err != nil {
		return &Error{Op: "sync", Path: paths[0], Err: err}
	}
	for _, e := range names[1:] {
		s.durable.Store(s.index.Join(e.name), e.ino)
	}
	return nil
}

// Intents returns, for each version of path saved for a ledger intent
// (Meta.Intent) numbered from on, the intent's seq and the version's
// SHA-256. It reads the index back from its end, and stops after
// olderRun versions of older intents in a row: versions are in the order
// of their intents, except one saved again after a crash, out of turn.
func (s *Store) Intents(path string, from uint64) (map[uint64]string, error) {
	const olderRun = 8
	out := map[uint64]string{}
	older := 0
	_, _, err := s.Newest(path, func(v Version) bool {
		switch {
		case v.Intent == 0:
		case v.Intent < from:
			older++
			return older >= olderRun
		default:
			older = 0
			out[v.Intent] = v.SHA256
		}
		return false
	})
	return out, err
}
