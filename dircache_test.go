//go:build unix

package editguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// openDirCacheTest opens a workspace in dir whose listing cache keeps
// directories of any size, its clock shift ahead of the real one: an hour
// ahead, every directory looks older than the racy window.
func openDirCacheTest(t *testing.T, dir string, shift time.Duration) *Workspace {
	t.Helper()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	w.dirs.allSizes = true
	if shift != 0 {
		w.dirs.now = func() time.Time { return time.Now().Add(shift) }
	}
	return w
}

// makeDir makes the directory dir/name with n empty files f0000 ...
func makeDir(t *testing.T, dir, name string, n int) string {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func entryNames(des []fs.DirEntry) []string {
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// TestReadDirPageFromCache pages through a directory older than the racy
// window: after the first listing, each page is served from the cache and
// holds what ReadDir holds at its place; adding an entry stamps the
// directory anew, and the next page is read from the directory again and
// shows it, under another version.
func TestReadDirPageFromCache(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeDir(t, dir, "d", 50)
	w := openDirCacheTest(t, dir, time.Hour)
	all, err := w.ReadDir("d")
	if err != nil {
		t.Fatal(err)
	}
	var paged []string
	var version uint64
	for off := 0; off < 50; off += 7 {
		pg, err := w.ReadDirPage("d", off, 7)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Offset != off || pg.Total != 50 || len(pg.Entries) != min(7, 50-off) {
			t.Fatalf("page at %d: offset %d, total %d, %d entries", off, pg.Offset, pg.Total, len(pg.Entries))
		}
		if version != 0 && pg.Version != version {
			t.Fatalf("page at %d has version %x, the page before %x", off, pg.Version, version)
		}
		version = pg.Version
		paged = append(paged, entryNames(pg.Entries)...)
		if fi, err := pg.Entries[0].Info(); err != nil || fi.Name() != pg.Entries[0].Name() || !fi.Mode().IsRegular() {
			t.Fatalf("Info of %s: %v, %v", pg.Entries[0].Name(), fi, err)
		}
	}
	if !slices.Equal(paged, entryNames(all)) {
		t.Fatalf("pages hold %v, ReadDir %v", paged, entryNames(all))
	}
	if hits := w.dirs.hits.Load(); hits != 8 {
		t.Errorf("%d listings served from the cache, want the 8 pages after ReadDir", hits)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "f0003a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pg, err := w.ReadDirPage("d", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := entryNames(pg.Entries); pg.Total != 51 || got[4] != "f0003a" || pg.Version == version {
		t.Errorf("after an entry was added: total %d, entries %v, version changed %v", pg.Total, got, pg.Version != version)
	}
	if hits := w.dirs.hits.Load(); hits != 8 {
		t.Errorf("the changed directory was served from the cache (%d hits)", hits)
	}
	// Removing an entry, a subdirectory in its place: another version.
	os.Remove(filepath.Join(dir, "d", "f0003a"))
	if err := os.Mkdir(filepath.Join(dir, "d", "f0003a"), 0o755); err != nil {
		t.Fatal(err)
	}
	pg2, err := w.ReadDirPage("d", 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if pg2.Version == pg.Version || !pg2.Entries[0].IsDir() {
		t.Errorf("a file replaced by a directory: version changed %v, is dir %v", pg2.Version != pg.Version, pg2.Entries[0].IsDir())
	}
}

// TestReadDirRacyNotKept lists a directory whose mtime is within the racy
// window of the listing's start: the listing is not kept, since a change
// in the same timestamp tick would leave its stat as it was, so every
// listing reads the directory again and sees each change.
func TestReadDirRacyNotKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	makeDir(t, dir, "d", 20)
	w := openDirCacheTest(t, dir, 0) // the real clock: d was just written
	for i := range 5 {
		pg, err := w.ReadDirPage("d", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if pg.Total != 20+i {
			t.Fatalf("listing %d: %d entries, want %d", i, pg.Total, 20+i)
		}
		if err := os.WriteFile(filepath.Join(dir, "d", fmt.Sprintf("g%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if hits, kept := w.dirs.hits.Load(), w.dirs.order.Len(); hits != 0 || kept != 0 {
		t.Errorf("racy listings: %d served from the cache, %d kept; want none", hits, kept)
	}
	// The cache's rule alone: a stat within the window of the start is
	// refused, one older is kept.
	var c dirCache
	c.allSizes = true
	now := time.Now().UnixNano()
	c.put(now, &dirListing{stat: fileStat{ino: 1, mtimeNS: now - racyWindow/2, ctimeNS: now - time.Hour.Nanoseconds()}})
	c.put(now, &dirListing{stat: fileStat{ino: 2, mtimeNS: now - time.Hour.Nanoseconds(), ctimeNS: now - racyWindow/2}})
	c.put(now, &dirListing{stat: fileStat{ino: 3, mtimeNS: now - racyWindow - 1, ctimeNS: now - racyWindow - 1}})
	if c.get(fileStat{ino: 1, mtimeNS: now - racyWindow/2, ctimeNS: now - time.Hour.Nanoseconds()}) != nil ||
		c.get(fileStat{ino: 2, mtimeNS: now - time.Hour.Nanoseconds(), ctimeNS: now - racyWindow/2}) != nil {
		t.Error("a listing whose mtime or ctime is within the racy window was kept")
	}
	if c.get(fileStat{ino: 3, mtimeNS: now - racyWindow - 1, ctimeNS: now - racyWindow - 1}) == nil {
		t.Error("a listing older than the racy window was not kept")
	}
}

// TestDirCacheBound lists more directories than the cache's bytes hold:
// the bytes kept never pass the bound, the least recently used go first,
// a listing larger than the whole bound is not kept, and a small one is
// kept only with allSizes.
func TestDirCacheBound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 6 {
		makeDir(t, dir, fmt.Sprintf("d%d", i), 100)
	}
	makeDir(t, dir, "huge", 1000)
	w := openDirCacheTest(t, dir, time.Hour)
	// One listing of 100 five-byte names, and room for three of them.
	_, one, f, err := w.listing("d0")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if one.bytes < 100*(5+direntCost) {
		t.Fatalf("a listing of 100 entries accounts %d bytes", one.bytes)
	}
	w.dirs.mu.Lock()
	w.dirs.maxBytes = 3*one.bytes + one.bytes/2
	w.dirs.mu.Unlock()
	for i := range 6 {
		if _, err := w.ReadDir(fmt.Sprintf("d%d", i)); err != nil {
			t.Fatal(err)
		}
		w.dirs.mu.Lock()
		bytes, n := w.dirs.bytes, w.dirs.order.Len()
		w.dirs.mu.Unlock()
		if bytes > w.dirs.maxBytes || n > 3 {
			t.Fatalf("after %d listings the cache holds %d listings, %d bytes; bound %d", i+1, n, bytes, w.dirs.maxBytes)
		}
	}
	// d3, d4, d5 are kept; d0 went first.
	hits := w.dirs.hits.Load()
	for _, d := range []string{"d3", "d4", "d5"} {
		w.ReadDir(d)
	}
	if got := w.dirs.hits.Load() - hits; got != 3 {
		t.Errorf("%d of the 3 most recent listings served from the cache", got)
	}
	hits = w.dirs.hits.Load()
	w.ReadDir("d0")
	if w.dirs.hits.Load() != hits {
		t.Error("the least recently used listing was still kept")
	}
	// Larger than the whole bound: served, not kept, and nothing else
	// pushed out for it.
	w.dirs.mu.Lock()
	before := w.dirs.order.Len()
	w.dirs.mu.Unlock()
	if des, err := w.ReadDir("huge"); err != nil || len(des) != 1000 {
		t.Fatalf("ReadDir huge: %d entries, %v", len(des), err)
	}
	w.dirs.mu.Lock()
	after, bytes := w.dirs.order.Len(), w.dirs.bytes
	w.dirs.mu.Unlock()
	if after != before || bytes > w.dirs.maxBytes {
		t.Errorf("a listing over the bound: %d listings kept before, %d after, %d bytes", before, after, bytes)
	}
	// Without allSizes a directory under dirCacheMin entries is not kept.
	w2 := openDirCacheTest(t, dir, time.Hour)
	w2.dirs.allSizes = false
	w2.ReadDir("d1")
	w2.ReadDir("huge")
	if n := w2.dirs.order.Len(); n != 1 {
		t.Errorf("%d listings kept of a small and a large directory, want the large one", n)
	}
}
