//go:build unix

package editguard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var cacheCtx = context.Background()

// openCacheTest opens a workspace in dir whose read cache's clock runs
// shift ahead of the real one: an hour ahead trusts every pass (every file
// looks older than the racy window), an hour behind none.
func openCacheTest(t testing.TB, dir string, shift time.Duration) *Workspace {
	t.Helper()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if shift != 0 {
		w.reads.now = func() time.Time { return time.Now().Add(shift) }
	}
	return w
}

// randomText returns a file's bytes of one of the kinds reads meet: LF,
// CRLF or mixed endings (lone CRs too), with or without a BOM and a final
// line ending, short lines, lines over any line cap, over the read
// buffer, and runes of every width; empty; rarely not plain UTF-8.
func randomText(rng *rand.Rand) []byte {
	var b bytes.Buffer
	if rng.Intn(4) == 0 {
		b.WriteString("\xEF\xBB\xBF")
	}
	switch rng.Intn(30) {
	case 0:
		return b.Bytes() // empty, or a BOM alone
	case 1:
		b.WriteString("text\x00with a NUL\n")
	case 2:
		b.WriteString("bad \xff byte\n")
	case 3:
		return append([]byte{0xFF, 0xFE}, "u\x00t\x00f\x00\n\x00"...)
	}
	ending := rng.Intn(3) // LF, CRLF, mixed
	lines := []int{3, 40, 800, 4000, 12000, 30000}[rng.Intn(6)]
	huge := map[int]bool{rng.Intn(lines): rng.Intn(3) == 0, rng.Intn(lines): rng.Intn(3) == 0}
	runes := []string{"a", "b", "é", "中文", "😀", " ", "\t", "x", "y", "z"}
	for l := range lines {
		n := rng.Intn(60)
		if rng.Intn(200) == 0 {
			n = 1500 + rng.Intn(1500) // over a 2,000-byte line cap, sometimes
		}
		if huge[l] {
			n = 70000 + rng.Intn(70000) // over the read buffer
		}
		for i := 0; i < n; {
			r := runes[rng.Intn(len(runes))]
			if ending == 2 && rng.Intn(400) == 0 {
				r = "\r" // a CR inside a line
			}
			b.WriteString(r)
			i += len(r)
		}
		switch {
		case ending == 1 || ending == 2 && rng.Intn(3) == 0:
			b.WriteString("\r\n")
		default:
			b.WriteString("\n")
		}
	}
	if rng.Intn(3) == 0 {
		// No final line ending; sometimes a CR at the very end.
		data := bytes.TrimRight(b.Bytes(), "\r\n")
		if rng.Intn(4) == 0 {
			data = append(data, '\r')
		}
		return data
	}
	return b.Bytes()
}

// randomReadOptions picks a page of a file of about lines lines: any
// offset (past the end too), limit and caps.
func randomReadOptions(rng *rand.Rand, lines int) ReadOptions {
	var o ReadOptions
	if rng.Intn(3) > 0 {
		o.Offset = 1 + rng.Intn(lines+2)
	}
	switch rng.Intn(3) {
	case 1:
		o.Limit = 1 + rng.Intn(50)
	case 2:
		o.Limit = 1 + rng.Intn(3000)
	}
	o.MaxBytes = []int{0, 24000, 256 << 10, 1 + rng.Intn(5000)}[rng.Intn(4)]
	o.MaxLineBytes = []int{0, 2000, 1 + rng.Intn(200)}[rng.Intn(3)]
	o.LineCost = []int{0, 7}[rng.Intn(2)]
	return o
}

// sameRead fails t unless two reads of name gave the same result (every
// field) or the same error, and recorded the same baseline.
func sameRead(t *testing.T, what string, got, want *ReadResult, gerr, werr error, gs, ws *Session, name string) {
	t.Helper()
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s: error %v, want %v", what, gerr, werr)
	}
	var ge, we *Error
	if errors.As(gerr, &ge) != errors.As(werr, &we) || ge != nil && !reflect.DeepEqual(ge.Details, we.Details) {
		t.Fatalf("%s: error %#v, want %#v", what, gerr, werr)
	}
	if !reflect.DeepEqual(got, want) {
		if got != nil && want != nil {
			g, w := *got, *want
			g.Content, w.Content = fmt.Sprintf("%d bytes %.60q", len(g.Content), g.Content), fmt.Sprintf("%d bytes %.60q", len(w.Content), w.Content)
			t.Fatalf("%s:\n got %+v\nwant %+v\ncontent equal: %v", what, g, w, got.Content == want.Content)
		}
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
	gb, gok := gs.baseline(name)
	wb, wok := ws.baseline(name)
	gb.CapturedAt, wb.CapturedAt = time.Time{}, time.Time{}
	if gok != wok || gb != wb {
		t.Fatalf("%s: baseline %+v (%v), want %+v (%v)", what, gb, gok, wb, wok)
	}
}

// TestReadCacheMatchesFullPass reads random pages of random files through
// a workspace whose read cache trusts every pass and through one whose
// cache trusts none: every field of every result, every error and every
// baseline must be the same.
func TestReadCacheMatchesFullPass(t *testing.T) {
	dir := t.TempDir()
	cached := openCacheTest(t, dir, time.Hour)
	cached.reads.allSizes = true
	plain := openCacheTest(t, dir, -time.Hour)
	// Two sessions: the second meets entries the first put, for files
	// whose bytes it does not hold yet.
	// Each session of the one is compared with its twin in the other.
	cs := []*Session{cached.NewSession("a"), cached.NewSession("b")}
	ps := []*Session{plain.NewSession("a"), plain.NewSession("b")}
	rng := rand.New(rand.NewSource(1))
	files := 50
	if testing.Short() {
		files = 20
	}
	for i := range files {
		data := randomText(rng)
		name := fmt.Sprintf("f%03d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for j := range 25 {
			o := randomReadOptions(rng, lines)
			k := rng.Intn(len(cs))
			want, werr := ps[k].Read(cacheCtx, name, &o)
			got, gerr := cs[k].Read(cacheCtx, name, &o)
			sameRead(t, fmt.Sprintf("%s (%d bytes) read %d %+v", name, len(data), j, o), got, want, gerr, werr, cs[k], ps[k], name)
		}
		// Page through it as an agent does, with read_file's caps.
		o := ReadOptions{MaxBytes: max(24000, len(data)/20), MaxLineBytes: 2000, LineCost: 7}
		for page := 0; ; page++ {
			want, werr := ps[0].Read(cacheCtx, name, &o)
			got, gerr := cs[0].Read(cacheCtx, name, &o)
			sameRead(t, fmt.Sprintf("%s (%d bytes) page %d %+v", name, len(data), page, o), got, want, gerr, werr, cs[0], ps[0], name)
			if werr != nil || want.NextOffset == 0 {
				break
			}
			o.Offset = want.NextOffset
		}
	}
	if n := cached.reads.hits.Load(); n < int64(files)*10 {
		t.Fatalf("the cache served %d reads", n)
	}
	if n := plain.reads.hits.Load() + int64(plain.reads.order.Len()); n != 0 {
		t.Fatalf("the cache that trusts no pass kept or served %d", n)
	}
}

// writeInPlace overwrites len(b) bytes of the file at p at off, keeping
// its inode and size, then sets its mtime back to mtime.
func writeInPlace(t *testing.T, p string, off int64, b []byte, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestReadCacheChangeKeepingSizeAndMtime changes a file in place, keeping
// its size, and sets its mtime back: only its ctime tells. A read must
// see the change, both when the cache trusts the pass that learned the
// file (the file is older than the racy window: the ctime decides) and
// when the file is within the racy window (as a file just written is).
func TestReadCacheChangeKeepingSizeAndMtime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shift time.Duration
	}{{"trusted", time.Hour}, {"racy", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w := openCacheTest(t, dir, tc.shift)
			s := w.NewSession("a")
			var b strings.Builder
			for i := range 20000 {
				fmt.Fprintf(&b, "line %05d of the file\n", i)
			}
			data := []byte(b.String())
			p := filepath.Join(dir, "f.txt")
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			o := &ReadOptions{Offset: 15000, Limit: 3}
			for range 2 {
				res, err := s.Read(cacheCtx, "f.txt", o)
				if err != nil || res.SHA256 != sha256Of(data) {
					t.Fatalf("read: %v, %+v", err, res)
				}
			}
			if hits := w.reads.hits.Load(); (tc.shift != 0) != (hits == 1) {
				t.Fatalf("%d reads served from the cache", hits)
			}
			time.Sleep(50 * time.Millisecond) // a later tick of the file system's clock
			off := int64(strings.Index(b.String(), "line 15000"))
			copy(data[off:], "LINE")
			writeInPlace(t, p, off, []byte("LINE"), fi.ModTime())
			if fi2, err := os.Stat(p); err != nil || fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) {
				t.Fatalf("stat after the change: %v, %v", fi2, err)
			}
			res, err := s.Read(cacheCtx, "f.txt", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.SHA256 != sha256Of(data) || !strings.Contains(res.Content, "\nLINE 15000 ") {
				t.Fatalf("read after the change: sha256 %s (want %s), content %q", res.SHA256, sha256Of(data), res.Content)
			}
		})
	}
}

// poisonReadCache replaces the SHA-256 of every entry of w's read cache:
// what a pass over a file changed within its timestamps' granularity would
// have learned, under a stat that cannot tell.
func poisonReadCache(w *Workspace) {
	w.reads.mu.Lock()
	defer w.reads.mu.Unlock()
	for el := w.reads.order.Front(); el != nil; el = el.Next() {
		e := *el.Value.(*readEntry)
		e.sum = strings.Repeat("0", 64)
		el.Value = &e
	}
}

// TestReadCacheRacyPassNotTrusted: a pass over a file whose mtime or ctime
// is within the racy window of the pass's start may have read bytes its
// stat cannot tell from later ones. What it learned must never serve a
// read, not even once the clock has moved on. A trusted pass does serve
// them, which shows that what the test poisons would be seen.
func TestReadCacheRacyPassNotTrusted(t *testing.T) {
	dir := t.TempDir()
	w := openCacheTest(t, dir, 0)
	s := w.NewSession("a")
	// Over seenFileMax: the session keeps no bytes of it, so a read may
	// be served without them (see readCached).
	data := []byte(strings.Repeat("a line of the file\n", 80000))
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// An hour-old mtime: only the ctime, which this sets, is racy.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f.txt"), old, old); err != nil {
		t.Fatal(err)
	}
	o := &ReadOptions{Offset: 5000, Limit: 10}
	read := func() string {
		t.Helper()
		res, err := s.Read(cacheCtx, "f.txt", o)
		if err != nil {
			t.Fatal(err)
		}
		return res.SHA256
	}
	want := sha256Of(data)
	read() // within the racy window: the file's ctime was just set
	poisonReadCache(w)
	if got := read(); got != want {
		t.Fatalf("racy pass served a read: sha256 %s", got)
	}
	poisonReadCache(w)
	w.reads.now = func() time.Time { return time.Now().Add(time.Hour) }
	if got := read(); got != want {
		t.Fatalf("racy pass served a read once old: sha256 %s", got)
	}
	// That read's pass was trusted: a read is served from it.
	poisonReadCache(w)
	if got := read(); got == want {
		t.Fatal("a trusted pass served no read")
	}
	// And a change against the stale SHA-256 it reported is refused.
	_, err := s.Edit(cacheCtx, "f.txt", []Edit{{OldString: "a line of the file\n", NewString: "x\n", ReplaceAll: true}}, nil)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeStaleFile {
		t.Fatalf("edit after a stale read: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); !bytes.Equal(got, data) {
		t.Fatal("the file changed")
	}
	// An mtime within the window (here, ahead of the clock) is racy
	// too, however old the ctime.
	if err := os.Chtimes(filepath.Join(dir, "f.txt"), time.Now(), time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	read()
	poisonReadCache(w)
	if got := read(); got != want {
		t.Fatalf("a pass over a file with a racy mtime served a read: sha256 %s", got)
	}
}

// TestReadCacheSessionKeepsBytes: a read of a file small enough for a
// session to keep its bytes (seenFileMax) keeps them, as without the
// cache, even when another session's pass taught the cache the file.
func TestReadCacheSessionKeepsBytes(t *testing.T) {
	dir := t.TempDir()
	w := openCacheTest(t, dir, time.Hour)
	data := []byte(strings.Repeat("a line of the file\n", 10000))
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	o := &ReadOptions{Offset: 100, Limit: 10}
	if _, err := w.NewSession("a").Read(cacheCtx, "f.txt", o); err != nil {
		t.Fatal(err)
	}
	persistent, err := w.OpenSession("p")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Session{w.NewSession("b"), persistent} {
		for range 2 {
			if _, err := s.Read(cacheCtx, "f.txt", o); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok := s.recall(sha256Of(data)); !ok || !bytes.Equal(got, data) {
			t.Fatalf("session %s keeps no bytes of the file it read", s.name)
		}
	}
	if w.reads.hits.Load() != 2 {
		t.Fatalf("%d reads served from the cache, want 2", w.reads.hits.Load())
	}
}

// TestReadCacheConcurrent reads random pages of more files than the cache
// keeps from several goroutines, each with its own session: every result
// must be the one a read without the cache gives, and the cache keeps
// within its bound.
func TestReadCacheConcurrent(t *testing.T) {
	dir := t.TempDir()
	cached := openCacheTest(t, dir, time.Hour)
	cached.reads.allSizes = true
	plain := openCacheTest(t, dir, -time.Hour)
	ps := plain.NewSession("p")
	rng := rand.New(rand.NewSource(2))
	type page struct {
		name string
		o    ReadOptions
		res  *ReadResult
	}
	var pages []page
	for i := range readCacheFiles + 16 {
		var b strings.Builder
		for j := range 200 + rng.Intn(3000) {
			fmt.Fprintf(&b, "file %d line %d %s\n", i, j, strings.Repeat("é", rng.Intn(40)))
		}
		name := fmt.Sprintf("f%03d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			o := randomReadOptions(rng, 3000)
			o.Offset = min(o.Offset, 200)
			res, err := ps.Read(cacheCtx, name, &o)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, page{name, o, res})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := cached.NewSession(fmt.Sprint(g))
			rng := rand.New(rand.NewSource(int64(g)))
			for range 600 {
				p := pages[rng.Intn(len(pages))]
				res, err := s.Read(cacheCtx, p.name, &p.o)
				if err != nil || !reflect.DeepEqual(res, p.res) {
					errs <- fmt.Errorf("%s %+v: %v, %+v, want %+v", p.name, p.o, err, res, p.res)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cached.reads.mu.Lock()
	n, m := cached.reads.order.Len(), len(cached.reads.byID)
	cached.reads.mu.Unlock()
	if n != m || n > readCacheFiles {
		t.Fatalf("the cache holds %d entries (%d named)", n, m)
	}
	if cached.reads.hits.Load() == 0 {
		t.Fatal("the cache served no read")
	}
}
