package gitobj

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestID(t *testing.T) {
	const s = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" // the empty blob
	id, ok := ParseID(s)
	if !ok || id.String() != s {
		t.Fatalf("ParseID(%q) = %v, %v", s, id, ok)
	}
	if BlobID(nil) != id {
		t.Errorf("BlobID(nil) = %v, want %v", BlobID(nil), id)
	}
	if up, ok := ParseID(strings.ToUpper(s)); !ok || up != id {
		t.Errorf("ParseID of uppercase = %v, %v", up, ok)
	}
	for _, bad := range []string{"", s[:39], s + "0", "g" + s[1:], " " + s[1:]} {
		if _, ok := ParseID(bad); ok {
			t.Errorf("ParseID(%q) succeeded", bad)
		}
	}
}

func TestBlobIDMatchesGit(t *testing.T) {
	dir := newWorkTree(t)
	for _, content := range []string{"", "a", "hello\n", strings.Repeat("x\x00y", 1000)} {
		got := BlobID([]byte(content))
		want := mustID(t, string(gitIn(t, dir, []byte(content), "hash-object", "--stdin")))
		if got != want {
			t.Errorf("BlobID(%d bytes) = %v, want %v", len(content), got, want)
		}
	}
}

// randomText returns n lines of pseudo-random words.
func randomText(rng *mrand.Rand, n int) []string {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau")
	lines := make([]string, n)
	for i := range lines {
		var b strings.Builder
		for range 4 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		lines[i] = b.String()
	}
	return lines
}

func TestLoose(t *testing.T) {
	work := newWorkTree(t)
	big := make([]byte, 1<<20)
	rand.Read(big)
	files := map[string]string{
		"a.txt":    "hello\n",
		"empty":    "",
		"binary":   "\x00\x01\x02\xff\x00",
		"big":      string(big),
		"dir/text": strings.Repeat("some text\n", 5000),
	}
	writeFiles(t, work, files)
	git(t, work, "add", ".")
	gitDir := filepath.Join(work, ".git")
	r := openRepo(t, gitDir)
	if len(r.packs) != 0 {
		t.Fatalf("%d packs, want none", len(r.packs))
	}
	for name, content := range files {
		id := mustID(t, git(t, work, "rev-parse", ":"+name))
		if !r.Has(id) {
			t.Errorf("Has(%s) = false", name)
		}
		want := git(t, work, "cat-file", "blob", id.String())
		if want != content {
			t.Fatalf("git cat-file %s differs from the file", name)
		}
		buf := make([]byte, 3, 10)
		for _, max := range []int64{int64(len(content)), math.MaxInt64} {
			got, err := r.ReadBlob(id, buf, max)
			if err != nil || string(got) != content {
				t.Errorf("ReadBlob(%s, max %d) = %d bytes, %v; want %d bytes", name, max, len(got), err, len(content))
			}
		}
		if len(content) > 0 {
			if _, err := r.ReadBlob(id, nil, int64(len(content)-1)); !errors.Is(err, ErrTooLarge) {
				t.Errorf("ReadBlob(%s) with max one byte short: %v, want ErrTooLarge", name, err)
			}
		}
	}

	// A tree is there, but is not a blob.
	git(t, work, "commit", "-qm", "c")
	tree := mustID(t, git(t, work, "rev-parse", "HEAD^{tree}"))
	r = openRepo(t, gitDir)
	if !r.Has(tree) {
		t.Errorf("Has(tree) = false")
	}
	if _, err := r.ReadBlob(tree, nil, 1<<20); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "not a blob") {
		t.Errorf("ReadBlob(tree) = %v, want not a blob", err)
	}

	var random ID
	rand.Read(random[:])
	if r.Has(random) {
		t.Errorf("Has(random id) = true")
	}
	if _, err := r.ReadBlob(random, nil, 1<<20); !errors.Is(err, ErrNotFound) {
		t.Errorf("ReadBlob(random id) = %v, want ErrNotFound", err)
	}
}

// blobsOf returns the blobs of the repository of work, as git reads them:
// those rev-list finds from every ref, or with all, every blob stored.
func blobsOf(t *testing.T, work string, all bool) map[ID][]byte {
	t.Helper()
	var check string
	if all {
		check = git(t, work, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
	} else {
		var list []byte
		for line := range strings.Lines(git(t, work, "rev-list", "--objects", "--all")) {
			id, _, _ := strings.Cut(line, " ")
			list = append(list, strings.TrimSpace(id)+"\n"...)
		}
		check = string(gitIn(t, work, list, "cat-file", "--batch-check=%(objectname) %(objecttype)"))
	}
	var ids []string
	for line := range strings.Lines(check) {
		id, typ, _ := strings.Cut(strings.TrimSpace(line), " ")
		if typ == "blob" {
			ids = append(ids, id)
		}
	}

	out := bufio.NewReader(bytes.NewReader(gitIn(t, work, []byte(strings.Join(ids, "\n")+"\n"), "cat-file", "--batch")))
	blobs := make(map[ID][]byte)
	for range ids {
		hdr, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(out, data); err != nil {
			t.Fatal(err)
		}
		blobs[mustID(t, f[0])] = data[:n]
	}
	return blobs
}

// packTypes counts the objects of each type in the packs of r, and returns
// the longest delta chain git reports for them.
func packTypes(t *testing.T, r *Repo, work string) (types map[int]int, depth int) {
	t.Helper()
	types = make(map[int]int)
	for _, p := range r.packs {
		if err := p.open(r.objects); err != nil {
			t.Fatal(err)
		}
		for i := range p.n {
			off, ok := p.offset(i)
			if !ok {
				t.Fatal("bad offset")
			}
			e, err := p.entry(off)
			if err != nil {
				t.Fatal(err)
			}
			types[e.typ]++
		}
		out := git(t, work, "verify-pack", "-v", filepath.Join(work, ".git", "objects", "pack", p.name+".idx"))
		for _, m := range regexp.MustCompile(`chain length = (\d+)`).FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[1])
			depth = max(depth, n)
		}
	}
	return types, depth
}

func TestPacked(t *testing.T) {
	work := newWorkTree(t)
	rng := mrand.New(mrand.NewPCG(1, 2))
	texts := map[string][]string{}
	for _, name := range []string{"one.txt", "dir/two.txt", "three.md"} {
		texts[name] = randomText(rng, 800)
	}
	var commits []map[string]string
	for c := range 60 {
		files := map[string]string{}
		for name, lines := range texts {
			for range 1 + rng.IntN(5) {
				switch i := rng.IntN(len(lines)); rng.IntN(3) {
				case 0:
					lines[i] = randomText(rng, 1)[0]
				case 1:
					lines = append(lines[:i], lines[i+1:]...)
				default:
					lines = append(lines[:i], append(randomText(rng, 3), lines[i:]...)...)
				}
			}
			texts[name] = lines
			files[name] = strings.Join(lines, "\n")
		}
		files[fmt.Sprintf("small/%d", c)] = fmt.Sprintf("small file %d\n", c)
		commits = append(commits, files)
	}
	fastImport(t, work, commits)
	blobs := blobsOf(t, work, false)
	gitDir := filepath.Join(work, ".git")

	for _, tc := range []struct {
		name  string
		args  []string
		delta int // the type of delta git writes
	}{
		{"ofs", []string{"repack", "-adfq", "--depth=50", "--window=250"}, objOfsDelta},
		{"ref", []string{"-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--depth=50", "--window=250"}, objRefDelta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			git(t, work, tc.args...)
			r := openRepo(t, gitDir)
			if len(r.packs) != 1 {
				t.Fatalf("%d packs, want 1", len(r.packs))
			}
			types, depth := packTypes(t, r, work)
			t.Logf("object types %v, longest chain %d", types, depth)
			if types[tc.delta] < 100 || depth < 10 {
				t.Fatalf("too few deltas to test: types %v, longest chain %d", types, depth)
			}
			for id, want := range blobs {
				if !r.Has(id) {
					t.Errorf("Has(%s) = false", id)
				}
				if got, err := r.ReadBlob(id, nil, math.MaxInt64); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("ReadBlob(%s) = %d bytes, %v; want %d bytes", id, len(got), err, len(want))
				}
			}
			// A delta whose result is over max fails before the work.
			for id, want := range blobs {
				if len(want) > 1000 {
					if _, err := r.ReadBlob(id, nil, int64(len(want)-1)); !errors.Is(err, ErrTooLarge) {
						t.Errorf("ReadBlob with max one byte short: %v, want ErrTooLarge", err)
					}
				}
			}
		})
	}
}

func TestOpenSHA256(t *testing.T) {
	work := newWorkTree(t, "--object-format=sha256")
	if _, err := tryOpen(filepath.Join(work, ".git")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Open of a sha256 repository: %v, want ErrUnsupported", err)
	}
}

func TestOpenBare(t *testing.T) {
	dir := newWorkTree(t, "--bare")
	r := openRepo(t, dir)
	if _, err := r.ReadIndex(1 << 20); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadIndex of a bare repository: %v, want ErrNotExist", err)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{"", true},
		{"[core]\n\trepositoryformatversion = 0\n", true},
		{"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha1\n", true},
		{"[core]\nrepositoryFormatVersion=1\n[Extensions]\n\tObjectFormat = sha256\n", false},
		{"[extensions] objectformat = \"sha256\" ; comment\n", false},
		{"[extensions]\n\tobjectformat = sha\\\n256\n", false},
		{"[extensions]\n\tobjectformat = sha256\n[extensions]\nobjectformat = sha1\n", true},
		{"[extensions \"x\"]\n\tobjectformat = sha256\n", true},
		{"[extensions]\n\t# objectformat = sha256\n\tpartialclone = origin\n", true},
		{"[extensions]\n\tobjectformat\n", false}, // "true"
		{"[core]\n\trepositoryformatversion = 2\n", false},
		{"[core]\n\trepositoryformatversion = x\n", false},
		{"[core\n", false},
		{"[extensions]\n\tobjectformat = \"sha1\n", false},
		{"[extensions]\r\n\tobjectformat = sha1\r\n", true},
		{"=x\n", false},
	} {
		err := checkConfig([]byte(tc.config))
		if (err == nil) != tc.ok {
			t.Errorf("checkConfig(%q) = %v, want ok %v", tc.config, err, tc.ok)
		}
	}

	// An oversized config is not read.
	dir := newGitDir(t)
	os.WriteFile(filepath.Join(dir, "config"), bytes.Repeat([]byte("#\n"), maxConfig), 0o644)
	if _, err := tryOpen(dir); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Open with a 2 MiB config: %v, want ErrTooLarge", err)
	}
}

func TestConcurrent(t *testing.T) {
	work := newWorkTree(t)
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("f%d", i)] = strings.Repeat(fmt.Sprintf("line %d\n", i), 100+i)
	}
	writeFiles(t, work, files)
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "one")
	git(t, work, "repack", "-adq")
	for name, content := range files {
		files[name] = content + "more\n"
	}
	writeFiles(t, work, files)
	git(t, work, "add", ".")
	r := openRepo(t, filepath.Join(work, ".git"))
	blobs := blobsOf(t, work, true)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id, want := range blobs {
				if !r.Has(id) {
					t.Errorf("Has(%s) = false", id)
				}
				if got, err := r.ReadBlob(id, nil, 1<<20); err != nil || !bytes.Equal(got, want) {
					t.Errorf("ReadBlob(%s): %v", id, err)
				}
			}
			if _, err := r.ReadIndex(1 << 20); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
