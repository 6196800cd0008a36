//go:build unix

package editguard_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/testutil"
	"github.com/editguard/editguard/toolset"
)

// bigReadResult is what the bigread worker reports.
type bigReadResult struct {
	ContentBytes int   `json:"content_bytes"`
	Truncated    bool  `json:"truncated"`
	LinesCut     bool  `json:"lines_cut"`
	SizeBytes    int64 `json:"size_bytes"`
	MaxRSSKiB    int64 `json:"max_rss_kib"`
}

// bigReadWorker reads the file arg (big.txt by default) through read_file
// with offset 1 and limit 1 and reports the reply's size and the process's
// peak memory.
func bigReadWorker(dir, arg string) (*bigReadResult, error) {
	if arg == "" {
		arg = "big.txt"
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	ts := toolset.New(w.NewSession("big"), nil)
	args, _ := json.Marshal(map[string]any{"path": arg, "offset": 1, "limit": 1})
	out, err := ts.Execute(ctx, "read_file", args)
	if err != nil {
		return nil, err
	}
	res := out.Structured.(*editguard.ReadResult)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return &bigReadResult{ContentBytes: len(res.Content), Truncated: res.Truncated, LinesCut: res.LinesCut,
		SizeBytes: res.SizeBytes, MaxRSSKiB: testutil.MaxRSSKiB(&ru)}, nil
}

// TestReadHugeLineBoundedMemory reads one line of a file that is a single
// 512 MiB line, in a separate process, and checks that the reply is cut to
// read_file's caps and that the process's peak memory exceeds that of the
// same read of a one-line file, measured in the same run, by far less than
// the line's size.
func TestReadHugeLineBoundedMemory(t *testing.T) {
	const size = 512 << 20
	if testing.Short() {
		t.Skip("writes a 512 MiB file")
	}
	w, dir := newWorkspace(t)
	w.Close()
	f, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range size >> 20 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	writeFile(t, dir, "small.txt", "one line\n")
	read := func(name string) bigReadResult {
		out := filepath.Join(t.TempDir(), "out")
		var r bigReadResult
		waitWorker(t, startWorker(t, "bigread", dir, name, out), out, &r)
		return r
	}
	base := read("small.txt")
	r := read("big.txt")
	t.Logf("read_file of one %d MiB line: %d bytes returned, peak RSS %d MiB (%d MiB for a one-line file)", size>>20, r.ContentBytes, r.MaxRSSKiB>>10, base.MaxRSSKiB>>10)
	if r.ContentBytes > toolset.MaxLineBytes+100 || !r.LinesCut || !r.Truncated {
		t.Errorf("reply = %+v, want at most %d bytes, the line cut, truncated", r, toolset.MaxLineBytes)
	}
	if r.SizeBytes != size {
		t.Errorf("size_bytes = %d, want %d", r.SizeBytes, size)
	}
	if grew := r.MaxRSSKiB - base.MaxRSSKiB; grew > 32<<10 {
		t.Errorf("peak RSS grew by %d MiB over a one-line read, want under 32 MiB for a %d MiB line", grew>>10, size>>20)
	}
}

// TestReadCaps checks the caps in the library: a long line is cut with a
// marker, the byte cap stops before a line and says where to go on, and a
// read that returned less than the file records a partial baseline.
func TestReadCaps(t *testing.T) {
	w, dir := newWorkspace(t)
	long := strings.Repeat("é", 3000) // 6000 bytes
	writeFile(t, dir, "a.txt", "short\n"+long+"\nafter\n"+strings.Repeat("x\n", 100))
	s := w.NewSession("s")
	r, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{MaxLineBytes: 1001, MaxBytes: 1040})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(r.Content, "\n")
	if lines[0] != "short" || !strings.HasPrefix(lines[1], strings.Repeat("é", 500)+"… [line cut: 6000 bytes, 1000 shown]") {
		t.Fatalf("content = %.80q..., want the long line cut at a character boundary with a marker", r.Content)
	}
	if !r.LinesCut || !r.Truncated || r.NextOffset != 3 {
		t.Errorf("LinesCut %v, Truncated %v, NextOffset %d; want true, true, 3", r.LinesCut, r.Truncated, r.NextOffset)
	}
	if _, err := s.Write(ctx, "a.txt", "whole\n", nil); !editguard.IsConflict(err) {
		t.Errorf("whole-file Write after a capped read = %v, want NOT_READ (partial)", err)
	}
	r2, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Offset: r.NextOffset, Limit: 1})
	if err != nil || r2.Content != "after\n" {
		t.Fatalf("Read(offset %d) = %q, %v", r.NextOffset, r2.Content, err)
	}
	full, err := s.Read(ctx, "a.txt", nil)
	if err != nil || full.Truncated || full.LinesCut || full.BOM {
		t.Fatalf("full Read = %+v, %v; want whole", full, err)
	}
	writeFile(t, dir, "bom.txt", "\ufeffx\n")
	if r, err := s.Read(ctx, "bom.txt", nil); err != nil || !r.BOM || r.Content != "x\n" {
		t.Fatalf("Read(bom.txt) = %+v, %v; want bom true", r, err)
	}
}

// TestReadMetadataMatchesContent reads a file that another goroutine keeps
// replacing with contents of two sizes: size_bytes and sha256 must always
// describe the bytes returned.
func TestReadMetadataMatchesContent(t *testing.T) {
	w, dir := newWorkspace(t)
	a, b := strings.Repeat("a\n", 5000), strings.Repeat("bb\n", 9000)
	writeFile(t, dir, "f.txt", a)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := a
			if i%2 == 1 {
				c = b
			}
			tmp := filepath.Join(dir, "f.tmp")
			os.WriteFile(tmp, []byte(c), 0o644)
			os.Rename(tmp, filepath.Join(dir, "f.txt"))
		}
	}()
	s := w.NewSession("s")
	for i := range 400 {
		r, err := s.Read(ctx, "f.txt", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.SizeBytes != int64(len(r.Content)) || r.SHA256 != sha256hex([]byte(r.Content)) {
			t.Fatalf("read %d: size_bytes %d, sha256 %.12s for %d bytes hashing to %.12s", i, r.SizeBytes, r.SHA256, len(r.Content), sha256hex([]byte(r.Content)))
		}
	}
	close(stop)
	<-done
}
