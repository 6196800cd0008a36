//go:build unix

package history

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInline checks contents at or under the inline limit: kept in their
// index line, with no object file and no object directory, loaded and
// verified like objects, and mixed with objects in one file's history.
func TestInline(t *testing.T) {
	s := mustOpenAt(t, filepath.Join(t.TempDir(), "history"), &Options{InlineLimit: 8, KeepVersions: 4})
	small, empty, large := []byte("1234\n"), []byte{}, []byte("a larger content\n")
	v1 := mustSave(t, s, "f", small, false)
	v2 := mustSave(t, s, "f", empty, false)
	if _, err := os.Stat(filepath.Join(s.path(), "objects", pathKey("f"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("object directory after inline saves: %v, want none", err)
	}
	index, err := os.ReadFile(s.indexPath("f"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(index, []byte(`"data":"MTIzNAo="`)) {
		t.Errorf("index = %s, want the small content inline", index)
	}
	v3 := mustSave(t, s, "f", large, false)
	if _, err := os.Stat(s.objectPath("f", sumOf(large))); err != nil {
		t.Errorf("content over the limit: %v, want an object", err)
	}
	for _, tt := range []struct {
		v    Version
		want []byte
	}{{v1, small}, {v2, empty}, {v3, large}} {
		_, got, err := s.Load("f", tt.v.ID)
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("Load(%s) = %q, %v; want %q", tt.v.ID, got, err, tt.want)
		}
	}
	// Trimming to four versions drops the inline ones first, then the
	// one with the object, and the object with it.
	for range 5 {
		mustSave(t, s, "f", []byte("x\n"), false)
	}
	if _, _, err := s.Load("f", v1.ID); !errors.Is(err, ErrNoVersion) {
		t.Errorf("Load(%s) after trimming = %v, want ErrNoVersion", v1.ID, err)
	}
	if _, err := os.Stat(s.objectPath("f", sumOf(large))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("object of a trimmed version: %v, want removed", err)
	}
}

// TestInlineCorrupt checks that inline content is verified against its
// sha256 like an object.
func TestInlineCorrupt(t *testing.T) {
	s := mustOpenAt(t, filepath.Join(t.TempDir(), "history"), &Options{InlineLimit: 64})
	v := mustSave(t, s, "f", []byte("1234\n"), false)
	p := s.indexPath("f")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// "1235\n" in base64.
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), "MTIzNAo=", "MTIzNQo=", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var ce *CorruptObjectError
	if _, _, err := s.Load("f", v.ID); !errors.As(err, &ce) {
		t.Errorf("Load of damaged inline content = %v, want a *CorruptObjectError", err)
	}
}

// TestInlinePrune checks that inline contents count toward the byte cap,
// and that Prune drops them like objects: oldest first, never a file's
// newest version.
func TestInlinePrune(t *testing.T) {
	s := mustOpenAt(t, filepath.Join(t.TempDir(), "history"), &Options{InlineLimit: 1000, MaxBytes: 250})
	fill := func(c byte) []byte { return bytes.Repeat([]byte{c}, 100) }
	mustSave(t, s, "a", fill('a'), false)
	mustSave(t, s, "b", fill('b'), false)
	mustSave(t, s, "a", fill('A'), false)
	if !s.OverCap() {
		t.Fatal("OverCap() at 300 inline bytes of 250 = false, want true")
	}
	st, err := s.Prune()
	if err != nil || st.BytesKept != 200 || st.VersionsRemoved != 1 || st.BytesRemoved != 100 {
		t.Fatalf("Prune() = %+v, %v; want 200 bytes kept, one version of 100 bytes removed", st, err)
	}
	vs, err := s.List("a")
	if err != nil || len(vs) != 1 {
		t.Fatalf("List(a) after Prune = %+v, %v; want its newest version", vs, err)
	}
	if _, got, err := s.Load("a", vs[0].ID); err != nil || !bytes.Equal(got, fill('A')) {
		t.Errorf("Load(a, %s) after Prune = %q, %v", vs[0].ID, got, err)
	}
}

// TestInlineDecodedOnLoad checks that an inline content is decoded only
// when it is loaded: a damaged one fails its own Load, not the listing of
// the file's versions or the Load of another.
func TestInlineDecodedOnLoad(t *testing.T) {
	s := mustOpenAt(t, filepath.Join(t.TempDir(), "history"), &Options{InlineLimit: 64})
	v1 := mustSave(t, s, "f", []byte("1234\n"), false)
	v2 := mustSave(t, s, "f", []byte("5678\n"), false)
	p := s.indexPath("f")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), "MTIzNAo=", "!!!!", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if vs, err := s.List("f"); err != nil || len(vs) != 2 {
		t.Fatalf("List(f) = %d versions, %v; want 2", len(vs), err)
	}
	if _, got, err := s.Load("f", v2.ID); err != nil || string(got) != "5678\n" {
		t.Errorf("Load(%s) = %q, %v", v2.ID, got, err)
	}
	if _, _, err := s.Load("f", v1.ID); !errors.Is(err, ErrCorruptIndex) {
		t.Errorf("Load(%s) with damaged base64 = %v, want ErrCorruptIndex", v1.ID, err)
	}
}
