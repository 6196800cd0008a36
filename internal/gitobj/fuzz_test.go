package gitobj

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadIndex reads index files, as given and with their checksum fixed,
// from a git directory. Whatever it reads, Lookup must find every entry.
func FuzzReadIndex(f *testing.F) {
	for _, index := range sampleIndexes(f) {
		f.Add(index)
	}
	dir := newGitDir(f)
	r := openRepo(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, rehash(bytes.Clone(data))} {
			if err := os.WriteFile(filepath.Join(dir, "index"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			ix, err := r.ReadIndex(1 << 20)
			if err != nil {
				continue
			}
			prev := ""
			for i, e := range ix.entries {
				path := ix.names[e.off:e.end]
				if i > 0 && path <= prev {
					t.Fatalf("entries out of order: %q after %q", path, prev)
				}
				if id, ok := ix.Lookup(path); !ok || id != e.id {
					t.Fatalf("Lookup(%q) = %v, %v; want %v", path, id, ok, e.id)
				}
				prev = path
			}
		}
	})
}

// FuzzApplyDelta applies deltas, and compares with a plain reading of the
// format.
func FuzzApplyDelta(f *testing.F) {
	base := []byte("0123456789abcdef")
	f.Add(base, makeDelta(16, 16, deltaCopy(0, 16)))
	f.Add(base, makeDelta(16, 7, deltaCopy(10, 4), []byte("\x03xyz")))
	f.Add(base, makeDelta(16, 20, []byte("\x04abcd"), deltaCopy(0, 16)))
	f.Add(base, makeDelta(16, 0x10000, []byte{0x80}))
	f.Add(base, makeDelta(16, 1, []byte{0}))
	f.Add(base, makeDelta(16, 2, deltaCopy(15, 2)))
	f.Add(base, makeDelta(15, 2, deltaCopy(0, 2)))
	f.Add([]byte{}, makeDelta(0, 3, []byte("\x03abc")))
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		const limit = 1 << 20
		got, err := applyDelta(nil, base, delta, limit)
		want, ok := plainDelta(base, delta, limit)
		if err != nil {
			if ok {
				t.Fatalf("applyDelta: %v; the plain reading gives %d bytes", err, len(want))
			}
			return
		}
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("applyDelta = %d bytes, the plain reading %d bytes, %v", len(got), len(want), ok)
		}
	})
}

// plainDelta applies delta to base as the format reads, without care for
// speed, up to limit bytes.
func plainDelta(base, delta []byte, limit int) ([]byte, bool) {
	size := func() (int, bool) {
		n := 0
		for shift := 0; shift < 63; shift += 7 {
			if len(delta) == 0 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			n |= int(c&0x7f) << shift
			if c < 0x80 {
				return n, n >= 0
			}
		}
		return 0, false
	}
	src, ok1 := size()
	dst, ok2 := size()
	if !ok1 || !ok2 || src != len(base) || dst > limit {
		return nil, false
	}
	var out []byte
	for len(delta) > 0 {
		c := delta[0]
		delta = delta[1:]
		switch {
		case c >= 0x80:
			var args [7]int
			for i := range args {
				if c&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, false
					}
					args[i] = int(delta[0])
					delta = delta[1:]
				}
			}
			off := args[0] | args[1]<<8 | args[2]<<16 | args[3]<<24
			n := args[4] | args[5]<<8 | args[6]<<16
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) {
				return nil, false
			}
			out = append(out, base[off:off+n]...)
		case c > 0:
			if int(c) > len(delta) {
				return nil, false
			}
			out = append(out, delta[:c]...)
			delta = delta[c:]
		default:
			return nil, false
		}
		if len(out) > dst {
			return nil, false
		}
	}
	return out, len(out) == dst
}

// FuzzReadLoose reads loose object files, as given and compressed. Only the
// blob "hello" may read.
func FuzzReadLoose(f *testing.F) {
	f.Add([]byte("blob 5\x00hello"))
	f.Add(zlibBytes([]byte("blob 5\x00hello")))
	f.Add([]byte("blob 4\x00hello"))
	f.Add([]byte("commit 5\x00hello"))
	f.Add([]byte("blob 99999999999999\x00hello"))
	dir := newGitDir(f)
	id := BlobID([]byte("hello"))
	path := filepath.Join(dir, "objects", filepath.FromSlash(loosePath(id)))
	os.MkdirAll(filepath.Dir(path), 0o755)
	r := openRepo(f, dir)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, b := range [][]byte{data, zlibBytes(data)} {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := r.ReadBlob(id, nil, 1<<16); err == nil && string(got) != "hello" {
				t.Fatalf("ReadBlob = %q", got)
			}
		}
	})
}

// FuzzPackEntry reads a pack entry that follows the blob "0123456789", under
// the id of the blob "hello": only that may read.
func FuzzPackEntry(f *testing.F) {
	base := blobObj("0123456789")
	hello := BlobID([]byte("hello"))
	baseLen := len(packEntry(base, 0))
	f.Add(packEntry(blobObj("hello"), 0))
	f.Add(packEntry(testObj{typ: objOfsDelta, data: makeDelta(10, 5, []byte("\x05hello"))}, baseLen))
	f.Add(packEntry(testObj{typ: objRefDelta, ref: base.id, data: makeDelta(10, 5, []byte("\x05hello"))}, 0))
	f.Add(packEntry(testObj{typ: objOfsDelta, data: makeDelta(10, 5, deltaCopy(0, 5))}, baseLen))
	f.Add(packEntry(testObj{typ: objRefDelta, ref: hello, data: makeDelta(5, 5, deltaCopy(0, 5))}, 0))
	f.Fuzz(func(t *testing.T, entry []byte) {
		dir := newGitDir(t)
		writePack(t, dir, []testObj{base, {id: hello, entry: entry}}, false)
		r := openRepo(t, dir)
		if got, err := r.ReadBlob(hello, nil, 1<<16); err == nil && string(got) != "hello" {
			t.Fatalf("ReadBlob = %q", got)
		}
	})
}

func TestApplyDelta(t *testing.T) {
	base := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	for _, tc := range []struct {
		delta []byte
		want  []byte
	}{
		{makeDelta(80000, 0x10001, deltaCopy(1, 0x10000), deltaCopy(0x10000, 1)), append(bytes.Clone(base[1:0x10001]), base[0x10000])},
		{makeDelta(80000, 0x10000, []byte{0x80}), base[:0x10000]},
		{makeDelta(80000, 0x123456-0x100000, deltaCopy(0x100, 0x23456)), nil},
		{makeDelta(80000, 3, []byte("\x03abc")), []byte("abc")},
		{makeDelta(80000, 0), []byte{}},
	} {
		got, err := applyDelta([]byte("junk"), base, tc.delta, 1<<20)
		if tc.want == nil {
			if err == nil {
				t.Errorf("applyDelta(%x): no error", tc.delta)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("applyDelta(%x) = %d bytes, %v", tc.delta, len(got), err)
		}
	}
	if _, err := applyDelta(nil, base, makeDelta(80000, 11, []byte("\x0bhello world")), 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("result over the limit: %v, want ErrTooLarge", err)
	}
}
