//go:build unix

package editguard

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestManifestOverlay: a chain of manifests, each made from the one before
// as scanDirty makes them (deriveFiles, then files set and removed), holds
// exactly the files a plain map given the same changes holds, by every way
// of reading them; the chain shares its base until the changes pass
// overlayLimit, and then starts from a new one; a delta written on the base
// reads back as the same files.
func TestManifestOverlay(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	model := map[string]cpEntry{}
	entry := func() cpEntry {
		e := cpEntry{Size: r.Int64N(100), Ino: r.Uint64(), SHA256: sha256Hex(fmt.Appendf(nil, "%d", r.IntN(40)))}
		if r.IntN(5) == 0 {
			e.Git, e.Backed = strings.Repeat("a", 40), true
		}
		return e
	}
	pathOf := func() string { return fmt.Sprintf("d%d/s%d/f%d", r.IntN(5), r.IntN(4), r.IntN(60)) }
	m := &cpManifest{}
	m.newFiles()
	for range 600 {
		p, e := pathOf(), entry()
		m.setFile(p, e)
		model[p] = e
	}
	m.seal()
	bases := 1
	for round := range 200 {
		prev := m
		m = &cpManifest{StartNS: int64(round)}
		m.deriveFiles(prev)
		for range r.IntN(40) {
			p := pathOf()
			if r.IntN(3) == 0 {
				m.delFile(p)
				delete(model, p)
			} else {
				e := entry()
				m.setFile(p, e)
				model[p] = e
			}
		}
		m.seal()
		if m.base != prev.base {
			bases++
			if !m.flat() {
				t.Fatalf("round %d: a new base with changes over it", round)
			}
		} else if len(prev.over)+len(prev.gone) > overlayLimit(len(prev.base.files)) {
			t.Fatalf("round %d: the overlay passed its limit and the base was kept", round)
		}
		got := filesOf(m)
		if !reflect.DeepEqual(got, model) || m.numFiles() != len(model) {
			t.Fatalf("round %d: %d files (counted %d), want %d", round, len(got), m.numFiles(), len(model))
		}
		for p, e := range model {
			if g, ok := m.file(p); !ok || g != e {
				t.Fatalf("round %d: file(%q) = %+v %v, want %+v", round, p, g, ok, e)
			}
		}
		if want := slices.Sorted(maps.Keys(model)); !slices.Equal(m.sortedPaths(), want) {
			t.Fatalf("round %d: sortedPaths differs", round)
		}
		// names: exactly the contents some file has.
		for i := range 40 {
			sum := sha256Hex(fmt.Appendf(nil, "%d", i))
			var stored, any bool
			for _, e := range model {
				if e.SHA256 == sum {
					any = true
					stored = stored || !e.Backed
				}
			}
			if m.names(sum, false) != stored || m.names(sum, true) != any {
				t.Fatalf("round %d: names(%d) = %v/%v, want %v/%v", round, i, m.names(sum, false), m.names(sum, true), stored, any)
			}
		}
		// under: every file below a directory.
		dir := fmt.Sprintf("d%d", r.IntN(5))
		var below []string
		m.under(dir, m.sortedOver(), func(p string) { below = append(below, p) })
		slices.Sort(below)
		var want []string
		for p := range model {
			if strings.HasPrefix(p, dir+"/") {
				want = append(want, p)
			}
		}
		slices.Sort(want)
		if !slices.Equal(below, want) {
			t.Fatalf("round %d: under(%s) = %d paths, want %d", round, dir, len(below), len(want))
		}
		// diffPaths of two manifests sharing a base names every path
		// whose entry differs.
		if prev.base == m.base {
			seen := map[string]bool{}
			diffPaths(prev, m, func(p string) { seen[p] = true })
			for p := range model {
				if e, ok := prev.file(p); (!ok || e != model[p]) && !seen[p] {
					t.Fatalf("round %d: diffPaths missed %q", round, p)
				}
			}
		}
		// Written on its base and read back: the same files.
		if !m.flat() {
			base, err := unmarshalManifest(manifestOf(m.base.files).marshal())
			if err != nil {
				t.Fatal(err)
			}
			d, err := unmarshalDelta(m.marshalDelta("0-base", strings.Repeat("0", 64)))
			if err != nil {
				t.Fatal(err)
			}
			back := &cpManifest{}
			back.deriveFiles(base)
			for _, p := range d.removed {
				back.delFile(p)
			}
			for i, p := range d.paths {
				back.setFile(p, d.entries[i])
			}
			if !reflect.DeepEqual(filesOf(back), model) {
				t.Fatalf("round %d: the delta reads back differently", round)
			}
		}
	}
	if bases < 3 {
		t.Fatalf("%d bases in 200 rounds: the limit was never reached", bases)
	}
}
