package crashsim

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// State is one state the disk may hold after a power cut.
type State struct {
	FS *FS
	// After is how many operations had been issued when power was cut.
	After int
	// Lost describes the issued operations that did not persist, or
	// persisted only in part.
	Lost []string
}

// CrashStates calls visit for every distinct state the disk may hold if
// power is cut after any prefix of ops, starting from the durable tree
// initial, under these rules:
//
//   - an entry operation (create, mkdir, rename, exchange, unlink) followed
//     by an fsync of its directory persists; of those after the directory's
//     last fsync, any prefix persists (each directory's entry changes
//     persist in order, independently of other directories);
//   - a file's writes and truncations followed by an fsync of the file
//     persist; of those after its last fsync, any prefix persists, and the
//     last write of the prefix may persist only in part (its first byte,
//     half of it, all but its last byte), independently of other files and
//     of the directories;
//   - every operation followed by a syncfs persists (the recorded tree is
//     taken to be on one file system).
//
// It stops at the first error visit returns. States are deduplicated by
// their content. The number of combinations is the product, over the
// directories and files with unsynced operations, of the ways each may
// persist; SampleStates draws from them when that is too many to visit.
func CrashStates(initial *FS, ops []Op, visit func(State) error) (int, error) {
	e := enumerator{initial: initial, visit: visit, seen: map[[32]byte]bool{}}
	for k := 0; k <= len(ops); k++ {
		p := newPrefix(ops[:k])
		pick := make([]int, len(p.groups))
		for {
			if err := e.try(p, pick); err != nil {
				return e.n, err
			}
			// Next combination.
			g := 0
			for ; g < len(p.groups); g++ {
				pick[g]++
				if pick[g] < len(p.options[g]) {
					break
				}
				pick[g] = 0
			}
			if g == len(p.groups) {
				break
			}
		}
	}
	return e.n, nil
}

// SampleStates is CrashStates over a sample: for every prefix of ops, the
// state in which all of its unsynced operations persisted, the state in
// which none did, and perPrefix combinations drawn with r, each group's
// way to persist chosen uniformly and independently. It visits each
// distinct state once and returns how many it visited.
func SampleStates(initial *FS, ops []Op, perPrefix int, r *rand.Rand, visit func(State) error) (int, error) {
	e := enumerator{initial: initial, visit: visit, seen: map[[32]byte]bool{}}
	for k := 0; k <= len(ops); k++ {
		p := newPrefix(ops[:k])
		none := make([]int, len(p.groups))
		all := make([]int, len(p.groups))
		for g := range all {
			all[g] = p.all[g]
		}
		picks := [][]int{all, none}
		for range perPrefix {
			pick := make([]int, len(p.groups))
			for g := range pick {
				pick[g] = r.IntN(len(p.options[g]))
			}
			picks = append(picks, pick)
		}
		for _, pick := range picks {
			if err := e.try(p, pick); err != nil {
				return e.n, err
			}
		}
	}
	return e.n, nil
}

// prefix holds, for the operations issued before a power cut, the unsynced
// ones grouped by directory or inode, and each group's ways to persist.
type prefix struct {
	issued []Op
	// groups[g] lists the indexes of a group's unsynced operations, in
	// order.
	groups [][]int
	// options[g] are the group's ways to persist.
	options [][]choice
	// all[g] is the option in which all of the group persisted.
	all []int
}

// A choice for a group: how many of its operations persist, and for a
// write that is the last of them, how many of its bytes (-1: all).
type choice struct{ keep, part int }

func newPrefix(issued []Op) prefix {
	lastDirSync, lastFileSync, lastAll := map[string]int{}, map[int]int{}, -1
	for i, o := range issued {
		switch o.Kind {
		case SyncAll:
			lastAll = i
		case SyncDir:
			lastDirSync[o.Dir] = i
		case SyncFile:
			lastFileSync[o.Ino] = i
		}
	}
	p := prefix{issued: issued}
	// Groups by key: "dir NAME" or "ino N".
	index := map[string]int{}
	add := func(key string, i int) {
		g, ok := index[key]
		if !ok {
			g = len(p.groups)
			index[key] = g
			p.groups = append(p.groups, nil)
		}
		p.groups[g] = append(p.groups[g], i)
	}
	for i, o := range issued {
		if i < lastAll {
			continue // durable
		}
		switch {
		case o.entry():
			if s, ok := lastDirSync[o.Dir]; ok && i < s {
				continue
			}
			add("dir "+o.Dir, i)
		case o.data():
			if s, ok := lastFileSync[o.Ino]; ok && i < s {
				continue
			}
			add(fmt.Sprintf("ino %d", o.Ino), i)
		}
	}
	p.options = make([][]choice, len(p.groups))
	p.all = make([]int, len(p.groups))
	for g, idx := range p.groups {
		for keep := 0; keep <= len(idx); keep++ {
			if keep == len(idx) {
				p.all[g] = len(p.options[g])
			}
			p.options[g] = append(p.options[g], choice{keep, -1})
			if keep == 0 {
				continue
			}
			if o := issued[idx[keep-1]]; o.Kind == Write && len(o.Data) > 1 {
				parts := []int{1, len(o.Data) / 2, len(o.Data) - 1}
				slices.Sort(parts)
				for _, part := range slices.Compact(parts) {
					p.options[g] = append(p.options[g], choice{keep, part})
				}
			}
		}
	}
	return p
}

type enumerator struct {
	initial *FS
	visit   func(State) error
	seen    map[[32]byte]bool
	n       int
}

// try builds the state of one combination of p's choices and visits it if
// it is new.
func (e *enumerator) try(p prefix, pick []int) error {
	drop := map[int]bool{}
	cut := map[int]int{}
	var lost []string
	for g, idx := range p.groups {
		ch := p.options[g][pick[g]]
		for j, i := range idx {
			switch {
			case j >= ch.keep:
				drop[i] = true
				lost = append(lost, p.issued[i].String())
			case j == ch.keep-1 && ch.part >= 0:
				cut[i] = ch.part
				lost = append(lost, fmt.Sprintf("%s (only %d bytes)", p.issued[i], ch.part))
			}
		}
	}
	fs := apply(e.initial, p.issued, drop, cut)
	sum := fs.sum()
	if e.seen[sum] {
		return nil
	}
	e.seen[sum] = true
	e.n++
	return e.visit(State{FS: fs, After: len(p.issued), Lost: lost})
}

// apply runs ops over a copy of initial, skipping those in drop and
// cutting writes in cut to a prefix.
func apply(initial *FS, ops []Op, drop map[int]bool, cut map[int]int) *FS {
	fs := initial.clone()
	for i, o := range ops {
		if drop[i] {
			continue
		}
		switch o.Kind {
		case Create:
			fs.Files[o.Path] = o.Ino
			if _, ok := fs.Data[o.Ino]; !ok {
				fs.Data[o.Ino] = []byte{}
			}
		case Mkdir:
			fs.Dirs[o.Path] = true
		case Rename:
			if ino, ok := fs.Files[o.Path]; ok {
				fs.Files[o.To] = ino
				delete(fs.Files, o.Path)
			}
		case Exchange:
			a, okA := fs.Files[o.Path]
			b, okB := fs.Files[o.To]
			if okA && okB {
				fs.Files[o.Path], fs.Files[o.To] = b, a
			}
		case Unlink:
			delete(fs.Files, o.Path)
		case Rmdir:
			delete(fs.Dirs, o.Path)
		case Write:
			data := o.Data
			if n, ok := cut[i]; ok {
				data = data[:n]
			}
			b := fs.Data[o.Ino]
			if end := o.Off + int64(len(data)); int64(len(b)) < end {
				b = append(b, make([]byte, end-int64(len(b)))...)
			}
			copy(b[o.Off:], data)
			fs.Data[o.Ino] = b
		case Truncate:
			b := fs.Data[o.Ino]
			if int64(len(b)) > o.Size {
				b = b[:o.Size]
			} else {
				b = append(b, make([]byte, o.Size-int64(len(b)))...)
			}
			fs.Data[o.Ino] = b
		}
	}
	return fs
}

// sum identifies a tree by its names and contents.
func (f *FS) sum() [32]byte {
	h := sha256.New()
	var names []string
	for d := range f.Dirs {
		names = append(names, "d "+d)
	}
	for p, ino := range f.Files {
		names = append(names, fmt.Sprintf("f %s %x", p, sha256.Sum256(f.Data[ino])))
	}
	slices.Sort(names)
	h.Write([]byte(strings.Join(names, "\n")))
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// File returns the content at path and whether it exists.
func (f *FS) File(path string) ([]byte, bool) {
	ino, ok := f.Files[path]
	if !ok {
		return nil, false
	}
	return f.Data[ino], true
}

// Apply returns the tree that results from running every one of ops over
// a copy of initial: the state with nothing lost.
func Apply(initial *FS, ops []Op) *FS { return apply(initial, ops, nil, nil) }
