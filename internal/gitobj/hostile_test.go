package gitobj

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// sampleIndexes returns index files to damage: some built by hand, and
// some git wrote if there is git.
func sampleIndexes(t testing.TB) map[string][]byte {
	id := BlobID([]byte("x"))
	entries := []testEntry{
		{path: "a", mode: modeRegular, id: id},
		{path: "dir/b", mode: modeExecutable, id: id},
		{path: "dir/c", mode: modeRegular, id: id, xflags: xflagIntentToAdd},
		{path: "dir/d/e", mode: modeRegular, id: id, stage: 1},
		{path: "dir/d/e", mode: modeRegular, id: id, stage: 3},
	}
	samples := map[string][]byte{
		"v2": buildIndex(2, entries[:2], []byte("TREE\x00")),
		"v3": buildIndex(3, entries),
		"v4": buildIndex(4, entries, []byte("sdir")),
	}
	if _, err := os.Stat("/"); err == nil && gitAvailable() {
		work := newWorkTree(t)
		writeFiles(t, work, map[string]string{"a": "a", "b/c": "c", "b/d/e": "e", "f": ""})
		git(t, work, "add", ".")
		git(t, work, "commit", "-qm", "c")
		git(t, work, "add", "-N", "f")
		b, _ := os.ReadFile(filepath.Join(work, ".git", "index"))
		samples["git v3"] = b
		git(t, work, "update-index", "--index-version", "4")
		b, _ = os.ReadFile(filepath.Join(work, ".git", "index"))
		samples["git v4"] = b
	}
	return samples
}

func gitAvailable() bool {
	_, err := runGit(os.TempDir(), nil, "version")
	return err == nil
}

func TestHostileIndex(t *testing.T) {
	for name, index := range sampleIndexes(t) {
		if _, err := parseIndex(index); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for n := range len(index) {
			if _, err := parseIndex(index[:n]); err == nil {
				t.Errorf("%s truncated to %d bytes: no error", name, n)
			}
			parseIndex(rehash(bytes.Clone(index[:n]))) // must not panic
		}
		for i := range len(index) - sha1.Size {
			b := bytes.Clone(index)
			b[i] ^= 0x40
			if _, err := parseIndex(b); err == nil || !strings.Contains(err.Error(), "checksum") {
				t.Errorf("%s with byte %d flipped: %v, want a checksum error", name, i, err)
			}
			parseIndex(rehash(b))
			b[i] = 0xff
			parseIndex(rehash(b))
		}

		// Huge counts of entries, and of bytes of an extension.
		b := bytes.Clone(index)
		binary.BigEndian.PutUint32(b[8:], 0xffffffff)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := parseIndex(rehash(b)); err == nil {
			t.Errorf("%s with 2³² entries: no error", name)
		}
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s with 2³² entries: allocated %d bytes", name, n)
		}
	}
	ext := buildIndex(2, nil, []byte("TREE"))
	binary.BigEndian.PutUint32(ext[indexHeaderLen+4:], 0xfffffff0)
	if _, err := parseIndex(rehash(ext)); err == nil {
		t.Errorf("extension of 2³² bytes: no error")
	}
}

func TestHostileIndexFile(t *testing.T) {
	dir := newGitDir(t)
	r := openRepo(t, dir)
	index := filepath.Join(dir, "index")
	valid := buildIndex(2, []testEntry{{path: "a", mode: modeRegular}})

	os.WriteFile(index, valid[:len(valid)-1], 0o644)
	if _, err := r.ReadIndex(1 << 20); err == nil {
		t.Errorf("truncated index: no error")
	}

	os.Remove(index)
	outside := filepath.Join(t.TempDir(), "index")
	os.WriteFile(outside, valid, 0o644)
	os.Symlink(outside, index)
	if _, err := r.ReadIndex(1 << 20); err == nil {
		t.Errorf("index linked to a file outside: no error")
	}

	os.Remove(index)
	os.Mkdir(index, 0o755)
	if _, err := r.ReadIndex(1 << 20); err == nil {
		t.Errorf("index that is a directory: no error")
	}
}

func TestHostileLoose(t *testing.T) {
	dir := newGitDir(t)
	hello := BlobID([]byte("hello"))
	for _, tc := range []struct {
		name string
		raw  string
		want error // nil for any error but ErrNotFound and ErrTooLarge
	}{
		{"short", "blob 4\x00hello", nil},
		{"long", "blob 6\x00hello", nil},
		{"commit", "commit 5\x00hello", nil},
		{"no size", "blob\x00hello", nil},
		{"empty size", "blob \x00hello", nil},
		{"negative", "blob -5\x00hello", nil},
		{"plus", "blob +5\x00hello", nil},
		{"spaces", "blob  5\x00hello", nil},
		{"no NUL", "blob 5", nil},
		{"long header", "blob 00000000000000000000000000000000000000005\x00hello", nil},
		{"unknown type", "blub 5\x00hello", nil},
		{"other content", "blob 5\x00world", nil},
		{"empty", "", nil},
		{"huge", "blob 999999999999\x00hello", ErrTooLarge},
	} {
		writeLoose(t, dir, hello, []byte(tc.raw))
		r := openRepo(t, dir)
		_, err := r.ReadBlob(hello, nil, 1<<20)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrTooLarge)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		os.Remove(filepath.Join(dir, "objects", loosePath(hello)))
	}

	// A size that the file could not inflate to is not allocated.
	writeLoose(t, dir, hello, []byte("blob 999999999999\x00hello"))
	r := openRepo(t, dir)
	if _, err := r.ReadBlob(hello, nil, 1<<50); err == nil || errors.Is(err, ErrTooLarge) {
		t.Errorf("huge size with a huge max: %v, want corrupt", err)
	}
	os.Remove(filepath.Join(dir, "objects", loosePath(hello)))

	// Damaged compressed data: each byte flipped, and each length cut.
	p := writeLoose(t, dir, hello, []byte("blob 5\x00hello"))
	valid, _ := os.ReadFile(p)
	if got, err := openRepo(t, dir).ReadBlob(hello, nil, 5); err != nil || string(got) != "hello" {
		t.Fatalf("ReadBlob = %q, %v", got, err)
	}
	for i := range valid {
		for _, b := range [][]byte{append(bytes.Clone(valid[:i]), valid[i]^0x21), valid[:i]} {
			os.Chmod(p, 0o644)
			os.WriteFile(p, append(b, valid[len(b):]...), 0o644)
			if i < len(b) {
				os.WriteFile(p, b, 0o644)
			}
			got, err := openRepo(t, dir).ReadBlob(hello, nil, 1<<20)
			if err == nil && string(got) != "hello" {
				t.Errorf("damaged at %d: read %q", i, got)
			}
		}
	}
	os.Remove(p)

	// Links and directories in place of an object.
	outside := filepath.Join(t.TempDir(), "hello")
	os.WriteFile(outside, valid, 0o644)
	os.Symlink(outside, p)
	r = openRepo(t, dir)
	if r.Has(hello) {
		t.Errorf("Has(link to outside) = true")
	}
	if _, err := r.ReadBlob(hello, nil, 1<<20); err == nil {
		t.Errorf("ReadBlob(link to outside): no error")
	}
	os.Remove(p)
	os.Mkdir(p, 0o755)
	if _, err := openRepo(t, dir).ReadBlob(hello, nil, 1<<20); err == nil {
		t.Errorf("ReadBlob(directory): no error")
	}
}

func TestHostileSymlinks(t *testing.T) {
	// A repository outside, whose objects the links below point to.
	outside := newGitDir(t)
	hello := BlobID([]byte("hello"))
	writeLoose(t, outside, hello, []byte("blob 5\x00hello"))
	world := blobObj("world")
	writePack(t, outside, []testObj{world}, false)
	if r := openRepo(t, outside); !r.Has(hello) || !r.Has(world.id) {
		t.Fatal("outside repository is broken")
	}

	dir := t.TempDir()
	os.Symlink(filepath.Join(outside, "objects"), filepath.Join(dir, "objects"))
	if r, err := tryOpen(dir); err == nil {
		if r.Has(hello) || r.Has(world.id) {
			t.Errorf("objects linked outside: Has = true")
		}
		r.Close()
	}

	dir = newGitDir(t)
	os.Remove(filepath.Join(dir, "objects", "pack"))
	os.Symlink(filepath.Join(outside, "objects", "pack"), filepath.Join(dir, "objects", "pack"))
	os.Symlink(filepath.Join(outside, "objects", loosePath(hello)[:2]), filepath.Join(dir, "objects", loosePath(hello)[:2]))
	r := openRepo(t, dir)
	if r.Has(hello) || r.Has(world.id) {
		t.Errorf("pack or fan-out directory linked outside: Has = true")
	}
	if _, err := r.ReadBlob(hello, nil, 100); err == nil {
		t.Errorf("fan-out directory linked outside: ReadBlob succeeded")
	}
	if _, err := r.ReadBlob(world.id, nil, 100); err == nil {
		t.Errorf("pack directory linked outside: ReadBlob succeeded")
	}

	// A config outside is not read; it could say anything.
	dir = newGitDir(t)
	os.WriteFile(filepath.Join(outside, "config"), []byte("[extensions]\nobjectformat = sha1\n"), 0o644)
	os.Symlink(filepath.Join(outside, "config"), filepath.Join(dir, "config"))
	if _, err := tryOpen(dir); err == nil {
		t.Errorf("config linked outside: Open succeeded")
	}

	// Alternates are ignored.
	dir = newGitDir(t)
	os.MkdirAll(filepath.Join(dir, "objects", "info"), 0o755)
	os.WriteFile(filepath.Join(dir, "objects", "info", "alternates"), []byte(filepath.Join(outside, "objects")+"\n"), 0o644)
	if r := openRepo(t, dir); r.Has(hello) || r.Has(world.id) {
		t.Errorf("object found through alternates")
	}
}

// packedRepo writes objs as the one pack of a new git directory, and opens
// it.
func packedRepo(t *testing.T, objs []testObj, largeOffsets bool) *Repo {
	t.Helper()
	dir := newGitDir(t)
	writePack(t, dir, objs, largeOffsets)
	r := openRepo(t, dir)
	if len(r.packs) != 1 {
		t.Fatalf("%d packs", len(r.packs))
	}
	return r
}

func TestHandmadePack(t *testing.T) {
	base := blobObj("hello, world\n")
	target := "hello, there, world\n"
	delta := makeDelta(13, len(target), deltaCopy(0, 7), []byte("\x07there, "), deltaCopy(7, 6))
	ofs := testObj{id: BlobID([]byte(target)), typ: objOfsDelta, data: delta, base: 0}
	ref := testObj{id: BlobID([]byte(target + "!")), typ: objRefDelta, ref: ofs.id,
		data: makeDelta(len(target), len(target)+1, deltaCopy(0, uint32(len(target))), []byte("\x01!"))}
	objs := []testObj{base, ofs, ref}
	for _, large := range []bool{false, true} {
		r := packedRepo(t, objs, large)
		for _, want := range []string{"hello, world\n", target, target + "!"} {
			id := BlobID([]byte(want))
			if !r.Has(id) {
				t.Errorf("Has(%q) = false", want)
			}
			if got, err := r.ReadBlob(id, nil, 100); err != nil || string(got) != want {
				t.Errorf("ReadBlob(%q) = %q, %v", want, got, err)
			}
		}
	}

	// git reads the pack the same.
	if !gitAvailable() {
		return
	}
	work := newWorkTree(t)
	writePack(t, filepath.Join(work, ".git"), objs, true)
	if got := git(t, work, "cat-file", "blob", ref.id.String()); got != target+"!" {
		t.Errorf("git cat-file = %q", got)
	}
}

func TestHostilePack(t *testing.T) {
	base := blobObj("0123456789")
	wrong := ID{1, 2, 3}
	for _, tc := range []struct {
		name string
		objs []testObj
		want error // nil for any error but ErrNotFound and ErrTooLarge
	}{
		{"copy past source", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 11, deltaCopy(0, 11))}}, nil},
		{"copy offset past source", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 1, deltaCopy(10, 1))}}, nil},
		{"copy of 0x10000", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 0x10000, []byte{0x80})}}, nil},
		{"copy past target", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 5, deltaCopy(0, 6))}}, nil},
		{"insert past target", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 1, []byte("\x02ab"))}}, nil},
		{"insert past delta", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 5, []byte("\x05ab"))}}, nil},
		{"copy bytes missing", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 5, []byte{0x91})}}, nil},
		{"instruction 0", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 1, []byte("\x00"), deltaCopy(0, 1))}}, nil},
		{"short result", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 5, deltaCopy(0, 4))}}, nil},
		{"wrong source size", []testObj{base, {typ: objOfsDelta, data: makeDelta(9, 5, deltaCopy(0, 5))}}, nil},
		{"no sizes", []testObj{base, {typ: objOfsDelta, data: []byte{0x8a}}}, nil},
		{"huge result", []testObj{base, {typ: objOfsDelta, data: makeDelta(10, 1<<40, deltaCopy(0, 5))}}, ErrTooLarge},
		{"ref cycle", []testObj{{id: ID{1}, typ: objRefDelta, ref: ID{2}, data: makeDelta(1, 1, []byte("\x01a"))},
			{id: ID{2}, typ: objRefDelta, ref: ID{1}, data: makeDelta(1, 1, []byte("\x01a"))}}, nil},
		{"ref to itself", []testObj{{id: ID{1}, typ: objRefDelta, ref: ID{1}, data: makeDelta(1, 1, []byte("\x01a"))}}, nil},
		{"ref base missing", []testObj{{typ: objRefDelta, ref: wrong, data: makeDelta(1, 1, []byte("\x01a"))}}, nil},
		{"commit", []testObj{{typ: objCommit, data: []byte("tree 0\n")}}, nil},
		{"delta of a tree", []testObj{{id: ID{9}, typ: objTree}, {typ: objOfsDelta, data: makeDelta(0, 1, []byte("\x01a"))}}, nil},
		{"type 0", []testObj{{typ: 0, data: []byte("x")}}, nil},
		{"type 5", []testObj{{typ: 5, data: []byte("x")}}, nil},
		{"zlib shorter", []testObj{{typ: objBlob, data: []byte("hello"), raw: zlibBytes([]byte("hell"))}}, nil},
		{"zlib longer", []testObj{{typ: objBlob, data: []byte("hello"), raw: zlibBytes([]byte("hello!"))}}, nil},
		{"zlib damaged", []testObj{{typ: objBlob, data: []byte("hello"), raw: []byte("\x78\x9c\xff\xff\xff")}}, nil},
		{"not zlib", []testObj{{typ: objBlob, data: []byte("hello"), raw: []byte("hello")}}, nil},
		{"other content", []testObj{{typ: objBlob, data: []byte("hellO")}}, nil},
		{"size beyond the pack", []testObj{{typ: objBlob, data: []byte("hello"), raw: []byte{}}}, nil},
	} {
		// The object to read is the last, under the id of "hello".
		objs := slices.Clone(tc.objs)
		last := &objs[len(objs)-1]
		if last.id == (ID{}) {
			last.id = BlobID([]byte("hello"))
		}
		if last.typ == objOfsDelta {
			last.base = len(objs) - 2
		}
		r := packedRepo(t, objs, false)
		got, err := r.ReadBlob(last.id, nil, 1<<20)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || tc.want == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrTooLarge)) {
			t.Errorf("%s: %q, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestDeltaChains(t *testing.T) {
	// A chain of deltas that each copy their base.
	// The base is ID{0xfe}; the last delta, the blob "x".
	chain := func(n int, ref bool) []testObj {
		objs := []testObj{{id: ID{0xfe}, typ: objBlob, data: []byte("x")}}
		for i := range n {
			o := testObj{id: ID{0xff, byte(i >> 16), byte(i >> 8), byte(i)}, typ: objOfsDelta, base: i, data: makeDelta(1, 1, deltaCopy(0, 1))}
			if i == n-1 {
				o.id = BlobID([]byte("x"))
			}
			if ref {
				o.typ, o.ref = objRefDelta, objs[i].id
			}
			objs = append(objs, o)
		}
		return objs
	}
	for _, ref := range []bool{false, true} {
		r := packedRepo(t, chain(100, ref), false)
		if got, err := r.ReadBlob(BlobID([]byte("x")), nil, 1); err != nil || string(got) != "x" {
			t.Errorf("chain of 100 (ref %v): %q, %v", ref, got, err)
		}
		r = packedRepo(t, chain(maxDepth+1, ref), false)
		if _, err := r.ReadBlob(BlobID([]byte("x")), nil, 1); !errors.Is(err, ErrTooLarge) {
			t.Errorf("chain of %d (ref %v): %v, want ErrTooLarge", maxDepth+1, ref, err)
		}
	}

	// A reference delta whose base is loose.
	dir := newGitDir(t)
	writeLoose(t, dir, ID{0xfe}, []byte("blob 1\x00x"))
	objs := chain(1, true)[1:]
	writePack(t, dir, objs, false)
	if got, err := openRepo(t, dir).ReadBlob(BlobID([]byte("x")), nil, 1); err != nil || string(got) != "x" {
		t.Errorf("delta of a loose base: %q, %v", got, err)
	}

	limit, budget := chainLimits(1)
	if limit != minBaseLimit || budget != 16*minBaseLimit {
		t.Errorf("chainLimits(1) = %d, %d", limit, budget)
	}
	if limit, budget := chainLimits(1 << 62); limit != clamp(1<<63-1) || budget != limit {
		t.Errorf("chainLimits(2⁶²) = %d, %d", limit, budget)
	}
}

// TestDamagedPack flips each byte of a small pack in turn, and truncates
// it, fixing up the checksums, and checks that no read panics or returns
// wrong bytes.
func TestDamagedPack(t *testing.T) {
	base := blobObj(strings.Repeat("hello, world\n", 3))
	target := strings.Repeat("hello, world\n", 4)
	objs := []testObj{
		base,
		{id: BlobID([]byte(target)), typ: objOfsDelta, base: 0, data: makeDelta(39, 52, deltaCopy(0, 39), deltaCopy(0, 13))},
		{id: BlobID([]byte(target + "!")), typ: objRefDelta, ref: BlobID([]byte(target)), data: makeDelta(52, 53, deltaCopy(0, 52), []byte("\x01!"))},
	}
	dir := newGitDir(t)
	name := writePack(t, dir, objs, true)
	pack, _ := os.ReadFile(name + ".pack")
	idx, _ := os.ReadFile(name + ".idx")
	want := map[ID]string{objs[0].id: string(base.data), objs[1].id: target, objs[2].id: target + "!"}

	check := func(what string, pack, idx []byte) {
		os.Chmod(name+".pack", 0o644)
		os.Chmod(name+".idx", 0o644)
		os.WriteFile(name+".pack", pack, 0o644)
		os.WriteFile(name+".idx", idx, 0o644)
		r := openRepo(t, dir)
		for id, w := range want {
			r.Has(id)
			if got, err := r.ReadBlob(id, nil, 1<<20); err == nil && string(got) != w {
				t.Fatalf("%s: ReadBlob read %q", what, got)
			}
		}
	}
	// withSum fixes the pack's checksum, and the index's copy of it.
	withSum := func(pack []byte) ([]byte, []byte) {
		pack = rehash(pack)
		idx := bytes.Clone(idx)
		if len(pack) >= sha1.Size {
			copy(idx[len(idx)-2*sha1.Size:], pack[len(pack)-sha1.Size:])
		}
		return pack, rehash(idx)
	}
	for i := range pack {
		b := bytes.Clone(pack)
		b[i] ^= 0x55
		p, x := withSum(b)
		check("pack byte flipped", p, x)
		p, x = withSum(bytes.Clone(pack[:i]))
		check("pack truncated", p, x)
		check("pack truncated, checksums not fixed", pack[:i], idx)
	}
	for i := range idx {
		b := bytes.Clone(idx)
		b[i] ^= 0x55
		check("index byte flipped", pack, b)
		check("index truncated", pack, idx[:i])
	}
}
