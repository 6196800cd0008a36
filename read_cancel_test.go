package editguard_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// TestReadStopsWhenCanceled: a read of a large file stops part-way when
// its context is canceled, instead of reading and hashing the rest.
func TestReadStopsWhenCanceled(t *testing.T) {
	dir := t.TempDir()
	// 16 KiB of text, then a hole to 4 GiB (zeros, read at memory speed):
	// plain text by its head, and seconds of hashing, far more than the
	// wait below.
	f, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(strings.Repeat("a line of text\n", 1100))); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		f.Close()
		t.Skipf("no sparse 4 GiB file here: %v", err)
	}
	f.Close()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.NewSession("cancel")
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = s.Read(ctx, "big.txt", &editguard.ReadOptions{Limit: 1})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read = %v after %v, want context.Canceled", err, time.Since(start))
	}
	// A read whose context is not canceled gives the lines asked for.
	small := filepath.Join(dir, "small.txt")
	os.WriteFile(small, []byte("one\ntwo\n"), 0o644)
	if r, err := s.Read(t.Context(), "small.txt", nil); err != nil || r.Content != "one\ntwo\n" {
		t.Fatalf("Read = %+v, %v", r, err)
	}
}
