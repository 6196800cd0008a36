package crashsim

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kind is the kind of a logical operation.
type Kind int

// Operations. Entry operations change a directory (Dir names it); data
// operations change a file's bytes (Ino names it); syncs are barriers.
const (
	Create   Kind = iota // Path appears, naming the file Ino (new and empty, or an existing one: a link)
	Mkdir                // Path appears as an empty directory
	Rename               // Path's file moves to To, replacing what To named
	Exchange             // Path and To swap files
	Unlink               // Path disappears (a file, or with Mkdir's kind, an empty directory)
	Rmdir                // Path, an empty directory, disappears
	Write                // Data is written to Ino at Off
	Truncate             // Ino's size becomes Size
	SyncFile             // Ino's data operations so far are durable
	SyncDir              // Dir's entry operations so far are durable
)

var kindNames = [...]string{"create", "mkdir", "rename", "exchange", "unlink", "rmdir", "write", "truncate", "fsync", "fsync dir"}

func (k Kind) String() string { return kindNames[k] }

// Op is one logical file-system operation. Paths are slash-separated and
// relative to the recorded root.
type Op struct {
	Kind     Kind
	Path, To string
	Dir      string // for entry operations and SyncDir: the directory changed or synced
	Ino      int    // for Create and data operations and SyncFile
	Off      int64
	Data     []byte
	Size     int64
	Call     int // index of the system call it came from
}

func (o Op) entry() bool { return o.Kind <= Rmdir }
func (o Op) data() bool  { return o.Kind == Write || o.Kind == Truncate }

func (o Op) String() string {
	switch o.Kind {
	case Write:
		return fmt.Sprintf("write ino%d@%d %d bytes", o.Ino, o.Off, len(o.Data))
	case Truncate:
		return fmt.Sprintf("truncate ino%d %d", o.Ino, o.Size)
	case SyncFile:
		return fmt.Sprintf("fsync ino%d", o.Ino)
	case SyncDir:
		return "fsync dir " + o.Dir
	case Rename, Exchange:
		return fmt.Sprintf("%s %s %s", o.Kind, o.Path, o.To)
	}
	return fmt.Sprintf("%s %s", o.Kind, o.Path)
}

// FS is a file tree: paths of directories and of files with their inode.
// Contents are held per inode.
type FS struct {
	Dirs  map[string]bool
	Files map[string]int
	Data  map[int][]byte
}

func (f *FS) clone() *FS {
	c := &FS{Dirs: map[string]bool{}, Files: map[string]int{}, Data: map[int][]byte{}}
	for k, v := range f.Dirs {
		c.Dirs[k] = v
	}
	for k, v := range f.Files {
		c.Files[k] = v
	}
	for k, v := range f.Data {
		c.Data[k] = append([]byte(nil), v...)
	}
	return c
}

// Snapshot reads the tree under root (regular files and directories).
func Snapshot(root string) (*FS, error) {
	f := &FS{Dirs: map[string]bool{".": true}, Files: map[string]int{}, Data: map[int][]byte{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			f.Dirs[rel] = true
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			ino := len(f.Data) + 1
			f.Files[rel], f.Data[ino] = ino, b
		}
		return nil
	})
	return f, err
}

// Materialize writes the tree into dir, which must exist and be empty.
// Paths that name one inode are hard links of one file.
func (f *FS) Materialize(dir string) error {
	for d := range f.Dirs {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	paths := make([]string, 0, len(f.Files))
	for p := range f.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	made := map[int]string{}
	for _, p := range paths {
		ino, full := f.Files[p], filepath.Join(dir, filepath.FromSlash(p))
		if first, ok := made[ino]; ok {
			if err := os.Link(first, full); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(full, f.Data[ino], 0o644); err != nil {
			return err
		}
		made[ino] = full
	}
	return nil
}

// Replay translates the system calls of a run that started from the tree
// initial, rooted at root, into logical operations. Calls on paths outside
// root are ignored.
func Replay(calls []Syscall, root string, initial *FS) ([]Op, error) {
	root = filepath.Clean(root)
	cur := initial.clone()
	size := map[int]int64{}
	for ino, b := range cur.Data {
		size[ino] = int64(len(b))
	}
	nextIno := len(cur.Data) + 1
	for ino := range cur.Data {
		nextIno = max(nextIno, ino+1)
	}
	type open struct {
		ino    int
		off    int64
		append bool
	}
	fds := map[int]*open{}
	rel := func(p string) (string, bool) {
		p = strings.TrimSuffix(p, " (deleted)")
		r, err := filepath.Rel(root, p)
		if err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", false
		}
		return filepath.ToSlash(r), true
	}
	// at joins a directory descriptor's path and a name.
	at := func(a Arg, name []byte) (string, bool) {
		n := string(name)
		if filepath.IsAbs(n) {
			return rel(filepath.Clean(n))
		}
		return rel(filepath.Join(a.Path, n))
	}
	parent := func(p string) string { return filepath.ToSlash(filepath.Dir(p)) }
	// pair resolves the two paths of a rename or link call: inside says
	// both are under root; one inside and one out is an error.
	pair := func(i int, c Syscall, verb string) (from, to string, inside bool, err error) {
		from, ok1 := at(c.Args[0], c.Args[1].Str)
		to, ok2 := at(c.Args[2], c.Args[3].Str)
		if ok1 != ok2 {
			return "", "", false, fmt.Errorf("call %d: %s across the root's boundary", i, verb)
		}
		return from, to, ok1, nil
	}
	var ops []Op
	for i, c := range calls {
		if c.Ret < 0 {
			continue
		}
		switch c.Name {
		case "openat":
			p, ok := rel(c.Path)
			if !ok || len(c.Args) < 3 {
				delete(fds, int(c.Ret))
				continue
			}
			flags := c.Args[2].Text
			if cur.Dirs[p] {
				delete(fds, int(c.Ret))
				continue
			}
			ino, exists := cur.Files[p]
			if !exists {
				if !strings.Contains(flags, "O_CREAT") {
					return nil, fmt.Errorf("call %d: openat of %s, unknown to the model", i, p)
				}
				ino = nextIno
				nextIno++
				cur.Files[p], size[ino] = ino, 0
				ops = append(ops, Op{Kind: Create, Path: p, Dir: parent(p), Ino: ino, Call: i})
			} else if strings.Contains(flags, "O_TRUNC") && size[ino] > 0 {
				size[ino] = 0
				ops = append(ops, Op{Kind: Truncate, Ino: ino, Call: i})
			}
			fds[int(c.Ret)] = &open{ino: ino, append: strings.Contains(flags, "O_APPEND")}
		case "write", "pwrite64":
			if len(c.Args) < 2 || c.Args[0].Path == "" {
				continue
			}
			if _, ok := rel(c.Args[0].Path); !ok {
				continue
			}
			o := fds[c.Args[0].FD]
			if o == nil {
				return nil, fmt.Errorf("call %d: write to descriptor %d (%s) not opened in the log", i, c.Args[0].FD, c.Args[0].Path)
			}
			data := c.Args[1].Str
			if int64(len(data)) < c.Ret {
				return nil, fmt.Errorf("call %d: write data truncated in the log (raise strace -s)", i)
			}
			data = data[:c.Ret]
			off := o.off
			if c.Name == "pwrite64" {
				off = parseInt(c.Args[3].Text)
			} else if o.append {
				off = size[o.ino]
			}
			ops = append(ops, Op{Kind: Write, Ino: o.ino, Off: off, Data: append([]byte(nil), data...), Call: i})
			size[o.ino] = max(size[o.ino], off+int64(len(data)))
			if c.Name == "write" {
				o.off = off + int64(len(data))
			}
		case "ftruncate":
			if _, ok := rel(c.Args[0].Path); !ok {
				continue
			}
			o := fds[c.Args[0].FD]
			if o == nil {
				return nil, fmt.Errorf("call %d: ftruncate of descriptor %d not opened in the log", i, c.Args[0].FD)
			}
			n := parseInt(c.Args[1].Text)
			size[o.ino] = n
			ops = append(ops, Op{Kind: Truncate, Ino: o.ino, Size: n, Call: i})
		case "lseek":
			if o := fds[c.Args[0].FD]; o != nil {
				o.off = c.Ret
			}
		case "fsync", "fdatasync":
			p, ok := rel(c.Args[0].Path)
			if !ok {
				continue
			}
			if cur.Dirs[p] {
				ops = append(ops, Op{Kind: SyncDir, Dir: p, Call: i})
			} else if o := fds[c.Args[0].FD]; o != nil {
				ops = append(ops, Op{Kind: SyncFile, Ino: o.ino, Call: i})
			}
		case "close":
			delete(fds, c.Args[0].FD)
		case "mkdirat":
			p, ok := at(c.Args[0], c.Args[1].Str)
			if !ok {
				continue
			}
			cur.Dirs[p] = true
			ops = append(ops, Op{Kind: Mkdir, Path: p, Dir: parent(p), Call: i})
		case "unlinkat":
			p, ok := at(c.Args[0], c.Args[1].Str)
			if !ok {
				continue
			}
			if strings.Contains(c.Args[2].Text, "AT_REMOVEDIR") {
				delete(cur.Dirs, p)
				ops = append(ops, Op{Kind: Rmdir, Path: p, Dir: parent(p), Call: i})
			} else {
				delete(cur.Files, p)
				ops = append(ops, Op{Kind: Unlink, Path: p, Dir: parent(p), Call: i})
			}
		case "renameat", "renameat2":
			from, to, inside, err := pair(i, c, "rename")
			if err != nil {
				return nil, err
			}
			if !inside {
				continue
			}
			if cur.Dirs[from] {
				return nil, fmt.Errorf("call %d: rename of a directory is not modelled", i)
			}
			if parent(from) != parent(to) {
				// Across directories the two entry changes are modelled as
				// independent: the new name persists with its directory's
				// fsync, the removal of the old with its own. That admits
				// every state (both names, either, neither) a file system
				// without a journal covering both may leave.
				if strings.Contains(c.Name, "2") && len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "RENAME_EXCHANGE") {
					return nil, fmt.Errorf("call %d: exchange across directories is not modelled", i)
				}
				ino, ok := cur.Files[from]
				if !ok {
					return nil, fmt.Errorf("call %d: rename of %s, unknown to the model", i, from)
				}
				cur.Files[to] = ino
				delete(cur.Files, from)
				ops = append(ops, Op{Kind: Create, Path: to, Dir: parent(to), Ino: ino, Call: i},
					Op{Kind: Unlink, Path: from, Dir: parent(from), Call: i})
				continue
			}
			if c.Name == "renameat2" && len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "RENAME_EXCHANGE") {
				cur.Files[from], cur.Files[to] = cur.Files[to], cur.Files[from]
				ops = append(ops, Op{Kind: Exchange, Path: from, To: to, Dir: parent(to), Call: i})
			} else {
				cur.Files[to] = cur.Files[from]
				delete(cur.Files, from)
				ops = append(ops, Op{Kind: Rename, Path: from, To: to, Dir: parent(to), Call: i})
			}
		case "linkat":
			// A new name for an existing file: an entry change of the new
			// name's directory, naming the same inode (its data is shared).
			from, to, inside, err := pair(i, c, "link")
			if err != nil {
				return nil, err
			}
			if !inside {
				continue
			}
			if len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "AT_") {
				return nil, fmt.Errorf("call %d: linkat with flags %s is not modelled", i, c.Args[4].Text)
			}
			ino, ok := cur.Files[from]
			if !ok {
				return nil, fmt.Errorf("call %d: link of %s, unknown to the model", i, from)
			}
			cur.Files[to] = ino
			ops = append(ops, Op{Kind: Create, Path: to, Dir: parent(to), Ino: ino, Call: i})
		case "symlinkat", "renameat_noreplace", "fallocate", "pwritev", "writev":
			if len(c.Args) > 0 {
				if _, ok := rel(c.Args[0].Path); ok {
					return nil, fmt.Errorf("call %d: %s is not modelled", i, c.Name)
				}
			}
		}
	}
	return ops, nil
}

func parseInt(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}
