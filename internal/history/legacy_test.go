package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLegacyLayout opens a store written before per-file objects (objects
// shared by all files in objects/<sum[:2]>/<sum>, no running total): its
// versions load, the first Save asks for a Prune, and that Prune moves the
// referenced objects into their files' directories and removes the rest.
func TestLegacyLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	shared, dropped := []byte("shared"), []byte("dropped")
	for _, c := range [][]byte{shared, dropped} {
		name := filepath.Join(dir, "objects", sumOf(c)[:2], sumOf(c))
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, c, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "index"), 0o755)
	index := func(path string, contents ...[]byte) {
		var b []byte
		for i, c := range contents {
			line, _ := json.Marshal(Version{ID: formatID(uint64(i + 1)), Time: time.Now().UTC(), Path: path, SHA256: sumOf(c), Size: int64(len(c)), Op: "write_file"})
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "index", indexName(path)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	index("a", dropped, shared)
	index("b", shared)

	s := mustOpenAt(t, dir, &Options{KeepVersions: 1})
	if _, data, err := s.Load("b", "v1"); err != nil || string(data) != "shared" {
		t.Fatalf("Load(b, v1) of the old layout = %q, %v; want %q", data, err, "shared")
	}
	if _, data, err := s.Load("a", "v2"); err != nil || string(data) != "shared" {
		t.Fatalf("Load(a, v2) of the old layout = %q, %v; want %q", data, err, "shared")
	}
	mustSave(t, s, "c", []byte("new"), false)
	if !s.OverCap() {
		t.Fatal("OverCap() = false after the first Save into a store with no total, want true")
	}
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if st.VersionsRemoved != 1 {
		t.Errorf("Prune = %+v, want a's v1 dropped", st)
	}
	for _, name := range []string{filepath.Join("objects", sumOf(shared)[:2], sumOf(shared)), filepath.Join("objects", sumOf(dropped)[:2], sumOf(dropped))} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("old-layout object %s left after Prune: %v", name, err)
		}
	}
	for _, p := range []string{"a", "b"} {
		vs, err := s.List(p)
		if err != nil || len(vs) != 1 {
			t.Fatalf("List(%s) = %v, %v; want one version", p, ids(vs), err)
		}
		if _, data, err := s.Load(p, vs[0].ID); err != nil || string(data) != "shared" {
			t.Errorf("Load(%s, %s) after migration = %q, %v; want %q", p, vs[0].ID, data, err, "shared")
		}
	}
	if got := countObjects(t, s); got != 3 {
		t.Errorf("objects after migration = %d, want 3 (shared for a and b, new for c)", got)
	}
	data, err := os.ReadFile(filepath.Join(dir, totalName))
	if err != nil || string(data) != string(formatTotal(st.BytesKept, 0)) {
		t.Errorf("total = %q, %v; want %q", data, err, formatTotal(st.BytesKept, 0))
	}
}
