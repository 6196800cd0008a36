package history

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSaveTrims(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 3})
	mustSave(t, s, "other.txt", []byte("version 1"), false)
	for i := 1; i <= 10; i++ {
		mustSave(t, s, "a.txt", []byte(fmt.Sprintf("version %d", i)), false)
	}
	list, err := s.List("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), []string{"v000010", "v000009", "v000008"}; !slices.Equal(got, want) {
		t.Fatalf("List after 10 Saves = %v, want %v", got, want)
	}
	for i, v := range list {
		want := fmt.Sprintf("version %d", 10-i)
		if _, data, err := s.Load("a.txt", v.ID); err != nil || string(data) != want {
			t.Errorf("Load(%s) = %q, %v; want %q", v.ID, data, err, want)
		}
	}
	if _, err := s.Get("a.txt", "v000007"); !errors.Is(err, ErrNoVersion) {
		t.Errorf("Get(trimmed v000007) error = %v, want ErrNoVersion", err)
	}
	// a.txt's 3 and other.txt's 1 ("version 1" is also a.txt's first
	// content, trimmed from a.txt but not from other.txt).
	if got := countObjects(t, s); got != 4 {
		t.Errorf("objects after trimming = %d, want 4", got)
	}
	if _, data, err := s.Load("other.txt", "v1"); err != nil || string(data) != "version 1" {
		t.Errorf("Load(other.txt, v1) = %q, %v; want %q", data, err, "version 1")
	}
	// IDs continue after trimming; they are never reused.
	if v := mustSave(t, s, "a.txt", []byte("version 11"), false); v.ID != "v000011" {
		t.Errorf("Save after trimming ID = %s, want v000011", v.ID)
	}
	// Nothing is left for Prune.
	st, err := s.Prune()
	if err != nil || st.VersionsRemoved != 0 || st.ObjectsRemoved != 0 || st.Files != 2 {
		t.Errorf("Prune after Saves that trim = %+v, %v; want nothing removed from 2 files", st, err)
	}
	if want := int64(3*len("version 10") - 1 + len("version 1")); st.BytesKept != want {
		t.Errorf("PruneStats.BytesKept = %d, want %d", st.BytesKept, want)
	}
}

// TestSaveTrimFoldsAnnotations checks that a trim keeps the ledger
// sequence numbers of the versions it keeps.
func TestSaveTrimFoldsAnnotations(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 2})
	for i := 1; i <= 4; i++ {
		v := mustSave(t, s, "a", []byte(fmt.Sprint(i)), false)
		if err := s.SetLedgerSeq("a", v.ID, uint64(100+i)); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].LedgerSeq != 104 || list[1].LedgerSeq != 103 {
		t.Fatalf("List = %+v, want v4 (ledger 104) and v3 (ledger 103)", list)
	}
}

func TestPruneMaxBytes(t *testing.T) {
	const size = 100
	type save struct {
		path string
		fill byte // the content is size bytes of fill
		abs  bool // an absent version
	}
	tests := []struct {
		name     string
		maxBytes int64
		saves    []save
		want     map[string][]string // path -> remaining IDs, newest first
	}{{
		name:     "oldest across files go first",
		maxBytes: 350,
		saves:    []save{{"a", 'a', false}, {"b", 'b', false}, {"c", 'c', false}, {"a", 'A', false}, {"b", 'B', false}, {"c", 'C', false}},
		want:     map[string][]string{"a": {"v000002"}, "b": {"v000002"}, "c": {"v000002"}},
	}, {
		name:     "stops as soon as under the cap",
		maxBytes: 450,
		saves:    []save{{"a", 'a', false}, {"b", 'b', false}, {"c", 'c', false}, {"a", 'A', false}, {"b", 'B', false}, {"c", 'C', false}},
		want:     map[string][]string{"a": {"v000002"}, "b": {"v000002"}, "c": {"v000002", "v000001"}},
	}, {
		name:     "never the newest of a file, even over the cap",
		maxBytes: 150,
		saves:    []save{{"a", '1', false}, {"a", '2', false}, {"a", '3', false}, {"b", '4', false}},
		want:     map[string][]string{"a": {"v000003"}, "b": {"v000001"}},
	}, {
		name:     "absent versions hold no bytes but are dropped in age order",
		maxBytes: 100,
		saves:    []save{{"a", 0, true}, {"a", '1', false}, {"a", '2', false}},
		want:     map[string][]string{"a": {"v000003"}},
	}, {
		name:     "content shared by two files is counted for each",
		maxBytes: 300,
		saves:    []save{{"a", 'x', false}, {"b", 'x', false}, {"a", 'y', false}, {"b", 'z', false}},
		want:     map[string][]string{"a": {"v000002"}, "b": {"v000002", "v000001"}},
	}, {
		name:     "unlimited",
		maxBytes: -1,
		saves:    []save{{"a", '1', false}, {"a", '2', false}, {"b", '3', false}},
		want:     map[string][]string{"a": {"v000002", "v000001"}, "b": {"v000001"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, &Options{MaxBytes: tt.maxBytes})
			for _, sv := range tt.saves {
				mustSave(t, s, sv.path, []byte(strings.Repeat(string(sv.fill), size)), sv.abs)
			}
			if _, err := s.Prune(); err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.want {
				list, err := s.List(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := ids(list); !slices.Equal(got, want) {
					t.Errorf("List(%s) after Prune = %v, want %v", path, got, want)
				}
				for _, v := range list {
					if _, _, err := s.Load(path, v.ID); err != nil {
						t.Errorf("Load(%s, %s): %v", path, v.ID, err)
					}
				}
			}
		})
	}
}

func TestPruneRemovesLeftovers(t *testing.T) {
	s := openStore(t, nil)
	mustSave(t, s, "a", []byte("kept"), false)
	orphan := []byte("written by a Save that died before its index line")
	orphanName := s.objectPath("a", sumOf(orphan))
	legacy := filepath.Join(s.path(), "objects", sumOf(orphan)[:2], sumOf(orphan))
	leftovers := []string{
		orphanName,
		legacy,
		filepath.Join(filepath.Dir(orphanName), ".tmp-123"),
		filepath.Join(s.path(), "index", ".tmp-456"),
	}
	for _, name := range leftovers {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, orphan, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range leftovers {
		if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived Prune (stat error %v)", name, err)
		}
	}
	if st.ObjectsRemoved != 2 || st.BytesRemoved != 3*int64(len(orphan)) {
		t.Errorf("PruneStats = %+v, want 2 objects and %d bytes removed", st, 3*len(orphan))
	}
	if _, data, err := s.Load("a", "v1"); err != nil || string(data) != "kept" {
		t.Errorf("Load(a, v1) = %q, %v; want %q", data, err, "kept")
	}
}

// TestOverCap checks that Saves report when the running total passes the
// cap, that Prune resets it, and that a store whose newest versions alone
// exceed the cap is not reported again at every Save.
func TestOverCap(t *testing.T) {
	s := openStore(t, &Options{MaxBytes: 250})
	if s.OverCap() {
		t.Fatal("OverCap() on a new store = true, want false")
	}
	fill := func(c byte) []byte { return []byte(strings.Repeat(string(c), 100)) }
	mustSave(t, s, "a", fill('a'), false)
	mustSave(t, s, "b", fill('b'), false)
	if s.OverCap() {
		t.Fatal("OverCap() at 200 of 250 bytes = true, want false")
	}
	mustSave(t, s, "a", fill('A'), false)
	if !s.OverCap() {
		t.Fatal("OverCap() at 300 of 250 bytes = false, want true")
	}
	if s.OverCap() {
		t.Fatal("second OverCap() = true, want the report cleared")
	}
	st, err := s.Prune()
	if err != nil || st.BytesKept != 200 {
		t.Fatalf("Prune() = %+v, %v; want 200 bytes kept", st, err)
	}
	// Three files' newest versions: 300 bytes, over the cap for good.
	mustSave(t, s, "c", fill('c'), false)
	if !s.OverCap() {
		t.Fatal("OverCap() at 300 of 250 bytes = false, want true")
	}
	if st, err := s.Prune(); err != nil || st.BytesKept != 300 || st.VersionsRemoved != 0 {
		t.Fatalf("Prune() = %+v, %v; want 300 bytes kept, nothing removed", st, err)
	}
	mustSave(t, s, "d", nil, true)
	mustSave(t, s, "c", fill('c'), false)
	if s.OverCap() {
		t.Fatal("OverCap() with no growth past what Prune could not remove = true, want false")
	}
}

// TestTotalKeptWithoutCap checks that a store opened without a cap still
// counts its bytes, so that opening it with a cap later sees them.
func TestTotalKeptWithoutCap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	s := mustOpenAt(t, dir, &Options{MaxBytes: -1})
	mustSave(t, s, "a", []byte(strings.Repeat("a", 300)), false)
	if s.OverCap() {
		t.Fatal("OverCap() without a cap = true, want false")
	}
	s2 := mustOpenAt(t, dir, &Options{MaxBytes: 250})
	mustSave(t, s2, "b", []byte("b"), false)
	if !s2.OverCap() {
		t.Fatal("OverCap() at 301 of 250 bytes after saving without a cap = false, want true")
	}
}
