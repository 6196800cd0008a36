package gitobj

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
)

const maxLooseDirLen = 1 << 16 // entries of a fan-out directory listed

// A looseDir is the listing of a fan-out directory objects/xx, made the
// first time Has looks into it.
type looseDir struct {
	once   sync.Once
	ids    [][19]byte // the regular files' names, decoded, sorted
	listed bool       // false if the directory could not be listed whole
}

// hasLoose reports whether id is a loose object.
func (r *Repo) hasLoose(id ID) bool {
	d := &r.loose[id[0]]
	d.once.Do(func() { d.ids, d.listed = listLoose(r.objects, id[0]) })
	if !d.listed {
		st, err := r.objects.Lstat(loosePath(id))
		return err == nil && st.Mode().IsRegular()
	}
	_, found := slices.BinarySearchFunc(d.ids, [19]byte(id[1:]), func(a, b [19]byte) int {
		return bytes.Compare(a[:], b[:])
	})
	return found
}

// listLoose lists the loose objects whose ids start with b. It returns
// false if there are too many to list, or the directory is unreadable.
func listLoose(objects *os.Root, b byte) ([][19]byte, bool) {
	const hexDigits = "0123456789abcdef"
	d, err := objects.OpenFile(string([]byte{hexDigits[b>>4], hexDigits[b&15]}), os.O_RDONLY|oNonblock, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer d.Close()
	var ids [][19]byte
	for seen := 0; ; {
		batch, err := d.ReadDir(1024)
		if seen += len(batch); seen > maxLooseDirLen {
			return nil, false
		}
		for _, e := range batch {
			var id [19]byte
			if e.Type().IsRegular() && decodeLowerHex(id[:], e.Name()) {
				ids = append(ids, id)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
	}
	slices.SortFunc(ids, func(a, b [19]byte) int { return bytes.Compare(a[:], b[:]) })
	return ids, true
}

// decodeLowerHex decodes s, which must be exactly 2·len(dst) lowercase
// hexadecimal digits, as git names loose objects, into dst.
func decodeLowerHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := lowerHexDigit(s[2*i])
		lo, ok2 := lowerHexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// loosePath returns the path of the loose object id in objects.
func loosePath(id ID) string {
	s := id.String()
	return s[:2] + "/" + s[2:]
}

// readLoose reads the loose object id, which must be of type want (objBlob,
// objTree, objCommit) and of at most maxSize bytes, appending its content
// to dst[:0]. It does not check the content's hash.
//
// A loose object is zlib data: "<type> <decimal size>\x00", then content.
func (r *Repo) readLoose(id ID, want int, dst []byte, maxSize int64) ([]byte, error) {
	f, size, err := openFile(r.objects, loosePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("gitobj: loose object %s: %w", id, err)
	}
	defer f.Close()
	z := inflaters.Get().(*inflater)
	defer inflaters.Put(z)
	const maxHeader = len("commit ") + 19 + 1
	src := io.LimitReader(f, min(size, compressBound(min(maxSize, math.MaxInt64/2)+int64(maxHeader))))
	if err := z.reset(src); err != nil {
		return nil, corrupt("loose object %s: %v", id, err)
	}

	var h [maxHeader]byte
	n, nul := 0, -1
	for nul < 0 {
		if n == len(h) {
			return nil, corrupt("loose object %s: bad header", id)
		}
		k, err := z.zr.Read(h[n:])
		nul = bytes.IndexByte(h[n:n+k], 0)
		if nul >= 0 {
			nul += n
		}
		n += k
		if nul < 0 && err != nil {
			return nil, corrupt("loose object %s: bad header", id)
		}
	}
	typ, sizeText, _ := bytes.Cut(h[:nul], []byte(" "))
	objSize, err := strconv.ParseInt(string(sizeText), 10, 64)
	if err != nil || objSize < 0 || sizeText[0] == '+' {
		return nil, corrupt("loose object %s: bad header", id)
	}
	switch string(typ) {
	case typeNames[want]:
	case "commit", "tree", "blob", "tag":
		return nil, fmt.Errorf("gitobj: object %s is a %s, not a %s", id, typ, typeNames[want])
	default:
		return nil, corrupt("loose object %s: bad header", id)
	}
	if objSize > maxSize {
		return nil, fmt.Errorf("gitobj: %s %s of %d bytes: %w", typ, id, objSize, ErrTooLarge)
	}
	if objSize > maxInflate(size) {
		return nil, corrupt("loose object %s: %d bytes in a file of %d", id, objSize, size)
	}
	head := h[nul+1 : n]
	if int64(len(head)) > objSize {
		return nil, corrupt("loose object %s: longer than its size", id)
	}
	dst, err = z.inflate(append(dst[:0], head...), nil, objSize-int64(len(head)))
	if err != nil {
		return nil, fmt.Errorf("gitobj: loose object %s: %w", id, err)
	}
	return dst, nil
}

// An inflater reads zlib data. It is kept in a pool, since a zlib reader
// takes some 40 KiB.
type inflater struct {
	br *bufio.Reader
	zr io.ReadCloser
}

var inflaters = sync.Pool{New: func() any { return new(inflater) }}

// reset makes z read the zlib stream in src.
func (z *inflater) reset(src io.Reader) error {
	if z.br == nil {
		z.br = bufio.NewReaderSize(src, 32<<10)
	} else {
		z.br.Reset(src)
	}
	if z.zr == nil {
		zr, err := zlib.NewReader(z.br)
		if err != nil {
			return err
		}
		z.zr = zr
		return nil
	}
	return z.zr.(zlib.Resetter).Reset(z.br, nil)
}

// inflate appends to dst the next size bytes of the stream, which must end
// there. If src is not nil, it first resets z to read src.
func (z *inflater) inflate(dst []byte, src io.Reader, size int64) ([]byte, error) {
	if src != nil {
		if err := z.reset(src); err != nil {
			return nil, corrupt("zlib data: %v", err)
		}
	}
	n := len(dst)
	dst = slices.Grow(dst, int(size))[:n+int(size)]
	if _, err := io.ReadFull(z.zr, dst[n:]); err != nil {
		return nil, corrupt("zlib data: shorter than its size: %v", err)
	}
	var one [1]byte
	switch _, err := io.ReadFull(z.zr, one[:]); err {
	case io.EOF:
		return dst, nil
	case nil:
		return nil, corrupt("zlib data: longer than its size")
	default:
		return nil, corrupt("zlib data: %v", err)
	}
}

// targetSize returns the size of the result of the delta in src, whose
// inflated size is size, reading only its start.
func (z *inflater) targetSize(src io.Reader, size int64) (uint64, error) {
	if err := z.reset(src); err != nil {
		return 0, corrupt("zlib data: %v", err)
	}
	var b [2 * 9]byte
	h := b[:min(int64(len(b)), size)]
	if _, err := io.ReadFull(z.zr, h); err != nil {
		return 0, corrupt("zlib data: %v", err)
	}
	_, h, ok := deltaSize(h)
	n, _, ok2 := deltaSize(h)
	if !ok || !ok2 {
		return 0, errDelta
	}
	return n, nil
}
