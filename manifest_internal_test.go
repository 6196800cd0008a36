//go:build unix

package editguard

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/gitobj"
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
		} else if len(prev.over)+len(prev.gone) > overlayLimit(prev.base.len()) {
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
		// diffPaths names every path whose entry differs, once, whether
		// the two manifests share a base or not.
		seen := map[string]bool{}
		diffPaths(prev, m, func(p string) {
			if seen[p] {
				t.Fatalf("round %d: diffPaths named %q twice", round, p)
			}
			seen[p] = true
		})
		for p := range model {
			if e, ok := prev.file(p); (!ok || e != model[p]) && !seen[p] {
				t.Fatalf("round %d: diffPaths missed %q", round, p)
			}
		}
		for p := range prev.allFiles() {
			if _, ok := model[p]; !ok && !seen[p] {
				t.Fatalf("round %d: diffPaths missed the removed %q", round, p)
			}
		}
		// Written on its base and read back: the same files.
		if !m.flat() {
			base, err := unmarshalManifest(manifestOf(filesOf(&cpManifest{base: m.base})).marshal())
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

// TestFileBaseAgainstAMap: a fileBase (paths in one string, entries packed
// with binary sums, a hash table by path) made from files, and then from
// itself with files added, replaced and removed (mergeBase), holds exactly
// what a plain map given the same changes holds, by every way of reading
// it: for empty and one-file trees, and names with newlines, non-UTF-8
// bytes and sums no scan gives (kept as they are). A manifest of it
// written and read back holds the same files.
func TestFileBaseAgainstAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	elem := func() string {
		const alphabet = "ab\n\xff\x80.- é"
		for {
			b := make([]byte, 1+r.IntN(3))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			if s := string(b); s != "." && s != ".." {
				return s
			}
		}
	}
	var pool []string
	for range 300 {
		p := elem()
		for range r.IntN(3) {
			p += "/" + elem()
		}
		pool = append(pool, p)
	}
	pool = append(pool, "a\nb", "\xff\xfe", "d/\x80", "zz")
	sums := make([]string, 12)
	for i := range sums {
		sums[i] = sha256Hex(fmt.Appendf(nil, "%d", i))
	}
	entry := func(odd bool) cpEntry {
		e := cpEntry{Size: r.Int64N(1 << 40), MtimeNS: r.Int64(), CtimeNS: -r.Int64(), Ino: r.Uint64(), Mode: r.Uint32(), SHA256: sums[r.IntN(len(sums))]}
		if r.IntN(3) == 0 {
			e.Git = sha256Hex(fmt.Appendf(nil, "git %d", r.IntN(5)))[:40]
			e.Backed = r.IntN(2) == 0
		}
		if odd && r.IntN(4) == 0 {
			switch r.IntN(3) {
			case 0:
				e.SHA256 = strings.ToUpper(e.SHA256)
			case 1:
				e.Git = "not hex"
			default:
				e.SHA256 = ""
			}
		}
		return e
	}
	check := func(what string, b *fileBase, model map[string]cpEntry, odd bool) {
		t.Helper()
		want := slices.Sorted(maps.Keys(model))
		if b.len() != len(model) {
			t.Fatalf("%s: %d files, want %d", what, b.len(), len(model))
		}
		for i, p := range want {
			if b.path(i) != p {
				t.Fatalf("%s: path %d is %q, want %q", what, i, b.path(i), p)
			}
			if e, ok := b.file(p); !ok || e != model[p] || b.index(p) != i || b.entry(i) != model[p] {
				t.Fatalf("%s: file(%q) = %+v %v, want %+v", what, p, e, ok, model[p])
			}
		}
		for _, p := range append(pool, "", "nothere") {
			if _, in := model[p]; !in && (b.has(p) || b.index(p) != -1) {
				t.Fatalf("%s: has %q, which it does not hold", what, p)
			}
			if i, _ := slices.BinarySearch(want, p); b.search(p) != i {
				t.Fatalf("%s: search(%q) = %d, want %d", what, p, b.search(p), i)
			}
		}
		for _, sum := range append(slices.Clone(sums), strings.ToUpper(sums[0]), "") {
			var stored, backed int32
			for _, e := range model {
				if e.SHA256 == sum {
					if e.Backed {
						backed++
					} else {
						stored++
					}
				}
			}
			if s, bk := b.count(sum); s != stored || bk != backed {
				t.Fatalf("%s: count(%.8s) = %d/%d, want %d/%d", what, sum, s, bk, stored, backed)
			}
		}
		m := &cpManifest{base: b, n: b.len()}
		if !reflect.DeepEqual(filesOf(m), model) || !slices.Equal(m.sortedPaths(), want) {
			t.Fatalf("%s: allFiles or sortedPaths differ", what)
		}
		if odd {
			return // not a manifest a scan makes: a read refuses it
		}
		data := m.marshal()
		// Written a piece at a time (writeFull), the same bytes.
		for _, at := range []int{1, 100, 1 << 20} {
			var pieces []byte
			rest := m.encode(nil, at, func(b []byte) { pieces = append(pieces, b...) })
			if pieces = append(pieces, rest...); !bytes.Equal(pieces, data) {
				t.Fatalf("%s: encoded in pieces of %d bytes, %d bytes, not marshal's %d", what, at, len(pieces), len(data))
			}
		}
		back, err := unmarshalManifest(data)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := filesOf(back); !reflect.DeepEqual(got, model) || back.numFiles() != len(model) {
			t.Fatalf("%s: written and read back, %d files differ", what, len(got))
		}
	}
	for _, odd := range []bool{false, true} {
		for _, n := range []int{0, 1, 2, 40, 250} {
			model := map[string]cpEntry{}
			for range n {
				model[pool[r.IntN(len(pool))]] = entry(odd)
			}
			what := fmt.Sprintf("odd %v, %d files", odd, len(model))
			b := baseOf(model)
			check(what, b, model, odd)
			// The same files added in any order (a full scan's), some
			// of them twice, the model's entry last: sortedBase.
			for _, twice := range []bool{false, true} {
				paths := slices.Sorted(maps.Keys(model))
				r.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
				bb := newBaseBuilder(r.IntN(2*len(paths)+1), 0)
				if twice {
					for _, p := range paths {
						if r.IntN(3) == 0 {
							bb.add(p, entry(odd))
						}
					}
				}
				for _, p := range paths {
					bb.add(p, model[p])
				}
				check(fmt.Sprintf("%s, added in any order (twice %v)", what, twice), bb.sortedBase(), model, odd)
			}
			for round := range 30 {
				over, gone := map[string]cpEntry{}, map[string]struct{}{}
				for range r.IntN(20) {
					p := pool[r.IntN(len(pool))]
					if r.IntN(3) == 0 {
						if _, in := b.file(p); in {
							gone[p] = struct{}{}
							delete(over, p)
							delete(model, p)
						}
					} else {
						e := entry(odd)
						over[p] = e
						delete(gone, p)
						model[p] = e
					}
				}
				// The files of b with over and gone on it, with the
				// blobs they record, in order: eachGitBlob.
				var walked []string
				onB := &cpManifest{base: b, over: over, gone: gone}
				onB.eachGitBlob(func(p string, blob gitobj.ID, listed bool) {
					if e, ok := model[p]; !ok {
						t.Fatalf("%s, round %d: eachGitBlob yields %q, not a file", what, round, p)
					} else if id, has := gitID(e.Git); id != blob || has != listed {
						t.Fatalf("%s, round %d: eachGitBlob(%q) = %v %v, want %v %v", what, round, p, blob, listed, id, has)
					}
					if id, has := onB.gitBlob(p); id != blob || has != listed {
						t.Fatalf("%s, round %d: gitBlob(%q) = %v %v, eachGitBlob %v %v", what, round, p, id, has, blob, listed)
					}
					walked = append(walked, p)
				})
				if !slices.Equal(walked, slices.Sorted(maps.Keys(model))) {
					t.Fatalf("%s, round %d: eachGitBlob yields %q, want the files in order", what, round, walked)
				}
				old, oldModel := b, filesOf(&cpManifest{base: b, n: b.len()})
				b = mergeBase(b, over, gone)
				check(fmt.Sprintf("%s, round %d", what, round), b, model, odd)
				// diffPaths of the manifests on the two bases names
				// exactly the paths whose entries differ, once each.
				named := map[string]bool{}
				diffPaths(&cpManifest{base: old, n: old.len()}, &cpManifest{base: b, n: b.len()}, func(p string) {
					if named[p] {
						t.Fatalf("%s, round %d: diffPaths named %q twice", what, round, p)
					}
					named[p] = true
				})
				differ := map[string]bool{}
				for _, mp := range []map[string]cpEntry{oldModel, model} {
					for p := range mp {
						if e, ok := oldModel[p]; !ok || e != model[p] {
							differ[p] = true
						} else if _, ok := model[p]; !ok {
							differ[p] = true
						}
					}
				}
				if !maps.Equal(named, differ) {
					t.Fatalf("%s, round %d: diffPaths named %d paths, want %d", what, round, len(named), len(differ))
				}
			}
		}
	}
}
