package crashsim

import (
	"crypto/sha256"
	"fmt"
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
//     of the directories.
//
// It stops at the first error visit returns. States are deduplicated by
// their content.
func CrashStates(initial *FS, ops []Op, visit func(State) error) (int, error) {
	seen := map[[32]byte]bool{}
	n := 0
	for k := 0; k <= len(ops); k++ {
		issued := ops[:k]
		// Pending (unsynced) operations, grouped by directory or inode,
		// in order.
		type group struct {
			idx []int
		}
		lastDirSync, lastFileSync := map[string]int{}, map[int]int{}
		for i, o := range issued {
			switch o.Kind {
			case SyncDir:
				lastDirSync[o.Dir] = i
			case SyncFile:
				lastFileSync[o.Ino] = i
			}
		}
		var groups []group
		dirGroup, inoGroup := map[string]int{}, map[int]int{}
		for i, o := range issued {
			switch {
			case o.entry():
				if s, ok := lastDirSync[o.Dir]; ok && i < s {
					continue
				}
				g, ok := dirGroup[o.Dir]
				if !ok {
					g = len(groups)
					dirGroup[o.Dir] = g
					groups = append(groups, group{})
				}
				groups[g].idx = append(groups[g].idx, i)
			case o.data():
				if s, ok := lastFileSync[o.Ino]; ok && i < s {
					continue
				}
				g, ok := inoGroup[o.Ino]
				if !ok {
					g = len(groups)
					inoGroup[o.Ino] = g
					groups = append(groups, group{})
				}
				groups[g].idx = append(groups[g].idx, i)
			}
		}
		// A choice for a group: how many of its operations persist, and
		// for a write that is the last of them, how many of its bytes
		// (-1: all).
		type choice struct{ keep, part int }
		options := make([][]choice, len(groups))
		for g, gr := range groups {
			for keep := 0; keep <= len(gr.idx); keep++ {
				options[g] = append(options[g], choice{keep, -1})
				if keep == 0 {
					continue
				}
				if o := issued[gr.idx[keep-1]]; o.Kind == Write && len(o.Data) > 1 {
					parts := []int{1, len(o.Data) / 2, len(o.Data) - 1}
					slices.Sort(parts)
					for _, p := range slices.Compact(parts) {
						options[g] = append(options[g], choice{keep, p})
					}
				}
			}
		}
		pick := make([]int, len(groups))
		for {
			// Build the state for this combination.
			drop := map[int]bool{}
			cut := map[int]int{}
			var lost []string
			for g, gr := range groups {
				ch := options[g][pick[g]]
				for j, i := range gr.idx {
					switch {
					case j >= ch.keep:
						drop[i] = true
						lost = append(lost, issued[i].String())
					case j == ch.keep-1 && ch.part >= 0:
						cut[i] = ch.part
						lost = append(lost, fmt.Sprintf("%s (only %d bytes)", issued[i], ch.part))
					}
				}
			}
			fs := apply(initial, issued, drop, cut)
			if sum := fs.sum(); !seen[sum] {
				seen[sum] = true
				n++
				if err := visit(State{FS: fs, After: k, Lost: lost}); err != nil {
					return n, err
				}
			}
			// Next combination.
			g := 0
			for ; g < len(groups); g++ {
				pick[g]++
				if pick[g] < len(options[g]) {
					break
				}
				pick[g] = 0
			}
			if g == len(groups) {
				break
			}
		}
	}
	return n, nil
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
