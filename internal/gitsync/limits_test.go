//go:build unix

package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard/internal/testutil/gittest"
)

// TestReadBlobsLimit reads blobs around the limit: one at the limit is
// read, one over it is reported TooLarge with its size and not read, and
// one whose checkout conversion takes it over the limit is cut off and
// reported with a lower bound. Entries gives every blob's size.
func TestReadBlobsLimit(t *testing.T) {
	const limit = 1000
	_, clone := setup(t, map[string]string{
		".gitattributes": "*.crlf eol=crlf\n",
		"at.txt":         strings.Repeat("a", limit),
		"over.bin":       strings.Repeat("b", 2*limit),
		"grows.crlf":     strings.Repeat("c\n", limit/2), // limit bytes, 1.5 times that converted
		"small.crlf":     "x\ny\n",
	})
	ctx := context.Background()
	r := open(t, clone)
	r.SetMaxBlobSize(limit)
	head, err := r.Fetch(ctx, "origin", "main")
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"at.txt", "over.bin", "grows.crlf", "small.crlf"}
	entries, err := r.Entries(ctx, head, paths)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for p, size := range map[string]int64{"at.txt": limit, "over.bin": 2 * limit, "grows.crlf": limit, "small.crlf": 4} {
		if e := entries[p]; e.Size != size {
			t.Errorf("Entries[%s].Size = %d, want %d", p, e.Size, size)
		}
		want[p] = entries[p].OID
	}
	got, err := r.ReadBlobs(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if b := got["at.txt"]; b.TooLarge || b.Size != limit || string(b.Data) != strings.Repeat("a", limit) {
		t.Errorf("at.txt = %+v, want its %d bytes", b, limit)
	}
	if b := got["over.bin"]; !b.TooLarge || b.AtLeast || b.Size != 2*limit || b.Data != nil {
		t.Errorf("over.bin = TooLarge %v, AtLeast %v, Size %d, %d bytes of data; want TooLarge, the exact size %d, no data", b.TooLarge, b.AtLeast, b.Size, len(b.Data), 2*limit)
	}
	if b := got["grows.crlf"]; !b.TooLarge || !b.AtLeast || b.Size != limit+1 || b.Data != nil {
		t.Errorf("grows.crlf = TooLarge %v, AtLeast %v, Size %d, %d bytes of data; want TooLarge, at least %d, no data", b.TooLarge, b.AtLeast, b.Size, len(b.Data), limit+1)
	}
	if b := got["small.crlf"]; b.TooLarge || string(b.Data) != "x\r\ny\r\n" {
		t.Errorf("small.crlf = %+v, want it converted", b)
	}
}

// TestCommandsNeverRunFsmonitor sets core.fsmonitor in the repository's
// configuration to a program that leaves a mark, and runs every command
// publish and pull use: git must run none of them with it (check-attr,
// diff-tree, read-tree, update-index and write-tree read an index, which
// makes git run the fsmonitor program).
func TestCommandsNeverRunFsmonitor(t *testing.T) {
	_, clone := setup(t, map[string]string{".gitattributes": "*.crlf eol=crlf\n", "a.txt": "a\n", "b.crlf": "b\n"})
	mark := filepath.Join(t.TempDir(), "fsmonitor-ran")
	gittest.GitIn(t, clone, "config", "core.fsmonitor", "touch '"+mark+"'; false")
	ctx := context.Background()
	r := open(t, clone)
	r.SetMaxBlobSize(1 << 20)
	head, err := r.Fetch(ctx, "origin", "main")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := r.Entries(ctx, head, []string{"a.txt", "b.crlf"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadBlobs(ctx, map[string]string{"a.txt": entries["a.txt"].OID, "b.crlf": entries["b.crlf"].OID}); err != nil {
		t.Fatal(err)
	}
	oid, err := r.HashObject(ctx, "a.txt", []byte("A\n"))
	if err != nil {
		t.Fatal(err)
	}
	commit, err := r.Commit(ctx, head, []Change{{Path: "a.txt", OID: oid, Mode: ModeFile}}, "test\n", Ident{Name: "n", Email: "e@x", When: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.DiffPaths(ctx, head, commit); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DiffPaths(ctx, "", commit); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, "origin", "main", commit, head); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("git ran the repository's core.fsmonitor program")
	}
	// The same configuration does make plain git run it, so the check
	// above can fail.
	gittest.GitIn(t, clone, "check-attr", "text", "--", "a.txt")
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("git check-attr did not run core.fsmonitor either (%v): the test proves nothing", err)
	}
}

func TestLocalURL(t *testing.T) {
	for url, want := range map[string]bool{
		"/srv/git/shared.git":           true,
		"../shared.git":                 true,
		"shared.git":                    true,
		"file:///srv/git/shared.git":    true,
		"./odd:name.git":                true,
		"host:shared.git":               false,
		"git@github.com:o/r.git":        false,
		"ssh://host/srv/shared.git":     false,
		"https://example.com/r.git":     false,
		"ext::ssh -o x host %S 'r.git'": false,
	} {
		if got := localURL(url); got != want {
			t.Errorf("localURL(%q) = %v, want %v", url, got, want)
		}
	}
}
