//go:build unix

package gitobj

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails the test if f does not return within a few seconds: a read
// must not block on a FIFO.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("blocked")
	}
}

// TestFIFO puts FIFOs in place of the files read: no read may wait for a
// writer.
func TestFIFO(t *testing.T) {
	dir := newGitDir(t)
	hello := BlobID([]byte("hello"))
	os.MkdirAll(filepath.Join(dir, "objects", loosePath(hello)[:2]), 0o755)
	for _, name := range []string{"index", "objects/" + loosePath(hello), "objects/pack/pack-1.idx", "objects/pack/pack-1.pack"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	within(t, func() {
		r, err := tryOpen(dir)
		if err != nil {
			t.Error(err)
			return
		}
		defer r.Close()
		if len(r.packs) != 0 {
			t.Errorf("%d packs", len(r.packs))
		}
		if _, err := r.ReadIndex(1 << 20); err == nil {
			t.Errorf("ReadIndex(FIFO): no error")
		}
		if r.Has(hello) {
			t.Errorf("Has(FIFO) = true")
		}
		if _, err := r.ReadBlob(hello, nil, 1<<20); err == nil {
			t.Errorf("ReadBlob(FIFO): no error")
		}
	})
	syscall.Mkfifo(filepath.Join(dir, "config"), 0o644)
	within(t, func() {
		if _, err := tryOpen(dir); err == nil {
			t.Errorf("Open with a FIFO for config: no error")
		}
	})
}

// TestIndexTruncatedWhileMapped truncates a pack index after Open has mapped
// it: the fault this causes must not crash the program.
func TestIndexTruncatedWhileMapped(t *testing.T) {
	objs := make([]testObj, 5000)
	for i := range objs {
		objs[i] = blobObj(strings.Repeat("x", i))
	}
	dir := newGitDir(t)
	name := writePack(t, dir, objs, false)
	r := openRepo(t, dir)
	if !r.Has(objs[4999].id) {
		t.Fatal("Has = false")
	}
	if err := os.Truncate(name+".idx", 0); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs[4000:] {
		if r.Has(o.id) {
			t.Fatal("Has = true after the index was truncated")
		}
		if _, err := r.ReadBlob(o.id, nil, 1<<20); err == nil {
			t.Fatal("ReadBlob succeeded after the index was truncated")
		}
	}
}
