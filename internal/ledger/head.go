//go:build unix

package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/editguard/editguard/internal/statedir"
)

// head names one record by its seq and hash: the last record of a ledger,
// or what the head anchor holds.
type head struct {
	seq  uint64
	hash string
}

// headSuffix is added to the ledger's name to name its head anchor.
const headSuffix = ".head"

// The anchor file holds two slots, each one line of fixed length,
// "<seq, 20 digits> <hash> <check>\n", where check is the first 16 hex
// digits of the SHA-256 of what precedes it. The fixed length lets a writer
// overwrite a slot in place with one pwrite. A writer overwrites the slot
// that does not hold the newest head and fdatasyncs it, so a crash that
// tears that write (the check catches it) leaves the other slot, the head
// of the batch before; the anchor is the valid slot with the higher seq.
// An anchor with no valid slot was not torn by a crash: it is reported.
const (
	headLen  = 20 + 1 + 64 + 1 + 16 + 1
	headSize = 2 * headLen
)

func (h head) encode() []byte {
	body := fmt.Sprintf("%020d %s", h.seq, h.hash)
	sum := sha256.Sum256([]byte(body))
	return []byte(body + " " + hex.EncodeToString(sum[:8]) + "\n")
}

func decodeHead(b []byte) (head, error) {
	bad := func(why string) (head, error) { return head{}, fmt.Errorf("head anchor %s", why) }
	if len(b) != headLen || b[headLen-1] != '\n' || b[20] != ' ' || b[85] != ' ' {
		return bad("has the wrong form")
	}
	seq, err := strconv.ParseUint(string(b[:20]), 10, 64)
	if err != nil || seq == 0 {
		return bad("has no seq")
	}
	h := head{seq: seq, hash: string(b[21:85])}
	if !isHash(h.hash) {
		return bad("has no hash")
	}
	if !bytes.Equal(h.encode(), b) {
		return bad("fails its check")
	}
	return h, nil
}

// lineHead returns the seq and hash of a stored record line.
func lineHead(line []byte) (head, error) {
	var h struct {
		Seq  uint64 `json:"seq"`
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return head{}, err
	}
	if h.Seq == 0 || !isHash(h.Hash) {
		return head{}, errors.New("no seq or hash")
	}
	return head{seq: h.Seq, hash: h.Hash}, nil
}

// readHead reads the anchor of the ledger name in dir without creating
// anything. ok is false when there is no anchor. An anchor that cannot be
// read is a *VerifyError with ReasonBadHead.
func readHead(dir *statedir.Dir, name string) (h head, ok bool, err error) {
	f, err := dir.Open(name+headSuffix, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return head{}, false, nil
	}
	if err != nil {
		return head{}, false, err
	}
	defer f.Close()
	h, _, err = readSlots(f, f.Name(), f.Size())
	return h, err == nil, err
}

// readSlots returns the newest valid slot of the anchor f, named name, of
// size bytes (as its fstat gives it), and the slot's index.
func readSlots(f io.ReaderAt, name string, size int64) (head, int, error) {
	if size != headSize {
		return head{}, 0, &VerifyError{Reason: ReasonBadHead, Err: fmt.Errorf("%s: %d bytes, want %d", name, size, headSize)}
	}
	b := make([]byte, headSize)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return head{}, 0, err
	}
	if n != headSize {
		return head{}, 0, &VerifyError{Reason: ReasonBadHead, Err: fmt.Errorf("%s: %d bytes, want %d", name, n, headSize)}
	}
	best, slot, err := head{}, -1, error(nil)
	for i := range 2 {
		h, herr := decodeHead(b[i*headLen : (i+1)*headLen])
		if herr != nil {
			err = herr
			continue
		}
		if slot < 0 || h.seq > best.seq {
			best, slot = h, i
		}
	}
	if slot < 0 {
		return head{}, 0, &VerifyError{Reason: ReasonBadHead, Err: fmt.Errorf("%s: %w", name, err)}
	}
	return best, slot, nil
}

// checkHead opens the anchor for writing and checks the loaded tail
// against it. The caller holds the lock. It returns the open anchor, or nil
// if there is none yet, and the slot holding its newest head. An anchor ahead of the ledger, or naming a record
// the ledger holds with another hash, means records were cut: checkHead
// returns a *VerifyError with ReasonTruncated, and nothing is appended, so
// the evidence stays as it is.
func (l *Ledger) checkHead() (*statedir.File, int, head, error) {
	f, err := l.dir.Open(l.name+headSuffix, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, head{}, nil
	}
	if err != nil {
		return nil, 0, head{}, err
	}
	h, slot, err := readSlots(f, f.Name(), f.Size())
	if err == nil {
		err = l.matchHead(h)
	}
	if err != nil {
		f.Close()
		return nil, 0, head{}, err
	}
	return f, slot, h, nil
}

// matchHead checks that the ledger holds the anchored record h.
func (l *Ledger) matchHead(h head) error {
	t := l.tail
	switch {
	case h.seq > t.seq:
		return &VerifyError{Seq: t.seq + 1, Reason: ReasonTruncated,
			Err: fmt.Errorf("%s ends at record %d, its head anchor names record %d", l.Name(), t.seq, h.seq)}
	case h.seq == t.seq && h.hash == t.hash:
		return nil
	case h == l.matched.h && l.matched.ino == l.f.Ino() && l.matched.size >= 0 && l.matched.size <= t.size:
		return nil // found before, and the file has only grown since
	}
	hash, found, err := hashAt(l.f, t.size, h.seq)
	if err != nil {
		return err
	}
	if !found || hash != h.hash {
		return &VerifyError{Seq: h.seq, Reason: ReasonTruncated,
			Err: fmt.Errorf("record %d of %s is not the one its head anchor names", h.seq, l.Name())}
	}
	l.matched.h, l.matched.ino, l.matched.size = h, l.f.Ino(), t.size
	return nil
}

// anchorSync is an anchor write whose fdatasync runs in the background.
type anchorSync struct {
	h    head
	done chan struct{} // closed once err is set
	err  error
}

// writeHead moves the anchor to h. The caller holds the lock and commitMu,
// and has made the records up to h durable, so the anchor never gets
// ahead of the ledger. f is the open anchor, or nil to create it; newest
// is the slot holding its newest head, cur, which stays as it is. When
// writeHead returns nil with f not nil, f belongs to the fdatasync it
// started and must not be closed by the caller.
//
// The two slots are what lets one valid head survive any crash: a write
// goes to the slot not holding cur, so it may only be torn while cur is
// durable. cur is durable if this Ledger wrote it and fdatasynced it;
// otherwise (another process, or a sync that failed) writeHead makes it so
// first. The fdatasync of the slot written now is not waited for: the
// anchor may lag the ledger after a power loss, by the one batch whose
// reply did not wait for it, as it may when a crash comes between the
// ledger's fsync and the anchor's write. The next commit, or Close, waits.
func (l *Ledger) writeHead(f *statedir.File, newest int, cur, h head) error {
	b := h.encode()
	if f == nil {
		// A new anchor appears whole, through a durable replace, so that
		// no crash leaves an empty or partial one.
		return l.dir.WriteFile(l.name+headSuffix, append(b, b...), 0o600)
	}
	prev := l.anchored
	if prev != nil {
		<-prev.done
	}
	if prev == nil || prev.err != nil || prev.h != cur {
		if err := datasync(f); err != nil {
			return err
		}
	}
	if _, err := f.WriteAt(b, int64(1-newest)*headLen); err != nil {
		l.anchored = nil
		return err
	}
	a := &anchorSync{h: h, done: make(chan struct{})}
	l.anchored = a
	go func() {
		a.err = datasync(f)
		f.Close()
		close(a.done)
	}()
	return nil
}

// hashAt returns the hash of the record with the given seq, reading the
// complete lines of f that end at end backwards, as far as that record.
func hashAt(f io.ReaderAt, end int64, seq uint64) (hash string, found bool, err error) {
	var b []byte // the bytes [pos, end') of f, ending with a complete line
	pos := end
	chunk := int64(4096)
	for {
		for len(b) > 0 {
			body := b[:len(b)-1]
			j := bytes.LastIndexByte(body, '\n')
			if j < 0 && pos > 0 {
				break // the line starts before pos
			}
			h, err := lineHead(body[j+1:])
			if err != nil {
				return "", false, err
			}
			if h.seq <= seq {
				return h.hash, h.seq == seq, nil
			}
			b = b[:j+1]
		}
		if pos == 0 {
			return "", false, nil
		}
		n := min(chunk, pos)
		pos -= n
		nb := make([]byte, n, n+int64(len(b)))
		if _, err := f.ReadAt(nb, pos); err != nil && err != io.EOF {
			return "", false, err
		}
		b = append(nb, b...)
		chunk = min(2*chunk, 1<<20)
	}
}
