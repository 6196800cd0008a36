package gitobj

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// requireGit skips the test when there is no git binary.
func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitEnv is the environment git runs in for the tests: none of the
// caller's GIT_ variables, and no global or system configuration.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
}

// runGit runs git in dir with stdin, and returns its output and error.
func runGit(dir string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{
		"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
		"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.autocrlf=false",
	}, args...)...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, err
}

// git runs git in dir for a test's setup, and returns its output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(dir, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// gitIn is git with stdin.
func gitIn(t testing.TB, dir string, stdin []byte, args ...string) []byte {
	t.Helper()
	out, err := runGit(dir, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newWorkTree makes a repository with git init args and returns its work
// tree.
func newWorkTree(t testing.TB, args ...string) string {
	t.Helper()
	requireGit(t)
	dir := t.TempDir()
	git(t, dir, append([]string{"init", "-q"}, args...)...)
	return dir
}

// writeFiles writes files (path: content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openRepo opens the git directory gitDir, closing its own Root at once
// (Open does not keep it), and closes the Repo when the test ends.
func openRepo(t testing.TB, gitDir string) *Repo {
	t.Helper()
	r, err := tryOpen(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func tryOpen(gitDir string) (*Repo, error) {
	root, err := os.OpenRoot(gitDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return Open(root)
}

// newGitDir makes an empty git directory by hand, without git: an objects
// directory with its pack directory.
func newGitDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "objects", "pack"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustID(t testing.TB, s string) ID {
	t.Helper()
	id, ok := ParseID(strings.TrimSpace(s))
	if !ok {
		t.Fatalf("bad id %q", s)
	}
	return id
}

var zlibWriter = zlib.NewWriter(nil)

func zlibBytes(data []byte) []byte {
	var b bytes.Buffer
	zlibWriter.Reset(&b)
	zlibWriter.Write(data)
	zlibWriter.Close()
	return b.Bytes()
}

// writeLoose writes raw, compressed, as the loose object id in gitDir.
func writeLoose(t testing.TB, gitDir string, id ID, raw []byte) string {
	t.Helper()
	p := filepath.Join(gitDir, "objects", filepath.FromSlash(loosePath(id)))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, zlibBytes(raw), 0o444); err != nil {
		t.Fatal(err)
	}
	return p
}

// rehash replaces the checksum at the end of b with that of what comes
// before it.
func rehash(b []byte) []byte {
	if len(b) >= sha1.Size {
		sum := sha1.Sum(b[:len(b)-sha1.Size])
		copy(b[len(b)-sha1.Size:], sum[:])
	}
	return b
}

// encodeOffsetVarint is the inverse of offsetVarint.
func encodeOffsetVarint(v uint64) []byte {
	var b [10]byte
	i := len(b) - 1
	b[i] = byte(v & 0x7f)
	for v >>= 7; v > 0; v >>= 7 {
		v--
		i--
		b[i] = 0x80 | byte(v&0x7f)
	}
	return b[i:]
}

// encodeDeltaSize is the inverse of deltaSize.
func encodeDeltaSize(v uint64) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// deltaCopy returns a delta's copy instruction.
func deltaCopy(off, n uint32) []byte {
	b := []byte{0x80}
	for i := range 4 {
		if v := byte(off >> (8 * i)); v != 0 {
			b[0] |= 1 << i
			b = append(b, v)
		}
	}
	for i := range 3 {
		if v := byte(n >> (8 * i)); v != 0 {
			b[0] |= 0x10 << i
			b = append(b, v)
		}
	}
	return b
}

// makeDelta returns a delta from a base of srcSize bytes to a result of
// dstSize bytes, with the given instructions.
func makeDelta(srcSize, dstSize int, instrs ...[]byte) []byte {
	b := encodeDeltaSize(uint64(srcSize))
	b = append(b, encodeDeltaSize(uint64(dstSize))...)
	for _, in := range instrs {
		b = append(b, in...)
	}
	return b
}

// A testEntry is an index entry for buildIndex.
type testEntry struct {
	path   string
	mode   uint32
	id     ID
	stage  int
	xflags uint16
}

// buildIndex returns an index file of the given version holding entries,
// in the order given, followed by the extensions exts (each a signature
// and its data), with its checksum.
func buildIndex(version uint32, entries []testEntry, exts ...[]byte) []byte {
	b := []byte("DIRC")
	b = binary.BigEndian.AppendUint32(b, version)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	prev := ""
	for _, e := range entries {
		start := len(b)
		b = append(b, make([]byte, 24)...) // ctime, mtime, dev, ino
		b = binary.BigEndian.AppendUint32(b, e.mode)
		b = append(b, make([]byte, 12)...) // uid, gid, size
		b = append(b, e.id[:]...)
		flags := uint16(min(len(e.path), flagNameMask)) | uint16(e.stage)<<12
		if e.xflags != 0 {
			flags |= flagExtended
		}
		b = binary.BigEndian.AppendUint16(b, flags)
		if e.xflags != 0 {
			b = binary.BigEndian.AppendUint16(b, e.xflags)
		}
		if version == 4 {
			common := 0
			for common < len(prev) && common < len(e.path) && prev[common] == e.path[common] {
				common++
			}
			b = append(b, encodeOffsetVarint(uint64(len(prev)-common))...)
			b = append(b, e.path[common:]...)
			b = append(b, 0)
		} else {
			b = append(b, e.path...)
			pad := (len(b)-start+8)&^7 - (len(b) - start)
			b = append(b, make([]byte, pad)...)
		}
		prev = e.path
	}
	for _, x := range exts {
		b = append(b, x[:4]...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)-4))
		b = append(b, x[4:]...)
	}
	return rehash(append(b, make([]byte, sha1.Size)...))
}

// A testObj is an object for writePack.
type testObj struct {
	id   ID     // the id the pack index gives it
	typ  int    // its type in the pack
	data []byte // its inflated data: for a delta, the delta
	base int    // an offset delta's base: the index of an earlier object
	ref  ID     // a reference delta's base
	raw  []byte // if not nil, written instead of data, compressed
	// entry, if not nil, is written as the whole entry, header and all.
	entry []byte
}

// blobObj returns a blob object with its true id.
func blobObj(data string) testObj {
	return testObj{id: BlobID([]byte(data)), typ: objBlob, data: []byte(data)}
}

// packEntry returns the entry of o in a pack, for an offset delta dist
// bytes after its base.
func packEntry(o testObj, dist int) []byte {
	if o.entry != nil {
		return o.entry
	}
	var b []byte
	size := uint64(len(o.data))
	c := byte(o.typ<<4) | byte(size&15)
	for size >>= 4; size > 0; size >>= 7 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
	}
	b = append(b, c)
	switch o.typ {
	case objOfsDelta:
		b = append(b, encodeOffsetVarint(uint64(dist))...)
	case objRefDelta:
		b = append(b, o.ref[:]...)
	}
	if o.raw != nil {
		return append(b, o.raw...)
	}
	return append(b, zlibBytes(o.data)...)
}

// writePack writes objs as a pack and its index into gitDir, and returns
// the pack's path without extension. With largeOffsets, the index gives
// every offset but the first (as git) through its table of 64-bit offsets.
func writePack(t testing.TB, gitDir string, objs []testObj, largeOffsets bool) string {
	t.Helper()
	pack := []byte("PACK\x00\x00\x00\x02")
	pack = binary.BigEndian.AppendUint32(pack, uint32(len(objs)))
	offsets := make([]int, len(objs))
	crcs := make([]uint32, len(objs))
	for i, o := range objs {
		offsets[i] = len(pack)
		pack = append(pack, packEntry(o, offsets[i]-offsets[o.base])...)
		crcs[i] = crc32.ChecksumIEEE(pack[offsets[i]:])
	}
	pack = rehash(append(pack, make([]byte, sha1.Size)...))
	packSum := pack[len(pack)-sha1.Size:]

	order := make([]int, len(objs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(objs[a].id[:], objs[b].id[:]) })
	idx := []byte("\xfftOc\x00\x00\x00\x02")
	var fanout [256]uint32
	for _, o := range objs {
		fanout[o.id[0]]++
	}
	n := uint32(0)
	for _, c := range fanout {
		n += c
		idx = binary.BigEndian.AppendUint32(idx, n)
	}
	for _, i := range order {
		idx = append(idx, objs[i].id[:]...)
	}
	for _, i := range order {
		idx = binary.BigEndian.AppendUint32(idx, crcs[i])
	}
	var large []byte
	for _, i := range order {
		if largeOffsets && offsets[i] != 12 {
			idx = binary.BigEndian.AppendUint32(idx, 1<<31|uint32(len(large)/8))
			large = binary.BigEndian.AppendUint64(large, uint64(offsets[i]))
		} else {
			idx = binary.BigEndian.AppendUint32(idx, uint32(offsets[i]))
		}
	}
	idx = append(idx, large...)
	idx = append(idx, packSum...)
	idx = rehash(append(idx, make([]byte, sha1.Size)...))

	base := filepath.Join(gitDir, "objects", "pack", fmt.Sprintf("pack-%x", packSum))
	if err := os.WriteFile(base+".pack", pack, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".idx", idx, 0o444); err != nil {
		t.Fatal(err)
	}
	return base
}

// fastImport commits to the main branch of the repository of work one
// commit for each of commits, which maps paths to their new content, and
// returns the id of the last commit. Each commit's parent is the one before.
func fastImport(t testing.TB, work string, commits []map[string]string) string {
	t.Helper()
	var b bytes.Buffer
	mark := 0
	for i, files := range commits {
		paths := slices.Sorted(maps.Keys(files))
		marks := make([]int, len(paths))
		for k, p := range paths {
			mark++
			marks[k] = mark
			fmt.Fprintf(&b, "blob\nmark :%d\ndata %d\n%s\n", mark, len(files[p]), files[p])
		}
		mark++
		fmt.Fprintf(&b, "commit refs/heads/main\nmark :%d\ncommitter t <t@t> %d +0000\ndata 1\nc\n", mark, 1e9+i)
		for k, p := range paths {
			fmt.Fprintf(&b, "M 100644 :%d %s\n", marks[k], p)
		}
	}
	gitIn(t, work, b.Bytes(), "fast-import", "--quiet")
	return strings.TrimSpace(git(t, work, "rev-parse", "refs/heads/main"))
}
