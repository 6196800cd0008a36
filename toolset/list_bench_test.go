package toolset_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// BenchmarkListDirectory lists a directory of 10,000 files in process:
// its first page, and every page in turn (one op is all the pages). The
// directory is made older than the racy window first, as a directory an
// agent lists usually is, so that its listing is kept between pages.
// cmd/editguard-bench measures the same through MCP against
// server-filesystem.
func BenchmarkListDirectory(b *testing.B) {
	dir := b.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file-%06d.go", i)), []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(2100 * time.Millisecond)
	ws, err := editguard.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	ts := toolset.New(ws.NewSession("bench"), nil)
	list := func(b *testing.B, offset int) *toolset.Listing {
		out, err := ts.Execute(context.Background(), "list_directory", json.RawMessage(fmt.Sprintf(`{"path":"d","offset":%d}`, offset)))
		if err != nil {
			b.Fatal(err)
		}
		return out.Structured.(*toolset.Listing)
	}
	b.Run("first-page", func(b *testing.B) {
		for b.Loop() {
			list(b, 1)
		}
	})
	b.Run("every-page", func(b *testing.B) {
		for b.Loop() {
			n := 0
			for off := 1; off != 0; {
				l := list(b, off)
				n += len(l.Entries)
				off = l.NextOffset
			}
			if n != 10000 {
				b.Fatalf("pages hold %d entries", n)
			}
		}
	})
}
