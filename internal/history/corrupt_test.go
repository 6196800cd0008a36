package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestLoadCorruptObject(t *testing.T) {
	s := openStore(t, nil)
	content := []byte("precious work\n")
	v := mustSave(t, s, "a", content, false)
	name := s.objectPath("a", v.SHA256)
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte("precious wORK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, data, err := s.Load("a", v.ID)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load of altered object = %q, %v; want ErrCorrupt", data, err)
	}
	var ce *CorruptObjectError
	if !errors.As(err, &ce) || ce.Want != v.SHA256 || ce.Got != sumOf([]byte("precious wORK\n")) || !strings.HasSuffix(name, ce.Object) {
		t.Fatalf("Load error = %#v, want *CorruptObjectError naming the object and both sums", err)
	}
	if data != nil {
		t.Errorf("Load of corrupt object returned content %q, want nil", data)
	}

	// Saving the good content again repairs the object rather than
	// reusing the damaged one.
	mustSave(t, s, "a", content, false)
	if _, data, err := s.Load("a", v.ID); err != nil || !bytes.Equal(data, content) {
		t.Fatalf("Load after re-saving the content = %q, %v; want %q", data, err, content)
	}
}

// TestLargeDamagedObjectRepaired: Save compares an existing object with
// the content a piece at a time; a byte changed past the first pieces
// still makes it replace the object.
func TestLargeDamagedObjectRepaired(t *testing.T) {
	s := openStore(t, nil)
	content := bytes.Repeat([]byte("precious work\n"), 20_000) // 280 KB
	v := mustSave(t, s, "a", content, false)
	name := s.objectPath("a", v.SHA256)
	damaged := bytes.Clone(content)
	damaged[len(damaged)-2] = 'K'
	if err := os.Chmod(name, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	mustSave(t, s, "a", content, false)
	if _, data, err := s.Load("a", v.ID); err != nil || !bytes.Equal(data, content) {
		t.Fatalf("Load after re-saving the content: %d bytes, %v; want the content back", len(data), err)
	}
}

func TestSaveWrongSumKeepsExistingObject(t *testing.T) {
	s := openStore(t, nil)
	good := []byte("good")
	v := mustSave(t, s, "a", good, false)
	// A caller bug: the sum of one content passed with another of the
	// same size. The existing object must not be overwritten.
	if _, err := s.Save("a", []byte("evil"), false, v.SHA256, Meta{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Save with a sum that names another object: error = %v, want ErrInvalid", err)
	}
	if _, data, err := s.Load("a", v.ID); err != nil || !bytes.Equal(data, good) {
		t.Fatalf("Load(a, %s) = %q, %v; want %q", v.ID, data, err, good)
	}
	if list, _ := s.List("a"); len(list) != 1 {
		t.Fatalf("List(a) = %v, want no version recorded by the failed Save", ids(list))
	}
}

func TestLoadMissingObject(t *testing.T) {
	s := openStore(t, nil)
	v := mustSave(t, s, "a", []byte("x"), false)
	if err := os.Remove(s.objectPath("a", v.SHA256)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Load("a", v.ID); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load with its object removed: error = %v, want os.ErrNotExist", err)
	}
}

func TestTornIndexTail(t *testing.T) {
	s := openStore(t, nil)
	mustSave(t, s, "a", []byte("one"), false)
	mustSave(t, s, "a", []byte("two"), false)
	index := s.indexPath("a")
	f, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// What a crash in the middle of an append leaves behind.
	if _, err := f.WriteString(`{"version":"v000003","time":"2025-01-`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	list, err := s.List("a")
	if err != nil {
		t.Fatalf("List with a torn tail: %v", err)
	}
	if got, want := ids(list), []string{"v000002", "v000001"}; !slices.Equal(got, want) {
		t.Fatalf("List with a torn tail = %v, want %v", got, want)
	}
	if paths, err := s.Paths(); err != nil || !slices.Equal(paths, []string{"a"}) {
		t.Fatalf("Paths() = %v, %v; want [a]", paths, err)
	}
	v := mustSave(t, s, "a", []byte("three"), false)
	if v.ID != "v000003" {
		t.Fatalf("Save after torn tail ID = %s, want v000003", v.ID)
	}
	// The torn fragment is gone: every line of the index decodes.
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) != 3 {
		t.Fatalf("index has %d lines after repair, want 3:\n%s", len(lines), data)
	}
	for i, line := range lines {
		var v Version
		if err := json.Unmarshal(line, &v); err != nil {
			t.Errorf("index line %d = %q does not decode: %v", i+1, line, err)
		}
	}
	if _, data, err := s.Load("a", "v3"); err != nil || string(data) != "three" {
		t.Fatalf("Load(a, v3) = %q, %v; want %q", data, err, "three")
	}
	// SetLedgerSeq repairs a torn tail too.
	os.WriteFile(index, append(data, `{"kind":"ledg`...), 0o644)
	if err := s.SetLedgerSeq("a", "v3", 7); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("a", "v3"); err != nil || v.LedgerSeq != 7 {
		t.Fatalf("Get(a, v3) after SetLedgerSeq over a torn tail = %+v, %v; want ledger_seq 7", v, err)
	}
}

func TestCorruptIndexLine(t *testing.T) {
	s := openStore(t, &Options{KeepVersions: 10})
	v1 := mustSave(t, s, "a", []byte("one"), false)
	mustSave(t, s, "a", []byte("two"), false)
	index := s.indexPath("a")
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	// Damage the first (complete) line but leave the object name readable.
	damaged := bytes.Replace(data, []byte(`{"version":"v000001"`), []byte(`{"version":v000001`), 1)
	if err := os.WriteFile(index, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List("a"); !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("List with a damaged line: error = %v, want ErrCorruptIndex", err)
	}
	// Save only needs the last line, so commits can go on.
	if v := mustSave(t, s, "a", []byte("three"), false); v.ID != "v000003" {
		t.Fatalf("Save with a damaged earlier line ID = %s, want v000003", v.ID)
	}
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if st.CorruptIndexes != 1 || st.VersionsRemoved != 0 {
		t.Errorf("Prune = %+v, want the damaged index counted and left as it is", st)
	}
	if _, err := os.Stat(s.objectPath("a", v1.SHA256)); err != nil {
		t.Errorf("object named only by the damaged line was removed: %v", err)
	}
	// A damaged last line stops Save: guessing the next ID could reuse one.
	os.WriteFile(index, append(damaged, "not json\n"...), 0o644)
	if _, err := s.Save("a", []byte("four"), false, "", Meta{}); !errors.Is(err, ErrCorruptIndex) {
		t.Errorf("Save with a damaged last line: error = %v, want ErrCorruptIndex", err)
	}
}
