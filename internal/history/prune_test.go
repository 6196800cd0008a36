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

func TestPruneKeepVersions(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 3})
	for i := 1; i <= 10; i++ {
		mustSave(t, s, "a.txt", []byte(fmt.Sprintf("version %d", i)), false)
	}
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), []string{"v000010", "v000009", "v000008"}; !slices.Equal(got, want) {
		t.Fatalf("List after Prune = %v, want %v", got, want)
	}
	for i, v := range list {
		want := fmt.Sprintf("version %d", 10-i)
		if _, data, err := s.Load("a.txt", v.ID); err != nil || string(data) != want {
			t.Errorf("Load(%s) = %q, %v; want %q", v.ID, data, err, want)
		}
	}
	if _, err := s.Get("a.txt", "v000007"); !errors.Is(err, ErrNoVersion) {
		t.Errorf("Get(pruned v000007) error = %v, want ErrNoVersion", err)
	}
	if got := countObjects(t, s); got != 3 {
		t.Errorf("objects after Prune = %d, want 3", got)
	}
	// The versions were dropped as the later ones were saved (KeepVersions
	// holds at Save time); Prune removes their objects.
	if st.VersionsRemoved != 0 || st.ObjectsRemoved != 7 || st.Files != 1 {
		t.Errorf("PruneStats = %+v, want 7 objects removed from 1 file, its versions already trimmed", st)
	}
	if want := int64(3 * len("version 10")); st.BytesKept != want-2 {
		// "version 8", "version 9" are one byte shorter than "version 10".
		t.Errorf("PruneStats.BytesKept = %d, want %d", st.BytesKept, want-2)
	}
	// IDs continue after pruning; they are never reused.
	if v := mustSave(t, s, "a.txt", []byte("version 11"), false); v.ID != "v000011" {
		t.Errorf("Save after Prune ID = %s, want v000011", v.ID)
	}
	// A second Prune with nothing over the limit changes nothing but the one new version.
	st, err = s.Prune()
	if err != nil || st.VersionsRemoved != 0 || st.ObjectsRemoved != 1 {
		t.Errorf("second Prune = %+v, %v; want the object of the version trimmed at Save removed", st, err)
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
		name:     "shared content is counted once",
		maxBytes: 200,
		saves:    []save{{"a", 'x', false}, {"b", 'x', false}, {"a", 'y', false}, {"b", 'z', false}},
		want:     map[string][]string{"a": {"v000002"}, "b": {"v000002"}},
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

func TestPruneKeepsSharedObjects(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 1})
	shared := []byte("shared content")
	mustSave(t, s, "a", shared, false)
	mustSave(t, s, "b", shared, false)
	mustSave(t, s, "a", []byte("a's newer content"), false)
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	// a's first version was dropped when its second was saved (KeepVersions
	// holds at Save time); its object stays, since b still references it.
	if vs, _ := s.List("a"); len(vs) != 1 || st.ObjectsRemoved != 0 {
		t.Errorf("a has %d versions, Prune = %+v; want 1 version and no object removed (b still references it)", len(vs), st)
	}
	if _, data, err := s.Load("b", "v1"); err != nil || string(data) != string(shared) {
		t.Fatalf("Load(b, v1) = %q, %v; want %q", data, err, shared)
	}
	mustSave(t, s, "b", []byte("b's newer content"), false)
	if st, err = s.Prune(); err != nil || st.ObjectsRemoved != 1 {
		t.Fatalf("Prune = %+v, %v; want the now unreferenced object removed", st, err)
	}
	if _, err := os.Stat(s.objectName(sumOf(shared))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unreferenced object still present: stat error = %v", err)
	}
	if got := countObjects(t, s); got != 2 {
		t.Errorf("objects = %d, want 2", got)
	}
}

func TestPruneRemovesLeftovers(t *testing.T) {
	s := openStore(t, nil)
	mustSave(t, s, "a", []byte("kept"), false)
	orphan := []byte("written by a Save that died before its index line")
	orphanName := s.objectName(sumOf(orphan))
	leftovers := []string{
		orphanName,
		filepath.Join(s.objectDir(sumOf(orphan)), ".tmp-123"),
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
	if st.ObjectsRemoved != 1 || st.BytesRemoved != 2*int64(len(orphan)) {
		t.Errorf("PruneStats = %+v, want 1 object and %d bytes removed", st, 2*len(orphan))
	}
	if _, data, err := s.Load("a", "v1"); err != nil || string(data) != "kept" {
		t.Errorf("Load(a, v1) = %q, %v; want %q", data, err, "kept")
	}
}
