package crashsim

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func states(t *testing.T, ops []Op) (contents map[string]bool, n int) {
	t.Helper()
	initial := &FS{Dirs: map[string]bool{".": true}, Files: map[string]int{"a": 1}, Data: map[int][]byte{1: []byte("old")}}
	contents = map[string]bool{}
	n, err := CrashStates(initial, ops, func(s State) error {
		b, ok := s.FS.File("a")
		if !ok {
			contents["<missing>"] = true
		} else {
			contents[string(b)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return contents, n
}

// The textbook replace: with the fsync of the temporary file, only the
// old or the new content can be found under the name.
func TestReplaceWithFsyncIsAtomic(t *testing.T) {
	ops := []Op{
		{Kind: Create, Path: ".a.tmp", Dir: ".", Ino: 2},
		{Kind: Write, Ino: 2, Data: []byte("new content")},
		{Kind: SyncFile, Ino: 2},
		{Kind: Rename, Path: ".a.tmp", To: "a", Dir: "."},
		{Kind: SyncDir, Dir: "."},
	}
	got, n := states(t, ops)
	if len(got) != 2 || !got["old"] || !got["new content"] {
		t.Errorf("contents of a over %d states = %v, want only old and new content", n, keys(got))
	}
}

// Without the fsync, the simulator must find the torn and empty files a
// power cut can leave.
func TestReplaceWithoutFsyncTears(t *testing.T) {
	ops := []Op{
		{Kind: Create, Path: ".a.tmp", Dir: ".", Ino: 2},
		{Kind: Write, Ino: 2, Data: []byte("new content")},
		{Kind: Rename, Path: ".a.tmp", To: "a", Dir: "."},
	}
	got, _ := states(t, ops)
	for _, want := range []string{"", "n", "new c", "new conten"} {
		if !got[want] {
			t.Errorf("contents of a = %v, want %q among them", keys(got), want)
		}
	}
}

// An entry change after the directory's last fsync may be lost, and
// directories are independent.
func TestUnsyncedRenameMayBeLost(t *testing.T) {
	ops := []Op{
		{Kind: Create, Path: "b", Dir: ".", Ino: 2},
		{Kind: SyncDir, Dir: "."},
		{Kind: Unlink, Path: "a", Dir: "."},
	}
	got, _ := states(t, ops)
	if !got["old"] || !got["<missing>"] {
		t.Errorf("contents of a = %v, want both old and missing", keys(got))
	}
}

func TestParseStrace(t *testing.T) {
	log := `10426 openat(5<\x2f\x72>, "\x2e\x61\x2e\x74\x6d\x70", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 8<\x2f\x72\x2f\x2e\x61\x2e\x74\x6d\x70>
10427 write(8<\x2f\x72\x2f\x2e\x61\x2e\x74\x6d\x70>, "\x6e\x65\x77", 3 <unfinished ...>
10426 fsync(5<\x2f\x72>) = 0
10427 <... write resumed>) = 3
10426 renameat2(5<\x2f\x72>, "\x2e\x61\x2e\x74\x6d\x70", 5<\x2f\x72>, "\x61", RENAME_EXCHANGE) = 0
10426 unlinkat(5<\x2f\x72>, "\x6e\x6f", 0) = -1 ENOENT (No such file or directory)
`
	calls, err := ParseStrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := callNames(calls), "openat fsync write renameat2 unlinkat"; got != want {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	if c := calls[0]; c.Path != "/r/.a.tmp" || c.Args[0].Path != "/r" || string(c.Args[1].Str) != ".a.tmp" || c.Ret != 8 {
		t.Errorf("openat = %+v", c)
	}
	if c := calls[2]; string(c.Args[1].Str) != "new" || c.Ret != 3 {
		t.Errorf("joined write = %+v", c)
	}
	if c := calls[4]; c.Ret != -1 || c.Err != "ENOENT" {
		t.Errorf("unlinkat = %+v", c)
	}
	initial := &FS{Dirs: map[string]bool{".": true}, Files: map[string]int{"a": 1}, Data: map[int][]byte{1: []byte("old")}}
	ops, err := Replay(calls, "/r", initial)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range ops {
		kinds = append(kinds, o.Kind.String())
	}
	if got, want := strings.Join(kinds, ","), "create,fsync dir,write,exchange"; got != want {
		t.Errorf("ops = %s, want %s", got, want)
	}
	if fs := Apply(initial, ops); string(must(fs.File("a"))) != "new" || string(must(fs.File(".a.tmp"))) != "old" {
		t.Errorf("Apply() = %v", fs.Files)
	}
}

func must(b []byte, ok bool) []byte { return b }

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// SampleStates always includes, for every prefix, the states with all and
// with none of the unsynced operations persisted, and draws the others
// from the states CrashStates enumerates.
func TestSampleStates(t *testing.T) {
	ops := []Op{
		{Kind: Create, Path: ".a.tmp", Dir: ".", Ino: 2},
		{Kind: Write, Ino: 2, Data: []byte("new content")},
		{Kind: Rename, Path: ".a.tmp", To: "a", Dir: "."},
	}
	initial := &FS{Dirs: map[string]bool{".": true}, Files: map[string]int{"a": 1}, Data: map[int][]byte{1: []byte("old")}}
	all := map[[32]byte]bool{}
	if _, err := CrashStates(initial, ops, func(s State) error {
		all[s.FS.sum()] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sample := func(perPrefix int) (map[string]bool, int) {
		contents := map[string]bool{}
		n, err := SampleStates(initial, ops, perPrefix, rand.New(rand.NewPCG(1, 2)), func(s State) error {
			if !all[s.FS.sum()] {
				t.Errorf("sampled a state CrashStates does not have: %v", s.FS.Files)
			}
			b, ok := s.FS.File("a")
			if !ok {
				b = []byte("<missing>")
			}
			contents[string(b)] = true
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return contents, n
	}
	got, n := sample(0)
	if !got["old"] || !got["new content"] {
		t.Errorf("extremes only: contents of a over %d states = %v, want old and new content", n, keys(got))
	}
	if n >= len(all) {
		t.Errorf("extremes only visited %d states, want fewer than all %d", n, len(all))
	}
	if _, n := sample(200); n != len(all) {
		t.Errorf("200 draws per prefix visited %d states, want all %d", n, len(all))
	}
}

// A link is a new name for the same inode: it persists with its
// directory's fsync, independently of the old name, and a materialized
// state makes the two names one file.
func TestLink(t *testing.T) {
	log := `7 linkat(5<\x2f\x72>, "\x61", 6<\x2f\x72\x2f\x68>, "\x6f", 0) = 0
7 fsync(6<\x2f\x72\x2f\x68>) = 0
7 unlinkat(5<\x2f\x72>, "\x61", 0) = 0
`
	calls, err := ParseStrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	initial := &FS{Dirs: map[string]bool{".": true, "h": true}, Files: map[string]int{"a": 1}, Data: map[int][]byte{1: []byte("old")}}
	ops, err := Replay(calls, "/r", initial)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 || ops[0].Kind != Create || ops[0].Path != "h/o" || ops[0].Ino != 1 || ops[0].Dir != "h" {
		t.Fatalf("ops = %v, want a create of h/o naming inode 1, its directory's fsync, the unlink", ops)
	}
	seen := map[string]bool{}
	CrashStates(initial, ops, func(st State) error {
		_, a := st.FS.File("a")
		o, ho := st.FS.File("h/o")
		if ho && string(o) != "old" {
			t.Errorf("h/o = %q, want the linked file's bytes", o)
		}
		seen[fmt.Sprint(a, ho)] = true
		if a && ho {
			dir := t.TempDir()
			if err := st.FS.Materialize(dir); err != nil {
				t.Fatal(err)
			}
			fa, _ := os.Stat(filepath.Join(dir, "a"))
			fo, _ := os.Stat(filepath.Join(dir, "h", "o"))
			if !os.SameFile(fa, fo) {
				t.Errorf("materialized a and h/o are two files, want one with two names")
			}
		}
		return nil
	})
	// Before the fsync: a alone, or both; after it: both, or h/o alone.
	for _, want := range []string{"true false", "true true", "false true"} {
		if !seen[want] {
			t.Errorf("states (a exists, h/o exists) = %v, want %q among them", seen, want)
		}
	}
}

// TestSyncAllIsABarrier checks that a syncfs makes every operation before
// it durable, in every directory and file, and none after it.
func TestSyncAllIsABarrier(t *testing.T) {
	initial := &FS{Dirs: map[string]bool{".": true, "d": true}, Files: map[string]int{}, Data: map[int][]byte{}}
	ops := []Op{
		{Kind: Create, Path: "a", Dir: ".", Ino: 1},
		{Kind: Write, Ino: 1, Data: []byte("aa")},
		{Kind: Create, Path: "d/b", Dir: "d", Ino: 2},
		{Kind: SyncAll},
		{Kind: Write, Ino: 2, Data: []byte("bb")},
	}
	n, err := CrashStates(initial, ops, func(st State) error {
		if st.After < 4 {
			return nil
		}
		if string(st.FS.Data[st.FS.Files["a"]]) != "aa" {
			t.Errorf("after %d operations a = %q, want it durable", st.After, st.FS.Data[st.FS.Files["a"]])
		}
		if _, ok := st.FS.Files["d/b"]; !ok {
			t.Errorf("after %d operations d/b is lost", st.After)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// After the last write: b's bytes may persist none, a byte, or all.
	if n < 4 {
		t.Errorf("%d states; want the unsynced write's ways too", n)
	}
}

// A close split by another thread's calls gives its descriptor up where it
// begins: a file another thread opens under the same number meanwhile is
// written through it, though the close's end is logged after.
func TestParseStraceCloseAtItsStart(t *testing.T) {
	log := `20 close(8<\x2f\x72\x2f\x61> <unfinished ...>
21 openat(5<\x2f\x72>, "\x62", O_WRONLY|O_CREAT|O_APPEND|O_CLOEXEC, 0600) = 8<\x2f\x72\x2f\x62>
21 write(8<\x2f\x72\x2f\x62>, "\x78", 1) = 1
20 <... close resumed>) = 0
`
	calls, err := ParseStrace(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := callNames(calls), "close openat write"; got != want {
		t.Fatalf("calls = %q, want %q", got, want)
	}
	if c := calls[0]; c.PID != 20 || c.Args[0].FD != 8 {
		t.Errorf("close = %+v", c)
	}
	initial := &FS{Dirs: map[string]bool{".": true}, Files: map[string]int{"a": 1}, Data: map[int][]byte{1: []byte("old")}}
	ops, err := Replay(calls, "/r", initial)
	if err != nil {
		t.Fatal(err)
	}
	if fs := Apply(initial, ops); string(must(fs.File("b"))) != "x" {
		t.Errorf("b = %q after the replay", must(fs.File("b")))
	}
}

// callNames is the names of calls, in order, separated by spaces.
func callNames(calls []Syscall) string {
	var names []string
	for _, c := range calls {
		names = append(names, c.Name)
	}
	return strings.Join(names, " ")
}
