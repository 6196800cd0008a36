package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sumOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func openStore(t testing.TB, opts *Options) *Store {
	t.Helper()
	return mustOpenAt(t, filepath.Join(t.TempDir(), ".editguard", "history"), opts)
}

// mustOpenAt opens the store at dir, closed when the test ends.
func mustOpenAt(t testing.TB, dir string, opts *Options) *Store {
	t.Helper()
	s, err := openAt(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustSave(t testing.TB, s *Store, path string, content []byte, absent bool) Version {
	t.Helper()
	sum := ""
	if !absent {
		sum = sumOf(content)
	}
	v, err := s.Save(path, content, absent, sum, Meta{Op: "write_file", Session: "s1"})
	if err != nil {
		t.Fatalf("Save(%q) error: %v", path, err)
	}
	return v
}

// countObjects returns the number of object files (not temp files) in s.
func countObjects(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(s.path(), "objects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && validSum(d.Name()) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func ids(vs []Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.ID)
	}
	return out
}

func TestSaveListLoad(t *testing.T) {
	s := openStore(t, nil)
	saves := []struct {
		content string
		absent  bool
	}{
		{"", true}, // the file did not exist
		{"hello\n", false},
		{"", false}, // an empty file is not an absent one
		{"hello, world\n", false},
	}
	var saved []Version
	for _, sv := range saves {
		var c []byte
		if !sv.absent {
			c = []byte(sv.content)
		}
		saved = append(saved, mustSave(t, s, "src/a.go", c, sv.absent))
	}

	list, err := s.List("src/a.go")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), []string{"v000004", "v000003", "v000002", "v000001"}; !slices.Equal(got, want) {
		t.Fatalf("List IDs = %v, want %v (newest first)", got, want)
	}
	for i, sv := range saves {
		v := list[len(list)-1-i]
		if v != saved[i] {
			t.Errorf("List()[%d] = %+v, want %+v as returned by Save", len(list)-1-i, v, saved[i])
		}
		if v.Path != "src/a.go" || v.Op != "write_file" || v.Session != "s1" {
			t.Errorf("version %s = %+v, want path, op and session recorded", v.ID, v)
		}
		if v.Absent != sv.absent {
			t.Errorf("version %s Absent = %v, want %v", v.ID, v.Absent, sv.absent)
		}
		got, data, err := s.Load("src/a.go", v.ID)
		if err != nil {
			t.Fatalf("Load(%s) error: %v", v.ID, err)
		}
		if got != v {
			t.Errorf("Load(%s) version = %+v, want %+v", v.ID, got, v)
		}
		if sv.absent {
			if data != nil || v.SHA256 != "" || v.Size != 0 {
				t.Errorf("absent version %s: content %q, sha256 %q, size %d; want nil, \"\", 0", v.ID, data, v.SHA256, v.Size)
			}
			continue
		}
		if string(data) != sv.content {
			t.Errorf("Load(%s) content = %q, want %q", v.ID, data, sv.content)
		}
		if v.SHA256 != sumOf([]byte(sv.content)) || v.Size != int64(len(sv.content)) {
			t.Errorf("version %s sha256/size = %s/%d, want %s/%d", v.ID, v.SHA256, v.Size, sumOf([]byte(sv.content)), len(sv.content))
		}
	}
	for i := 1; i < len(list); i++ {
		if list[i].Time.After(list[i-1].Time) {
			t.Errorf("List times not newest first: %v after %v", list[i].Time, list[i-1].Time)
		}
	}
}

func TestSaveComputesMissingSum(t *testing.T) {
	s := openStore(t, nil)
	content := []byte("no sum given")
	v, err := s.Save("a", content, false, "", Meta{Op: "edit_file"})
	if err != nil {
		t.Fatal(err)
	}
	if want := sumOf(content); v.SHA256 != want {
		t.Fatalf("Save with sum \"\" recorded sha256 %s, want %s", v.SHA256, want)
	}
	if _, data, err := s.Load("a", v.ID); err != nil || string(data) != string(content) {
		t.Fatalf("Load = %q, %v; want %q, nil", data, err, content)
	}
}

func TestSaveRejectsBadArguments(t *testing.T) {
	s := openStore(t, nil)
	tests := []struct {
		name, path, sum string
	}{
		{"absolute path", "/etc/passwd", ""},
		{"dot-dot", "a/../../b", ""},
		{"dot", ".", ""},
		{"empty", "", ""},
		{"trailing slash", "a/", ""},
		{"short sum", "a", "abc"},
		{"upper-case sum", "a", "ABCDEF0000000000000000000000000000000000000000000000000000000000"},
		{"sum with path", "a", "../../../../../../../../../../../../../../../../../../../tmp/x0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Save(tt.path, []byte("x"), false, tt.sum, Meta{})
			if !errors.Is(err, ErrInvalid) || !errors.Is(err, fs.ErrInvalid) {
				t.Fatalf("Save(%q, sum %q) error = %v, want ErrInvalid", tt.path, tt.sum, err)
			}
		})
	}
	if paths, _ := s.Paths(); len(paths) != 0 {
		t.Fatalf("Paths() after rejected saves = %v, want none", paths)
	}
}

func TestDedup(t *testing.T) {
	s := openStore(t, nil)
	same := []byte("package main\n")
	mustSave(t, s, "a.go", same, false)
	mustSave(t, s, "a.go", same, false)
	mustSave(t, s, "b.go", same, false)
	mustSave(t, s, "b.go", same, false)
	// Deduplicated within a file's history, not across files: each
	// file's objects are its own, so trimming one never touches another.
	if got := countObjects(t, s); got != 2 {
		t.Fatalf("objects after saving one content twice to each of two files = %d, want 2", got)
	}
	mustSave(t, s, "b.go", []byte("other"), false)
	if got := countObjects(t, s); got != 3 {
		t.Fatalf("objects after a second content = %d, want 3", got)
	}
	for _, p := range []string{"a.go", "b.go"} {
		if _, data, err := s.Load(p, "v1"); err != nil || string(data) != string(same) {
			t.Errorf("Load(%s, v1) = %q, %v; want %q", p, data, err, same)
		}
	}
}

func TestReopenSeesSavedVersions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	s1, err := openAt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := mustSave(t, s1, "dir/x.txt", []byte("durable"), false)
	mustSave(t, s1, "dir/new.txt", nil, true)

	s2, err := openAt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, data, err := s2.Load("dir/x.txt", v.ID)
	if err != nil || string(data) != "durable" || got != v {
		t.Fatalf("reopened Load = %+v, %q, %v; want %+v, %q", got, data, err, v, "durable")
	}
	paths, err := s2.Paths()
	if want := []string{"dir/new.txt", "dir/x.txt"}; err != nil || !slices.Equal(paths, want) {
		t.Fatalf("reopened Paths() = %v, %v; want %v", paths, err, want)
	}
	// The next ID continues the sequence rather than restarting it.
	if v2 := mustSave(t, s2, "dir/x.txt", []byte("again"), false); v2.ID != "v000002" {
		t.Fatalf("Save after reopen ID = %s, want v000002", v2.ID)
	}
}

func TestGet(t *testing.T) {
	s := openStore(t, nil)
	v1 := mustSave(t, s, "a", []byte("1"), false)
	mustSave(t, s, "a", []byte("2"), false)
	for _, id := range []string{"v000001", "v1", "1"} {
		if got, err := s.Get("a", id); err != nil || got != v1 {
			t.Errorf("Get(a, %q) = %+v, %v; want %+v", id, got, err, v1)
		}
	}
	tests := []struct {
		path, id string
		want     error
	}{
		{"a", "v000003", ErrNoVersion},
		{"never-saved", "v1", ErrNoVersion},
		{"a", "v0", ErrInvalid},
		{"a", "latest", ErrInvalid},
	}
	for _, tt := range tests {
		_, err := s.Get(tt.path, tt.id)
		if !errors.Is(err, tt.want) {
			t.Errorf("Get(%q, %q) error = %v, want %v", tt.path, tt.id, err, tt.want)
		}
		if _, _, lerr := s.Load(tt.path, tt.id); !errors.Is(lerr, tt.want) {
			t.Errorf("Load(%q, %q) error = %v, want %v", tt.path, tt.id, lerr, tt.want)
		}
	}
	if _, err := s.Get("a", "v9"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Get unknown version error = %v, want it to match fs.ErrNotExist", err)
	}
	var e *Error
	if _, err := s.Get("a", "v9"); !errors.As(err, &e) || e.Path != "a" || e.Version != "v9" {
		t.Errorf("Get unknown version error = %#v, want *Error naming path and version", err)
	}
	if list, err := s.List("never-saved"); err != nil || len(list) != 0 {
		t.Errorf("List(never-saved) = %v, %v; want empty, nil", list, err)
	}
}

func TestSetLedgerSeq(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 2})
	v1 := mustSave(t, s, "a", []byte("1"), false)
	v2 := mustSave(t, s, "a", []byte("2"), false)
	if err := s.SetLedgerSeq("a", v1.ID, 41); err != nil {
		t.Fatal(err)
	}
	if err := s.SetLedgerSeq("a", v2.ID, 42); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for id, want := range map[string]uint64{v1.ID: 41, v2.ID: 42} {
			v, err := s.Get("a", id)
			if err != nil || v.LedgerSeq != want {
				t.Errorf("%s: Get(a, %s).LedgerSeq = %d, %v; want %d", when, id, v.LedgerSeq, err, want)
			}
		}
	}
	check("after SetLedgerSeq")
	// Pruning a third version folds the annotations into the kept lines.
	mustSave(t, s, "a", []byte("3"), false)
	mustSave(t, s, "b", []byte("b"), false)
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("a", v2.ID); err != nil || v.LedgerSeq != 42 {
		t.Errorf("after Prune: Get(a, %s).LedgerSeq = %d, %v; want 42", v2.ID, v.LedgerSeq, err)
	}
	if err := s.SetLedgerSeq("a", "v000009", 1); !errors.Is(err, ErrNoVersion) {
		t.Errorf("SetLedgerSeq(unknown id) error = %v, want ErrNoVersion", err)
	}
	if err := s.SetLedgerSeq("never-saved", "v1", 1); !errors.Is(err, ErrNoVersion) {
		t.Errorf("SetLedgerSeq(unknown path) error = %v, want ErrNoVersion", err)
	}
	if paths, _ := s.Paths(); !slices.Equal(paths, []string{"a", "b"}) {
		t.Errorf("Paths() = %v, want [a b] (SetLedgerSeq must not create history)", paths)
	}
}

func TestOpenDefaults(t *testing.T) {
	tests := []struct {
		opts     *Options
		keep     int
		maxBytes int64
	}{
		{nil, DefaultKeepVersions, DefaultMaxBytes},
		{&Options{}, DefaultKeepVersions, DefaultMaxBytes},
		{&Options{KeepVersions: 3, MaxBytes: -1}, 3, -1},
		{&Options{KeepVersions: -5, MaxBytes: 10}, DefaultKeepVersions, 10},
	}
	for _, tt := range tests {
		s := openStore(t, tt.opts)
		if s.keep != tt.keep || s.maxBytes != tt.maxBytes {
			t.Errorf("Open(%+v) keep, maxBytes = %d, %d; want %d, %d", tt.opts, s.keep, s.maxBytes, tt.keep, tt.maxBytes)
		}
	}
}

// TestNewest finds the newest matching version from the end of the index,
// with ledger annotations applied, as List would give it.
func TestNewest(t *testing.T) {
	s := openStore(t, nil)
	save := func(path, content string, m Meta) Version {
		v, err := s.Save(path, []byte(content), false, sumOf([]byte(content)), m)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := save("a.go", "one\n", Meta{Op: "hook:Edit", Session: "s1"})
	save("b.go", "other file\n", Meta{Op: "hook:Edit", Session: "s1"})
	save("a.go", "two\n", Meta{Op: "hook:Write", Session: "s1"})
	save("a.go", "three\n", Meta{Op: "hook:Edit", Session: "s2"})
	if err := s.SetLedgerSeq("a.go", a.ID, 7); err != nil {
		t.Fatal(err)
	}
	list, err := s.List("a.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		op, session string
		want        int // index in list; -1: none
	}{
		{"hook:Edit", "s1", 2}, {"hook:Write", "s1", 1}, {"hook:Edit", "s2", 0}, {"hook:Write", "s2", -1},
	} {
		v, ok, err := s.Newest("a.go", func(v Version) bool { return v.Op == tc.op && v.Session == tc.session })
		switch {
		case err != nil:
			t.Fatal(err)
		case tc.want < 0 && ok:
			t.Errorf("%s %s: found %+v, want none", tc.op, tc.session, v)
		case tc.want >= 0 && (!ok || v != list[tc.want]):
			t.Errorf("%s %s: %+v %v, want %+v", tc.op, tc.session, v, ok, list[tc.want])
		}
	}
	if v, _, _ := s.Newest("a.go", func(v Version) bool { return v.ID == a.ID }); v.LedgerSeq != 7 {
		t.Errorf("LedgerSeq = %d, want 7 from the annotation", v.LedgerSeq)
	}
	if _, ok, err := s.Newest("none.go", func(Version) bool { return true }); ok || err != nil {
		t.Errorf("a path with no history: %v %v", ok, err)
	}
}

// TestDecodeLine: the light decode of an index line gives what a full
// decode gives, for every shape Save and SetLedgerSeq write and for lines
// it must leave to the full decode.
func TestDecodeLine(t *testing.T) {
	v := Version{ID: "v000007", Path: `a "quoted" dir/f,"data":"x.go`, SHA256: strings.Repeat("ab", 32), Size: 5, Op: "edit_file", Session: "s"}
	var lines [][]byte
	for _, r := range []record{
		{Version: v, Data: json.RawMessage(`"aGVsbG8="`)},
		{Version: v},
		{Kind: kindLedgerSeq, Version: Version{ID: "v000007", Path: "f.go", LedgerSeq: 9}},
		{Version: Version{ID: "v000008", Path: "e.go", Absent: true}},
	} {
		l, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	lines = append(lines,
		[]byte(`{"version":"v000001","path":"x","data":"a\"b"}`),   // an escape in the data: whole decode
		[]byte(`{"version":"v000001","path":"x","data":"","z":1}`), // data not last
		[]byte(`{"version":"v000001","data":"}`),                   // cut short
		[]byte(`{"version":"v000001","path":"x","data":"QQ=="}`),
	)
	for _, l := range lines {
		var full, light record
		errFull := json.Unmarshal(l, &full)
		errLight := decodeLine(l, &light, &light.Data)
		if (errFull == nil) != (errLight == nil) {
			t.Errorf("%s: full decode error %v, light %v", l, errFull, errLight)
			continue
		}
		if errFull == nil && (full.Version != light.Version || full.Kind != light.Kind || string(full.Data) != string(light.Data)) {
			t.Errorf("%s:\nfull  %+v %s\nlight %+v %s", l, full, full.Data, light, light.Data)
		}
	}
}

// TestBackLines: every complete line once, the last first, whatever the
// lines' lengths against the chunks read; a torn tail is no line.
func TestBackLines(t *testing.T) {
	s := openStore(t, nil)
	var want []string
	var text strings.Builder
	for i, n := range []int{10, 0, 20000, 5, 70000, 300000, 3, 16 << 10, 1} {
		if n == 0 {
			text.WriteString("\n") // blank: skipped
			continue
		}
		l := fmt.Sprintf("%d:%s", i, strings.Repeat("x", n))
		want = append([]string{l}, want...)
		text.WriteString(l + "\n")
	}
	good := int64(text.Len())
	text.WriteString("torn tail without its newline")
	if err := s.index.WriteFile("t", []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := s.index.Open("t", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	g, err := backLines(f, func(line []byte) (bool, error) {
		got = append(got, string(line))
		return false, nil
	})
	if err != nil || g != good {
		t.Fatalf("backLines = %d, %v; want %d", g, err, good)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %d lines, want %d (or in another order)", len(got), len(want))
	}
	// Stopping early.
	n := 0
	backLines(f, func([]byte) (bool, error) { n++; return n == 2, nil })
	if n != 2 {
		t.Fatalf("fn called %d times after asking to stop at 2", n)
	}
}

// TestSaveLater: with Meta.Later, Save returns before trimming, and hands
// over the trim, which cuts the file's versions back when it runs.
func TestSaveLater(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 4})
	var later []func()
	meta := Meta{Op: "hook:Edit", Session: "s", Later: func(f func()) { later = append(later, f) }}
	for i := range 12 {
		if _, err := s.Save("a", []byte(fmt.Sprintf("version %d", i)), false, "", meta); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 12 || len(later) == 0 {
		t.Fatalf("before the trims ran: %d versions and %d trims handed over; want 12 and some", len(list), len(later))
	}
	for _, f := range later {
		f()
	}
	if list, err = s.List("a"); err != nil || len(list) > 5 {
		t.Errorf("after the trims: %d versions, %v; want at most 5 (4 kept, a quarter more allowed)", len(list), err)
	}
	if list[0].SHA256 != sumOf([]byte("version 11")) {
		t.Errorf("the newest version is %s, want version 11's", list[0].SHA256)
	}
}

// TestSyncIndexesOneDirectoryFsync checks that SyncIndexes fsyncs each
// index and the index directory once for all the names it has not made
// durable yet, and not again for names already durable.
func TestSyncIndexesOneDirectoryFsync(t *testing.T) {
	s := openStore(t, nil)
	paths := []string{"a.txt", "b.txt", "c.txt"}
	for _, p := range paths {
		content := []byte("content of " + p)
		if _, err := s.Save(p, content, false, sumOf(content), Meta{Op: "write_file", Lazy: true}); err != nil {
			t.Fatal(err)
		}
	}
	// As after a trim, which rewrites an index under a new inode: the
	// names are not known durable.
	s.durable.Clear()
	var files, dirs int
	s.SetHook(func(op, name string) error {
		switch op {
		case "fsync":
			files++
		case "fsync dir":
			dirs++
		}
		return nil
	})
	if err := s.SyncIndexes(append(paths, "never-saved.txt")); err != nil {
		t.Fatal(err)
	}
	if files != 3 || dirs != 1 {
		t.Errorf("first sync: %d index fsyncs and %d directory fsyncs, want 3 and 1", files, dirs)
	}
	files, dirs = 0, 0
	if err := s.SyncIndexes(paths); err != nil {
		t.Fatal(err)
	}
	if files != 3 || dirs != 0 {
		t.Errorf("second sync: %d index fsyncs and %d directory fsyncs, want 3 and 0", files, dirs)
	}
}
