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
	SyncAll              // every operation so far is durable (syncfs)
)

var kindNames = [...]string{"create", "mkdir", "rename", "exchange", "unlink", "rmdir", "write", "truncate", "fsync", "fsync dir", "syncfs"}

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
	case SyncAll:
		return "syncfs"
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
	r := newReplayer(root, initial)
	for i, c := range calls {
		if c.Ret < 0 {
			continue
		}
		if err := r.call(i, c); err != nil {
			return nil, err
		}
	}
	return r.ops, nil
}

// replayer is the state of a Replay: the tree as the calls so far left it,
// file sizes, the open descriptors, and the operations found.
type replayer struct {
	root    string
	cur     *FS
	size    map[int]int64 // by inode
	nextIno int
	fds     map[int]*openFile
	ops     []Op
}

// openFile is an open descriptor of a regular file under root.
type openFile struct {
	ino    int
	off    int64
	append bool
}

// newReplayer starts a replay from a copy of initial, so that the caller's
// tree is left as it is, with inode numbers for new files above every
// inode initial has.
func newReplayer(root string, initial *FS) *replayer {
	r := &replayer{root: filepath.Clean(root), cur: initial.clone(), size: map[int]int64{}, fds: map[int]*openFile{}}
	for ino, b := range r.cur.Data {
		r.size[ino] = int64(len(b))
	}
	r.nextIno = len(r.cur.Data) + 1
	for ino := range r.cur.Data {
		r.nextIno = max(r.nextIno, ino+1)
	}
	return r
}

// call translates the successful system call c, the i-th of the log, by
// its name; calls it does not model change nothing.
func (r *replayer) call(i int, c Syscall) error {
	switch c.Name {
	case "openat":
		return r.openat(i, c)
	case "write", "pwrite64":
		return r.write(i, c)
	case "ftruncate":
		return r.ftruncate(i, c)
	case "lseek":
		if o := r.fds[c.Args[0].FD]; o != nil {
			o.off = c.Ret
		}
	case "fsync", "fdatasync":
		r.fsync(i, c)
	case "syncfs":
		// The recorded root is taken to be on one file system.
		if _, ok := r.rel(c.Args[0].Path); ok {
			r.emit(Op{Kind: SyncAll, Call: i})
		}
	case "close":
		delete(r.fds, c.Args[0].FD)
	case "mkdirat":
		r.mkdirat(i, c)
	case "unlinkat":
		r.unlinkat(i, c)
	case "renameat", "renameat2":
		return r.rename(i, c)
	case "linkat":
		return r.linkat(i, c)
	case "symlinkat", "renameat_noreplace", "fallocate", "pwritev", "writev":
		return r.unmodelled(i, c)
	}
	return nil
}

// rel returns p relative to the root, slash-separated, and whether it is
// under the root at all: a descriptor's path for a file since removed
// names the file it had.
func (r *replayer) rel(p string) (string, bool) {
	p = strings.TrimSuffix(p, " (deleted)")
	rp, err := filepath.Rel(r.root, p)
	if err != nil || rp == ".." || strings.HasPrefix(rp, "../") {
		return "", false
	}
	return filepath.ToSlash(rp), true
}

// at joins a directory descriptor's path and a name, as the *at calls
// resolve them, and returns it as rel does.
func (r *replayer) at(a Arg, name []byte) (string, bool) {
	n := string(name)
	if filepath.IsAbs(n) {
		return r.rel(filepath.Clean(n))
	}
	return r.rel(filepath.Join(a.Path, n))
}

// parent is the directory an entry operation on p changes.
func parent(p string) string { return filepath.ToSlash(filepath.Dir(p)) }

// pair resolves the two paths of a rename or link call: inside says both
// are under root; one inside and one out is an error, since the model
// cannot follow a file across the root's boundary.
func (r *replayer) pair(i int, c Syscall, verb string) (from, to string, inside bool, err error) {
	from, ok1 := r.at(c.Args[0], c.Args[1].Str)
	to, ok2 := r.at(c.Args[2], c.Args[3].Str)
	if ok1 != ok2 {
		return "", "", false, fmt.Errorf("call %d: %s across the root's boundary", i, verb)
	}
	return from, to, ok1, nil
}

// emit adds operations to the replay's result.
func (r *replayer) emit(ops ...Op) { r.ops = append(r.ops, ops...) }

// openat records the descriptor an open of a file under root returns, and
// the creation or truncation the open made; descriptors of directories
// and of paths outside root are forgotten, so that later calls on them
// are not taken for the file's.
func (r *replayer) openat(i int, c Syscall) error {
	p, ok := r.rel(c.Path)
	if !ok || len(c.Args) < 3 {
		delete(r.fds, int(c.Ret))
		return nil
	}
	flags := c.Args[2].Text
	if r.cur.Dirs[p] {
		delete(r.fds, int(c.Ret))
		return nil
	}
	ino, exists := r.cur.Files[p]
	if !exists {
		if !strings.Contains(flags, "O_CREAT") {
			return fmt.Errorf("call %d: openat of %s, unknown to the model", i, p)
		}
		ino = r.nextIno
		r.nextIno++
		r.cur.Files[p], r.size[ino] = ino, 0
		r.emit(Op{Kind: Create, Path: p, Dir: parent(p), Ino: ino, Call: i})
	} else if strings.Contains(flags, "O_TRUNC") && r.size[ino] > 0 {
		r.size[ino] = 0
		r.emit(Op{Kind: Truncate, Ino: ino, Call: i})
	}
	r.fds[int(c.Ret)] = &openFile{ino: ino, append: strings.Contains(flags, "O_APPEND")}
	return nil
}

// write records the bytes a write or pwrite64 to a file under root wrote,
// at the offset it wrote them (the descriptor's, the end of the file for
// O_APPEND, or pwrite64's own), and moves the descriptor's offset.
func (r *replayer) write(i int, c Syscall) error {
	if len(c.Args) < 2 || c.Args[0].Path == "" {
		return nil
	}
	if _, ok := r.rel(c.Args[0].Path); !ok {
		return nil
	}
	o := r.fds[c.Args[0].FD]
	if o == nil {
		return fmt.Errorf("call %d: write to descriptor %d (%s) not opened in the log", i, c.Args[0].FD, c.Args[0].Path)
	}
	data := c.Args[1].Str
	if int64(len(data)) < c.Ret {
		return fmt.Errorf("call %d: write data truncated in the log (raise strace -s)", i)
	}
	data = data[:c.Ret]
	off := o.off
	if c.Name == "pwrite64" {
		off = parseInt(c.Args[3].Text)
	} else if o.append {
		off = r.size[o.ino]
	}
	r.emit(Op{Kind: Write, Ino: o.ino, Off: off, Data: append([]byte(nil), data...), Call: i})
	r.size[o.ino] = max(r.size[o.ino], off+int64(len(data)))
	if c.Name == "write" {
		o.off = off + int64(len(data))
	}
	return nil
}

// ftruncate records the new size of a file under root.
func (r *replayer) ftruncate(i int, c Syscall) error {
	if _, ok := r.rel(c.Args[0].Path); !ok {
		return nil
	}
	o := r.fds[c.Args[0].FD]
	if o == nil {
		return fmt.Errorf("call %d: ftruncate of descriptor %d not opened in the log", i, c.Args[0].FD)
	}
	n := parseInt(c.Args[1].Text)
	r.size[o.ino] = n
	r.emit(Op{Kind: Truncate, Ino: o.ino, Size: n, Call: i})
	return nil
}

// fsync records the barrier an fsync or fdatasync under root makes: of a
// directory's entries, or of a file's data.
func (r *replayer) fsync(i int, c Syscall) {
	p, ok := r.rel(c.Args[0].Path)
	if !ok {
		return
	}
	if r.cur.Dirs[p] {
		r.emit(Op{Kind: SyncDir, Dir: p, Call: i})
	} else if o := r.fds[c.Args[0].FD]; o != nil {
		r.emit(Op{Kind: SyncFile, Ino: o.ino, Call: i})
	}
}

// mkdirat records a new directory under root.
func (r *replayer) mkdirat(i int, c Syscall) {
	p, ok := r.at(c.Args[0], c.Args[1].Str)
	if !ok {
		return
	}
	r.cur.Dirs[p] = true
	r.emit(Op{Kind: Mkdir, Path: p, Dir: parent(p), Call: i})
}

// unlinkat records the removal of a file or, with AT_REMOVEDIR, of an
// empty directory under root.
func (r *replayer) unlinkat(i int, c Syscall) {
	p, ok := r.at(c.Args[0], c.Args[1].Str)
	if !ok {
		return
	}
	if strings.Contains(c.Args[2].Text, "AT_REMOVEDIR") {
		delete(r.cur.Dirs, p)
		r.emit(Op{Kind: Rmdir, Path: p, Dir: parent(p), Call: i})
	} else {
		delete(r.cur.Files, p)
		r.emit(Op{Kind: Unlink, Path: p, Dir: parent(p), Call: i})
	}
}

// rename records a rename or exchange of files under root; directories
// are not modelled.
func (r *replayer) rename(i int, c Syscall) error {
	from, to, inside, err := r.pair(i, c, "rename")
	if err != nil || !inside {
		return err
	}
	if r.cur.Dirs[from] {
		return fmt.Errorf("call %d: rename of a directory is not modelled", i)
	}
	if parent(from) != parent(to) {
		return r.renameAcross(i, c, from, to)
	}
	if c.Name == "renameat2" && len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "RENAME_EXCHANGE") {
		r.cur.Files[from], r.cur.Files[to] = r.cur.Files[to], r.cur.Files[from]
		r.emit(Op{Kind: Exchange, Path: from, To: to, Dir: parent(to), Call: i})
	} else {
		r.cur.Files[to] = r.cur.Files[from]
		delete(r.cur.Files, from)
		r.emit(Op{Kind: Rename, Path: from, To: to, Dir: parent(to), Call: i})
	}
	return nil
}

// renameAcross records a rename between two directories as two
// independent entry changes: the new name persists with its directory's
// fsync, the removal of the old with its own. That admits every state
// (both names, either, neither) a file system without a journal covering
// both may leave. An exchange across directories is not modelled.
func (r *replayer) renameAcross(i int, c Syscall, from, to string) error {
	if strings.Contains(c.Name, "2") && len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "RENAME_EXCHANGE") {
		return fmt.Errorf("call %d: exchange across directories is not modelled", i)
	}
	ino, ok := r.cur.Files[from]
	if !ok {
		return fmt.Errorf("call %d: rename of %s, unknown to the model", i, from)
	}
	r.cur.Files[to] = ino
	delete(r.cur.Files, from)
	r.emit(Op{Kind: Create, Path: to, Dir: parent(to), Ino: ino, Call: i},
		Op{Kind: Unlink, Path: from, Dir: parent(from), Call: i})
	return nil
}

// linkat records a new name for an existing file under root: an entry
// change of the new name's directory, naming the same inode (its data is
// shared).
func (r *replayer) linkat(i int, c Syscall) error {
	from, to, inside, err := r.pair(i, c, "link")
	if err != nil || !inside {
		return err
	}
	if len(c.Args) > 4 && strings.Contains(c.Args[4].Text, "AT_") {
		return fmt.Errorf("call %d: linkat with flags %s is not modelled", i, c.Args[4].Text)
	}
	ino, ok := r.cur.Files[from]
	if !ok {
		return fmt.Errorf("call %d: link of %s, unknown to the model", i, from)
	}
	r.cur.Files[to] = ino
	r.emit(Op{Kind: Create, Path: to, Dir: parent(to), Ino: ino, Call: i})
	return nil
}

// unmodelled refuses a call the model cannot translate when it touches a
// file under root, so that a run using one is not checked wrongly.
func (r *replayer) unmodelled(i int, c Syscall) error {
	if len(c.Args) > 0 {
		if _, ok := r.rel(c.Args[0].Path); ok {
			return fmt.Errorf("call %d: %s is not modelled", i, c.Name)
		}
	}
	return nil
}

// parseInt reads a number strace printed as an argument; one it cannot
// read counts as 0.
func parseInt(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}
