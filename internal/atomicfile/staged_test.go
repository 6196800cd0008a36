//go:build linux

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStagedChangesTogether stages a replacement, a creation and a
// removal, closes them unsynced (SkipSync), syncs them with one syncfs,
// swaps them all, syncs the directory
// once and finishes them: the tree is as after, with no temporary file, and
// the calls are in that order.
func TestStagedChangesTogether(t *testing.T) {
	d, dir := openDir(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a old"), 0o644)
	os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("gone"), 0o644)
	var ops []string
	d.SetHook(func(c *Call) error { ops = append(ops, c.Op); return nil })
	opts := Options{UID: -1, GID: -1}
	a, err := d.StageReplace("a.txt", []byte("a new"), sum([]byte("a old")), opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.StageCreate("b.txt", []byte("b new"), opts)
	if err != nil {
		t.Fatal(err)
	}
	g, err := d.StageRemove("gone.txt", sum([]byte("gone")), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Staged{a, b, g} {
		if err := s.SkipSync(); err != nil {
			t.Fatal(err)
		}
	}
	if slices.Contains(ops, "fsync") {
		t.Errorf("staging with SkipSync fsynced: %v", ops)
	}
	if err := d.SyncFS(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Staged{a, b, g} {
		if err := s.Swap(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Staged{a, b, g} {
		r, err := s.Finish()
		if err != nil || r.Strategy == "" {
			t.Fatalf("Finish() = %+v, %v", r, err)
		}
	}
	if got := listDir(t, dir); !slices.Equal(got, []string{"a.txt", "b.txt"}) {
		t.Errorf("directory = %v, want a.txt and b.txt only", got)
	}
	for name, want := range map[string]string{"a.txt": "a new", "b.txt": "b new"} {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	syncfs, dirSync := slices.Index(ops, "syncfs"), -1
	for i, op := range ops {
		if op == "fsync" {
			dirSync = i
		}
	}
	firstSwap := slices.Index(ops, "renameat2")
	if syncfs < 0 || firstSwap < syncfs || dirSync < firstSwap || slices.Contains(ops[:syncfs], "fsync") {
		t.Errorf("calls %v: want the temporary files unsynced, one syncfs, the swaps, then one directory fsync", ops)
	}
}

// TestStagedRacedAndAborted checks a staged replacement whose target
// another program changed (ErrRaced at Swap, the target keeps the other
// program's bytes) and one aborted before its swap: neither leaves a
// temporary file.
func TestStagedRacedAndAborted(t *testing.T) {
	d, dir := openDir(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a old"), 0o644)
	os.WriteFile(filepath.Join(dir, "c.txt"), []byte("c old"), 0o644)
	opts := Options{UID: -1, GID: -1}
	a, err := d.StageReplace("a.txt", []byte("a new"), sum([]byte("a old")), opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.StageReplace("c.txt", []byte("c new"), sum([]byte("c old")), opts)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a theirs"), 0o644)
	if err := a.Swap(); !errors.Is(err, ErrRaced) {
		t.Fatalf("Swap() of a changed target = %v, want ErrRaced", err)
	}
	c.Abort()
	a.Abort() // nothing left to do
	if got := listDir(t, dir); !slices.Equal(got, []string{"a.txt", "c.txt"}) {
		t.Errorf("directory = %v, want no temporary file", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "a theirs" {
		t.Errorf("a.txt = %q, want the other program's bytes", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "c.txt")); string(got) != "c old" {
		t.Errorf("c.txt = %q, want it untouched", got)
	}
}

func TestKernelVersion(t *testing.T) {
	for _, c := range []struct {
		release      string
		major, minor int
		ok           bool
	}{
		{"6.18.44-fc-v782", 6, 18, true},
		{"5.8.0", 5, 8, true},
		{"5.4-rc1", 5, 4, true},
		{"4.19.0-25-amd64", 4, 19, true},
		{"garbage", 0, 0, false},
	} {
		major, minor, ok := kernelVersion(c.release)
		if major != c.major || minor != c.minor || ok != c.ok {
			t.Errorf("kernelVersion(%q) = %d, %d, %v; want %d, %d, %v", c.release, major, minor, ok, c.major, c.minor, c.ok)
		}
	}
}

// TestSyncFSStandsIn checks the answer for a directory on this machine's
// temporary file system against its type.
func TestSyncFSStandsIn(t *testing.T) {
	d, dir := openDir(t)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	want := syncfsErrors()
	switch uint32(st.Type) {
	case ext4Magic, xfsMagic, btrfsMagic, f2fsMagic:
	default:
		want = false
	}
	if got := d.SyncFSStandsIn(); got != want {
		t.Errorf("SyncFSStandsIn() = %v on a file system of type %#x, want %v", got, st.Type, want)
	}
}

// TestStagedSyncBeforeSwap checks that the new content is durable under
// its temporary name before its name changes, whether the caller syncs it
// (Sync) or leaves that to Swap, and that Abort after a failed Sync has
// nothing left to remove.
func TestStagedSyncBeforeSwap(t *testing.T) {
	for _, explicit := range []bool{true, false} {
		d, dir := openDir(t)
		os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a old"), 0o644)
		var ops []string
		d.SetHook(func(c *Call) error { ops = append(ops, c.Op); return nil })
		s, err := d.StageReplace("a.txt", []byte("a new"), sum([]byte("a old")), Options{UID: -1, GID: -1})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(ops, "fsync") {
			t.Errorf("staging fsynced before Sync: %v", ops)
		}
		if explicit {
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Swap(); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Finish(); err != nil {
			t.Fatal(err)
		}
		want := []string{"openat", "write", "fsync", "renameat2", "openat", "fsync", "unlinkat"}
		if !slices.Equal(ops, want) {
			t.Errorf("explicit Sync %v: calls %v, want %v", explicit, ops, want)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "a new" {
			t.Errorf("a.txt = %q, want the new content", got)
		}
	}

	d, dir := openDir(t)
	failed := errors.New("injected")
	d.SetHook(func(c *Call) error {
		if c.Op == "fsync" {
			return failed
		}
		return nil
	})
	s, err := d.StageCreate("n.txt", []byte("new"), Options{UID: -1, GID: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); !errors.Is(err, failed) {
		t.Fatalf("Sync() = %v, want the injected failure", err)
	}
	s.Abort()
	if err := s.Swap(); !errors.Is(err, ErrEnded) {
		t.Errorf("Swap() after a failed Sync = %v, want ErrEnded", err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("directory = %v after a failed Sync, want it empty", got)
	}
}

// TestOptionsCarryNoCallbacks keeps atomicfile from calling its caller:
// what a caller does between the steps of a change it does between the
// calls of Staged's methods, not through a function it hands in.
func TestOptionsCarryNoCallbacks(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		if f := typ.Field(i); f.Type.Kind() == reflect.Func {
			t.Errorf("Options.%s is a function (%s): run the caller's work between the staged steps instead", f.Name, f.Type)
		}
	}
	if typ.NumField() == 0 {
		t.Fatal("Options has no fields: the check looks at nothing")
	}
}
