//go:build unix

package editguard

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// plainText reports whether a full pass takes data as plain UTF-8.
func plainText(data []byte) bool {
	head := data[:min(len(data), 8<<10)]
	return utf8.Valid(data) && !bytes.HasPrefix(head, []byte{0xFF, 0xFE}) &&
		!bytes.HasPrefix(head, []byte{0xFE, 0xFF}) && bytes.IndexByte(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), 0) < 0
}

// TestScanLinesMatchesFullPass: what the newline scan learns of a file is
// what a full pass learns of it, the hash aside: lines, line ending, BOM
// and every noted line start.
func TestScanLinesMatchesFullPass(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	for i := range 60 {
		data := randomText(rng)
		if i%5 == 0 {
			// Large enough for several scan blocks and a wider index step.
			data = bytes.Repeat(data, 1+(3<<20)/max(len(data), 1))
		}
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := statOf(f)
		if err != nil {
			t.Fatal(err)
		}
		e, serr := scanLines(cacheCtx, f, st)
		ix := &lineIndex{}
		sr, ferr := streamIndexed(bytes.NewReader(data), 1<<40, 1, readCaps{}, int64(len(data)), ix)
		f.Close()
		if ferr == errNotPlainText && !plainText(data) {
			if serr != nil && serr != errNotPlainText {
				t.Fatalf("file %d: scan failed with %v", i, serr)
			}
			continue // the pass finds it; the scan may not
		}
		if serr != nil || ferr != nil {
			t.Fatalf("file %d: scan %v, pass %v", i, serr, ferr)
		}
		if e.total != sr.total || e.lineEnding != sr.lineEnding || e.bom != sr.bom || !samePoints(e.points, ix.points) {
			t.Fatalf("file %d (%d bytes): scan total %d %s bom %v, %d points; pass total %d %s bom %v, %d points",
				i, len(data), e.total, e.lineEnding, e.bom, len(e.points), sr.total, sr.lineEnding, sr.bom, len(ix.points))
		}
	}
}

// openPendingTest opens a workspace in dir whose reads of files of any
// size are served before the hash, and whose files all look older than
// the racy window.
func openPendingTest(t testing.TB, dir string) *Workspace {
	t.Helper()
	w := openCacheTest(t, dir, time.Hour)
	w.passes.minSize = 1
	return w
}

// TestReadPendingMatchesFullPass reads random pages of random plain files
// through a workspace that serves them before the hash and through one
// that hashes first: the results are the same but for the hash, which the
// first says is pending, and the baselines are the same once settled.
func TestReadPendingMatchesFullPass(t *testing.T) {
	dir := t.TempDir()
	wp := openPendingTest(t, dir)
	wf := openCacheTest(t, dir, -time.Hour)
	rng := rand.New(rand.NewSource(11))
	pending := 0
	for i := range 16 {
		data := randomText(rng)
		if !plainText(data) || len(data) == 0 {
			continue
		}
		// Over seenFileMax: a smaller file is hashed as it is read, its
		// bytes kept for the session.
		data = bytes.Repeat(data, 1+(seenFileMax+1)/len(data))
		name := fmt.Sprintf("f%d.txt", i)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		sp, sf := wp.NewSession("p"), wf.NewSession("f")
		lines := bytes.Count(data, []byte{'\n'}) + 1
		for j := range 6 {
			o := randomReadOptions(rng, lines)
			got, gerr := sp.Read(cacheCtx, name, &o)
			want, werr := sf.Read(cacheCtx, name, &o)
			if got != nil && got.SHA256Pending {
				pending++
				if got.SHA256 != "" {
					t.Fatalf("file %d read %d: a pending read shows sha256 %s", i, j, got.SHA256)
				}
				got.SHA256, got.SHA256Pending = want.SHA256, false
			}
			sameRead(t, fmt.Sprintf("file %d read %d %+v", i, j, o), got, want, gerr, werr, sp, sf, name)
		}
	}
	if pending == 0 {
		t.Fatal("no read was served before its hash")
	}
}

// pendingFile writes a plain text file of about size bytes to dir/name
// and returns its bytes.
func pendingFile(t *testing.T, dir, name string, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %d of a file read before it is hashed\n", i+1)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// holdPasses makes every pass of w stop after its first block until
// release is closed; started receives each pass as it stops.
func holdPasses(w *Workspace) (started chan *hashPass, release chan struct{}) {
	started, release = make(chan *hashPass, 4), make(chan struct{})
	w.passes.during = func(p *hashPass) {
		started <- p
		<-release
	}
	return started, release
}

func wantCode(t *testing.T, err error, code Code, reason string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != code || reason != "" && e.Details["reason"] != reason {
		t.Fatalf("got %v, want %s (%s)", err, code, reason)
	}
}

// TestReadPendingEditWaitsForHash: an edit that follows a page served
// before the hash waits for the hash, then goes through, checked against
// it.
func TestReadPendingEditWaitsForHash(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	data := pendingFile(t, dir, "big.txt", 1200<<10)
	started, release := holdPasses(w)
	waiting := make(chan struct{}, 1)
	w.passes.waiting = func(*hashPass) { waiting <- struct{}{} }
	s := w.NewSession("s")
	res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 10000, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !res.SHA256Pending || res.SHA256 != "" || !strings.HasPrefix(res.Content, "line 10000 of") || res.TotalLines != bytes.Count(data, []byte{'\n'}) {
		t.Fatalf("read: %+v", res)
	}
	<-started
	done := make(chan error, 1)
	go func() {
		_, err := s.Edit(cacheCtx, "big.txt", []Edit{{OldString: "line 10001 of", NewString: "LINE 10001 of"}}, nil)
		done <- err
	}()
	<-waiting // the edit waits for the pass, which is held
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("edit after the hash: %v", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Replace(data, []byte("line 10001 of"), []byte("LINE 10001 of"), 1); !bytes.Equal(got, want) {
		t.Fatal("the file is not the edit of what was read")
	}
}

// TestReadPendingChangeDuringHash: a file changed in place while its
// hash is computed, its size and mtime kept, leaves no baseline: the
// edit is refused as a read that was not confirmed, not checked against
// a hash of the changed file.
func TestReadPendingChangeDuringHash(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	data := pendingFile(t, dir, "big.txt", 1200<<10)
	p := filepath.Join(dir, "big.txt")
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	started, release := holdPasses(w)
	s := w.NewSession("s")
	res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3})
	if err != nil || !res.SHA256Pending {
		t.Fatalf("read: %+v, %v", res, err)
	}
	<-started
	// Past the pass's first block, and past the page shown: the pass
	// hashes the changed bytes.
	writeInPlace(t, p, int64(len(data)-100), []byte("CHANGED"), st.ModTime())
	close(release)
	_, err = s.Edit(cacheCtx, "big.txt", []Edit{{OldString: "line 2 of", NewString: "LINE 2 of"}}, nil)
	wantCode(t, err, CodeNotRead, "read_unconfirmed")
	// A new read of the file as it is now lets the edit through.
	if _, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(cacheCtx, "big.txt", []Edit{{OldString: "line 2 of", NewString: "LINE 2 of"}}, nil); err != nil {
		t.Fatalf("edit after a new read: %v", err)
	}
}

// TestReadPendingTruncatedDuringHash: a file truncated while its hash is
// computed leaves no baseline.
func TestReadPendingTruncatedDuringHash(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	pendingFile(t, dir, "big.txt", 1200<<10)
	started, release := holdPasses(w)
	s := w.NewSession("s")
	if res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 2000, Limit: 3}); err != nil || !res.SHA256Pending {
		t.Fatalf("read: %+v, %v", res, err)
	}
	<-started
	if err := os.Truncate(filepath.Join(dir, "big.txt"), 1100<<10); err != nil {
		t.Fatal(err)
	}
	close(release)
	_, err := s.Edit(cacheCtx, "big.txt", []Edit{{OldString: "line 2 of", NewString: "LINE 2 of"}}, nil)
	wantCode(t, err, CodeNotRead, "read_unconfirmed")
}

// TestReadPendingJoinsPass: a second page read while the hash runs is
// served from the same scan and waits on the same pass; once the hash is
// known, reads take it from the read cache.
func TestReadPendingJoinsPass(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	pendingFile(t, dir, "big.txt", 1200<<10)
	started, release := holdPasses(w)
	s, s2 := w.NewSession("s"), w.NewSession("s2")
	if res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3}); err != nil || !res.SHA256Pending {
		t.Fatalf("read: %+v, %v", res, err)
	}
	first := <-started
	res, err := s2.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 5000, Limit: 3})
	if err != nil || !res.SHA256Pending || !strings.HasPrefix(res.Content, "line 5000 of") {
		t.Fatalf("second read: %+v, %v", res, err)
	}
	if b, _ := s2.baselineNow("big.txt"); b.pending != first {
		t.Fatal("the second read does not wait on the running pass")
	}
	close(release)
	b, ok := s2.baseline("big.txt")
	if !ok || b.SHA256 == "" || b.Unconfirmed != "" || b.pending != nil {
		t.Fatalf("settled baseline: %+v", b)
	}
	res, err = s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 7000, Limit: 3})
	if err != nil || res.SHA256Pending || res.SHA256 != b.SHA256 {
		t.Fatalf("read after the hash: %+v, %v", res, err)
	}
}

// TestReadPendingClose: closing the workspace stops a running pass; the
// read it served stays unconfirmed.
func TestReadPendingClose(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	pendingFile(t, dir, "big.txt", 1200<<10)
	started := make(chan *hashPass, 1)
	w.passes.during = func(p *hashPass) {
		started <- p
		<-w.passes.ctx.Done() // held until Close cancels the passes
	}
	s := w.NewSession("s")
	if res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3}); err != nil || !res.SHA256Pending {
		t.Fatalf("read: %+v, %v", res, err)
	}
	p := <-started
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !p.finished() || p.sum != "" || w.passes.running != 0 {
		t.Fatalf("after Close: finished %v, sum %q, running %d", p.finished(), p.sum, w.passes.running)
	}
	if b, ok := s.baseline("big.txt"); !ok || b.Unconfirmed == "" {
		t.Fatalf("baseline after Close: %+v", b)
	}
}

// TestReadPendingNotPlain: a file whose invalid UTF-8 lies beyond the
// page is found by the pass: the read is not confirmed, and the next read
// decodes the file whole, as a read of a file that is not plain UTF-8
// always did.
func TestReadPendingNotPlain(t *testing.T) {
	dir := t.TempDir()
	w := openPendingTest(t, dir)
	data := pendingFile(t, dir, "big.txt", 1200<<10)
	data = append(data, "caf\xe9\n"...) // Latin-1
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	s := w.NewSession("s")
	res, err := s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3})
	if err != nil || !res.SHA256Pending {
		t.Fatalf("read: %+v, %v", res, err)
	}
	_, err = s.Edit(cacheCtx, "big.txt", []Edit{{OldString: "line 2 of", NewString: "LINE 2 of"}}, nil)
	wantCode(t, err, CodeNotRead, "read_unconfirmed")
	// What a read that hashes first answers: the file does not decode.
	_, err = s.Read(cacheCtx, "big.txt", &ReadOptions{Offset: 1, Limit: 3})
	wantCode(t, err, CodeEncoding, "")
}
