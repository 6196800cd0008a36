package history

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Every name the file system allows is kept and given back byte for byte:
// names that are not UTF-8, with control bytes, escapes and newlines.
func TestHostileNamesRoundTrip(t *testing.T) {
	names := []string{
		"caf\xe9.txt",
		"dir/\xff\xfe/x\xc3",
		"new\nline.txt",
		"\x1b]52;c;aGk=\x07osc.txt",
		"-leading-dash",
		"literal\uFFFD.txt",
		strings.Repeat("\xe9", 255),
	}
	for _, inline := range []int{-1, 1 << 10} {
		t.Run(fmt.Sprintf("inline=%d", inline), func(t *testing.T) {
			s := openStore(t, &Options{InlineLimit: inline, KeepVersions: 2})
			for _, p := range names {
				for i := range 3 { // three saves, two kept: trim rewrites the index
					content := []byte(fmt.Sprintf("%s version %d", p, i))
					v := mustSave(t, s, p, content, false)
					if v.Path != p {
						t.Fatalf("Save(%q) returned path %q", p, v.Path)
					}
					if err := s.SetLedgerSeq(p, v.ID, uint64(i+1)); err != nil {
						t.Fatalf("SetLedgerSeq(%q): %v", p, err)
					}
				}
				vs, err := s.List(p)
				if err != nil {
					t.Fatalf("List(%q): %v", p, err)
				}
				if len(vs) != 2 {
					t.Fatalf("List(%q) = %d versions, want 2", p, len(vs))
				}
				for _, v := range vs {
					if v.Path != p || v.PathHex != "" || v.LedgerSeq == 0 {
						t.Fatalf("List(%q) gave %+v", p, v)
					}
					got, data, err := s.Load(p, v.ID)
					if err != nil || got.Path != p {
						t.Fatalf("Load(%q, %s) = %q, %v", p, v.ID, got.Path, err)
					}
					if !bytes.HasPrefix(data, []byte(p+" version ")) {
						t.Fatalf("Load(%q, %s) content %q", p, v.ID, data)
					}
				}
			}
			paths, err := s.Paths()
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(names)
			slices.Sort(want)
			if !slices.Equal(paths, want) {
				t.Fatalf("Paths() = %q, want %q", paths, want)
			}
		})
	}
}

func TestSaveRefusesNUL(t *testing.T) {
	s := openStore(t, nil)
	if _, err := s.Save("a\x00b", []byte("x"), false, sumOf([]byte("x")), Meta{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Save of a name with NUL: %v, want ErrInvalid", err)
	}
}
