//go:build unix

package history

import (
	"context"
	"time"

	"errors"
	"fmt"
	"github.com/editguard/editguard/internal/filelock"
	"hash/crc32"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// The mark "synced" holds a position in the ledger: the seq and hash of a
// record such that every version saved lazily (Meta.Lazy) for an intent up
// to that record is durable. Whoever moves it has made sure of that, under
// locks/synced.lock; a reader that finds the mark missing, damaged or not
// naming a record of the ledger checks every intent the ledger's last
// 64 MiB hold (ledger.SinceLimit: Ledger.Since reads no further back). It is
// one line, rewritten in place: "seq hash crc=C\n", the CRC-32 of what
// precedes it catching a torn write. It is not fsynced: every value it
// takes is true when written (the indexes it vouches for are durable by
// then), so a power cut that keeps an older value, or none, only makes
// the next reader check more of the ledger.
const (
	syncedName = "synced"
	syncedLock = "synced.lock"
)

// LockSynced takes the lock under which the mark is read, checked against
// the ledger and moved, waiting at most wait (0: without limit); it returns
// the unlock.
func (s *Store) LockSynced(wait time.Duration) (func() error, error) {
	if s.readOnly {
		return nil, fmt.Errorf("%w: the store is read-only", ErrInvalid)
	}
	if wait == 0 {
		wait = -1
	}
	l, err := s.lockFiles.Lock(context.Background(), syncedLock, &filelock.Options{Timeout: wait})
	if err != nil {
		return nil, err
	}
	return l.Unlock, nil
}

// Synced returns the mark; exists is false if there is none, ok false if
// it is damaged.
func (s *Store) Synced() (seq uint64, hash string, exists, ok bool) {
	f, err := s.dir.Open(syncedName, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", false, false
	}
	if err != nil {
		return 0, "", true, false
	}
	defer f.Close()
	buf := make([]byte, 128)
	n, _ := f.ReadAt(buf, 0)
	line, _, found := strings.Cut(string(buf[:n]), "\n")
	if !found {
		return 0, "", true, false
	}
	body, crc, found := strings.Cut(line, " crc=")
	want, err := strconv.ParseUint(crc, 16, 32)
	if !found || err != nil || uint32(want) != crc32.ChecksumIEEE([]byte(body)) {
		return 0, "", true, false
	}
	a, b, found := strings.Cut(body, " ")
	seq, err = strconv.ParseUint(a, 10, 64)
	if !found || err != nil {
		return 0, "", true, false
	}
	return seq, b, true, true
}

// SetSynced moves the mark to the record seq, whose hash is hash. The
// caller holds LockSynced, and has made durable every version the new
// mark vouches for. A mark that did not exist is created durably: a
// reader that finds none takes the ledger's end for it (a store that
// never had a lazy version), so a mark must not vanish once one exists.
func (s *Store) SetSynced(seq uint64, hash string) error {
	fail := func(err error) error { return &Error{Op: "set_synced", Err: err} }
	if strings.ContainsAny(hash, " \n") {
		return fail(fmt.Errorf("%w: hash %q", ErrInvalid, hash))
	}
	body := fmt.Sprintf("%020d %s", seq, hash)
	line := fmt.Appendf(nil, "%s crc=%08x\n", body, crc32.ChecksumIEEE([]byte(body)))
	f, err := s.dir.Open(syncedName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(line, 0); err != nil {
		return fail(err)
	}
	if f.Size() > int64(len(line)) {
		if err := f.Truncate(int64(len(line))); err != nil {
			return fail(err)
		}
	}
	if f.Size() == 0 {
		// Created now (or found empty): durably, with its name.
		if err := s.fault("fsync", s.dir.Join(syncedName)); err != nil {
			return fail(err)
		}
		if err := f.Sync(); err != nil {
			return fail(err)
		}
		if err := s.syncEntry(s.dir, syncedName, f.Ino()); err != nil {
			return fail(err)
		}
	}
	return nil
}
