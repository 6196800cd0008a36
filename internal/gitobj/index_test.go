package gitobj

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// indexVersion returns the version of the index file of work.
func indexVersion(t *testing.T, work string) uint32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	return binary.BigEndian.Uint32(b[4:])
}

// checkIndex reads the index of work and checks that Lookup finds exactly
// what `git ls-files -s` lists at stage 0 as a regular file, except the
// paths in excluded.
func checkIndex(t *testing.T, work string, excluded map[string]bool, lsArgs ...string) *Index {
	t.Helper()
	r := openRepo(t, filepath.Join(work, ".git"))
	ix, err := r.ReadIndex(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ID{}
	listed := 0
	for line := range strings.Lines(git(t, work, append([]string{"ls-files", "-s"}, lsArgs...)...)) {
		info, path, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "\t")
		f := strings.Fields(info)
		if f[2] == "0" && (f[0] == "100644" || f[0] == "100755") && !excluded[path] {
			want[path] = mustID(t, f[1])
		}
		listed++
	}
	for line := range strings.Lines(git(t, work, append([]string{"ls-files"}, lsArgs...)...)) {
		path := strings.TrimSuffix(line, "\n")
		got, ok := ix.Lookup(path)
		if id, wantOK := want[path]; ok != wantOK || got != id {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", path, got, ok, id, wantOK)
		}
	}
	if ix.Len() != len(want) {
		t.Errorf("Len() = %d, want %d (of %d entries)", ix.Len(), len(want), listed)
	}
	return ix
}

func TestIndexV2(t *testing.T) {
	work := newWorkTree(t)
	writeFiles(t, work, map[string]string{"a": "a\n", "dir/b": "b\n", "dir/sub/c": "c\n", "exec.sh": "#!/bin/sh\n", "z": ""})
	os.Chmod(filepath.Join(work, "exec.sh"), 0o755)
	os.Symlink("a", filepath.Join(work, "link"))
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "c")
	head := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	git(t, work, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	if v := indexVersion(t, work); v != 2 {
		t.Fatalf("index version %d, want 2", v)
	}
	ix := checkIndex(t, work, nil)
	if ix.Len() != 5 {
		t.Errorf("Len() = %d, want 5 (without the symlink and the submodule)", ix.Len())
	}
	for _, path := range []string{"link", "sub", "", "dir", "dir/", "a/", "/a", "./a", "dir/sub/c/"} {
		if _, ok := ix.Lookup(path); ok {
			t.Errorf("Lookup(%q) found it", path)
		}
	}
	if _, ok := ix.Lookup("exec.sh"); !ok {
		t.Errorf("Lookup of an executable file failed")
	}
}

func TestIndexV3V4(t *testing.T) {
	work := newWorkTree(t)
	files := map[string]string{"conflict.txt": "base\n", "skip.txt": "skip\n", "exec.sh": "#!/bin/sh\n"}
	for i := range 50 {
		files[fmt.Sprintf("deep/path/to/some/dir%d/file%d.go", i%5, i)] = fmt.Sprintf("package p%d\n", i)
	}
	writeFiles(t, work, files)
	os.Chmod(filepath.Join(work, "exec.sh"), 0o755)
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "base")
	git(t, work, "checkout", "-qb", "other")
	writeFiles(t, work, map[string]string{"conflict.txt": "other\n"})
	git(t, work, "commit", "-qam", "other")
	git(t, work, "checkout", "-q", "main")
	writeFiles(t, work, map[string]string{"conflict.txt": "main\n"})
	git(t, work, "commit", "-qam", "main")
	if _, err := runGit(work, nil, "merge", "other"); err == nil {
		t.Fatal("merge did not conflict")
	}
	writeFiles(t, work, map[string]string{"ita.txt": "intent\n"})
	git(t, work, "add", "-N", "ita.txt")
	git(t, work, "update-index", "--skip-worktree", "skip.txt")
	if !strings.Contains(git(t, work, "ls-files", "-t", "skip.txt"), "S skip.txt") {
		t.Fatal("skip.txt is not skip-worktree")
	}
	if !strings.Contains(git(t, work, "ls-files", "-s", "conflict.txt"), " 3\t") {
		t.Fatal("conflict.txt is not unmerged")
	}

	excluded := map[string]bool{"ita.txt": true, "skip.txt": true}
	if v := indexVersion(t, work); v != 3 {
		t.Fatalf("index version %d, want 3", v)
	}
	checkIndex(t, work, excluded)

	git(t, work, "update-index", "--index-version", "4")
	if v := indexVersion(t, work); v != 4 {
		t.Fatalf("index version %d, want 4", v)
	}
	ix := checkIndex(t, work, excluded)
	for _, path := range []string{"ita.txt", "skip.txt", "conflict.txt"} {
		if _, ok := ix.Lookup(path); ok {
			t.Errorf("Lookup(%q) found it", path)
		}
	}
}

func TestSparseIndex(t *testing.T) {
	work := newWorkTree(t)
	writeFiles(t, work, map[string]string{"top": "t\n", "in/a": "a\n", "out/b": "b\n", "out/deeper/c": "c\n"})
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "c")
	git(t, work, "sparse-checkout", "init", "--cone", "--sparse-index")
	git(t, work, "sparse-checkout", "set", "in")
	index, _ := os.ReadFile(filepath.Join(work, ".git", "index"))
	if !bytes.Contains(index, []byte("sdir")) || !strings.Contains(git(t, work, "ls-files", "-s", "--sparse"), "040000 ") {
		t.Skip("git did not write a sparse index")
	}
	ix := checkIndex(t, work, nil, "--sparse")
	if _, ok := ix.Lookup("out/"); ok {
		t.Errorf("Lookup of a sparse directory found it")
	}
	if ix.Len() != 2 {
		t.Errorf("Len() = %d, want 2", ix.Len())
	}
}

func TestSplitIndex(t *testing.T) {
	work := newWorkTree(t)
	writeFiles(t, work, map[string]string{"a": "a\n"})
	git(t, work, "add", ".")
	git(t, work, "update-index", "--split-index")
	r := openRepo(t, filepath.Join(work, ".git"))
	if _, err := r.ReadIndex(1 << 20); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("ReadIndex of a split index: %v, want ErrUnsupported", err)
	}
}

func TestIndexSkipHash(t *testing.T) {
	work := newWorkTree(t)
	writeFiles(t, work, map[string]string{"a": "a\n"})
	git(t, work, "add", ".")
	p := filepath.Join(work, ".git", "index")
	b, _ := os.ReadFile(p)
	clear(b[len(b)-20:])
	os.WriteFile(p, b, 0o644)
	r := openRepo(t, filepath.Join(work, ".git"))
	ix, err := r.ReadIndex(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := ix.Lookup("a"); !ok || id != BlobID([]byte("a\n")) {
		t.Errorf("Lookup(a) = %v, %v", id, ok)
	}
	if _, err := r.ReadIndex(int64(len(b) - 1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadIndex with max one byte short: %v, want ErrTooLarge", err)
	}
}

// TestIndexHandmade reads indexes built by hand, of each version.
func TestIndexHandmade(t *testing.T) {
	long := strings.Repeat("x", 5000)
	id := func(s string) ID { return BlobID([]byte(s)) }
	entries := []testEntry{
		{path: "a", mode: modeRegular, id: id("a")},
		{path: "b", mode: modeExecutable, id: id("b")},
		{path: "c", mode: 0o120000, id: id("c")},
		{path: "d", mode: 0o160000, id: id("d")},
		{path: "e", mode: modeRegular, id: id("e1"), stage: 1},
		{path: "e", mode: modeRegular, id: id("e2"), stage: 2},
		{path: "f", mode: modeRegular, id: id("f"), xflags: xflagSkipWorktree},
		{path: "g", mode: modeRegular, id: id("g"), xflags: xflagIntentToAdd},
		{path: "h/", mode: 0o40000, id: id("h"), xflags: xflagSkipWorktree},
		{path: "i/" + long, mode: modeRegular, id: id("long")},
		{path: "i/" + long + "y", mode: modeRegular, id: id("longer")},
		{path: "j/k", mode: modeRegular, id: id("j")},
		{path: "z", mode: 0o100664, id: id("z")},
	}
	want := map[string]ID{"a": id("a"), "b": id("b"), "i/" + long: id("long"), "i/" + long + "y": id("longer"), "j/k": id("j")}
	for _, v := range []uint32{2, 3, 4} {
		ix, err := parseIndex(buildIndex(v, entries, []byte("TREE\x00\x01\x02"), []byte("sdir"), []byte("ZZZZextension")))
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if ix.Len() != len(want) {
			t.Errorf("version %d: Len() = %d, want %d", v, ix.Len(), len(want))
		}
		for _, e := range entries {
			got, ok := ix.Lookup(e.path)
			if wantID, wantOK := want[e.path]; ok != wantOK || got != wantID {
				t.Errorf("version %d: Lookup(%.20q) = %v, %v", v, e.path, got, ok)
			}
		}
	}

	a := []testEntry{{path: "a", mode: modeRegular}}
	for _, tc := range []struct {
		name  string
		index []byte
		want  error // nil for an error of another kind
	}{
		{"link", buildIndex(2, a, []byte("link\x00\x00")), ErrUnsupported},
		{"unknown required extension", buildIndex(2, a, []byte("abcd")), ErrUnsupported},
		{"version 1", buildIndex(1, a), ErrUnsupported},
		{"version 5", buildIndex(5, a), ErrUnsupported},
		{"unknown flag", buildIndex(3, []testEntry{{path: "a", xflags: 0x1000}}), ErrUnsupported},
		{"unsorted", buildIndex(2, []testEntry{{path: "b"}, {path: "a"}}), nil},
		{"unsorted v4", buildIndex(4, []testEntry{{path: "ab"}, {path: "aa"}}), nil},
		{"duplicate", buildIndex(2, []testEntry{{path: "a"}, {path: "a"}}), nil},
		{"stages out of order", buildIndex(2, []testEntry{{path: "a", stage: 2}, {path: "a", stage: 1}}), nil},
		{"empty path", buildIndex(2, []testEntry{{path: ""}}), nil},
		{"path with NUL", buildIndex(2, []testEntry{{path: "a\x00b"}}), nil},
		{"truncated extension", buildIndex(2, a, []byte("TREE"))[:0], nil},
	} {
		_, err := parseIndex(tc.index)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// A version 4 index whose paths grow by a byte an entry would expand
	// to n²/2 bytes.
	var grow []testEntry
	for i := range 4000 {
		grow = append(grow, testEntry{path: strings.Repeat("a", i+1), mode: modeRegular})
	}
	if _, err := parseIndex(buildIndex(4, grow)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("index of 4000 growing paths: %v, want ErrTooLarge", err)
	}
}

// TestIndexLarge reads an index of 20,000 entries, and checks that reading
// it allocates little and looking up in it nothing.
func TestIndexLarge(t *testing.T) {
	work := largeRepo(t)
	ix := checkIndex(t, work, nil)
	if ix.Len() != largeFiles {
		t.Fatalf("Len() = %d", ix.Len())
	}
	r := openRepo(t, filepath.Join(work, ".git"))
	// A constant few: the index file's stat before its open (safeopen)
	// and the open, the buffer, the entries' tables.
	if n := testing.AllocsPerRun(10, func() { r.ReadIndex(1 << 30) }); n > 20 {
		t.Errorf("ReadIndex: %v allocations", n)
	}
	path := largePath(largeFiles / 2)
	if n := testing.AllocsPerRun(100, func() { ix.Lookup(path) }); n != 0 {
		t.Errorf("Lookup: %v allocations", n)
	}
}

const largeFiles = 20000

func largePath(i int) string {
	return fmt.Sprintf("src/pkg%03d/sub%d/file%05d.go", i/100, i%7, i)
}

// largeRepo makes a repository of largeFiles files added to its index,
// their blobs in a pack. It writes the pack itself: git takes many seconds
// over 20,000 objects on a slow file system.
func largeRepo(t testing.TB) string {
	t.Helper()
	work := newWorkTree(t)
	objs := make([]testObj, largeFiles)
	var list bytes.Buffer
	for i := range objs {
		objs[i] = blobObj(fmt.Sprintf("package p\n\n// File %d.\n", i))
		fmt.Fprintf(&list, "100644 %s 0\t%s\n", objs[i].id, largePath(i))
	}
	writePack(t, filepath.Join(work, ".git"), objs, false)
	gitIn(t, work, list.Bytes(), "update-index", "--index-info")
	return work
}

func TestEntry(t *testing.T) {
	out := &Index{}
	for i, p := range []string{"a", "b/c", "b/\xff", "e"} {
		off := uint32(len(out.names))
		out.names += p
		out.entries = append(out.entries, indexEntry{off: off, end: uint32(len(out.names)), id: ID{byte(i + 1)}})
	}
	i := 0
	for p, id := range out.All() {
		if q, x := out.Entry(i); q != p || x != id {
			t.Fatalf("Entry(%d) = %q %v, want %q %v", i, q, x, p, id)
		}
		if x, ok := out.Lookup(p); !ok || x != id {
			t.Fatalf("Lookup(%q) = %v %v", p, x, ok)
		}
		i++
	}
	if i != out.Len() || i != 4 {
		t.Fatalf("%d entries, Len %d", i, out.Len())
	}
}

// TestParseIndexDropping: an index parsed with its chunks dropped as the
// parse goes past them (a mapped index's pages let go) is the index
// parseIndex reads, and no chunk is read again once dropped by the parse:
// here a dropped chunk is overwritten, which a mapped file's is not.
func TestParseIndexDropping(t *testing.T) {
	for _, version := range []uint32{2, 4} {
		var entries []testEntry
		for i := range 60000 {
			entries = append(entries, testEntry{path: largePath(i), mode: modeRegular, id: ID{byte(i), byte(i >> 8), 1}})
		}
		slices.SortFunc(entries, func(a, b testEntry) int { return strings.Compare(a.path, b.path) })
		data := buildIndex(version, entries)
		if len(data) < 3*dropChunk {
			t.Fatalf("version %d: an index of %d bytes, fewer than three chunks", version, len(data))
		}
		want, err := parseIndex(data)
		if err != nil {
			t.Fatal(err)
		}
		mapped := bytes.Clone(data)
		next, parsing := 0, false
		got, err := parseIndexDropping(mapped, func(b []byte) {
			off := cap(mapped) - cap(b) // where b starts in mapped
			if off == 0 && next > 0 {
				parsing, next = true, 0 // the checksum's pass is over
			}
			if off != next || len(b) > dropChunk {
				t.Fatalf("version %d: dropped %d bytes at %d, want the chunk at %d", version, len(b), off, next)
			}
			next += len(b)
			if parsing {
				for i := range b {
					b[i] = 0xff
				}
			}
		})
		if err != nil {
			t.Fatalf("version %d: %v", version, err)
		}
		if !parsing || next < dropChunk {
			t.Fatalf("version %d: the parse dropped nothing", version)
		}
		if got.names != want.names || !slices.Equal(got.entries, want.entries) {
			t.Fatalf("version %d: the index parsed dropping differs", version)
		}
	}
}
