package crashsim

import (
	"reflect"
	"strings"
	"testing"
)

// replayFS is the tree the Replay tests start from: under the root /r, a
// file a (inode 1, "old"), a directory d holding x (inode 3) and an empty
// directory e.
func replayFS() *FS {
	return &FS{
		Dirs:  map[string]bool{".": true, "d": true, "e": true},
		Files: map[string]int{"a": 1, "d/x": 3},
		Data:  map[int][]byte{1: []byte("old"), 3: []byte("x")},
	}
}

// fd is a descriptor argument: its number and the path strace printed.
func fd(n int, path string) Arg { return Arg{FD: n, Path: path} }

// str is a string argument: a path, or the bytes a write wrote.
func str(s string) Arg { return Arg{Str: []byte(s)} }

// text is a flags or number argument.
func text(s string) Arg { return Arg{Text: s} }

// TestReplayOps translates one call of each kind Replay models, and checks
// that failed calls and calls outside the root change nothing.
func TestReplayOps(t *testing.T) {
	calls := []Syscall{
		{Name: "openat", Args: []Arg{fd(-100, ""), str("/r/n"), text("O_WRONLY|O_CREAT|O_APPEND")}, Ret: 7, Path: "/r/n"},
		{Name: "write", Args: []Arg{fd(7, "/r/n"), str("abc"), text("3")}, Ret: 3},
		{Name: "write", Args: []Arg{fd(7, "/r/n"), str("de"), text("2")}, Ret: 2},
		{Name: "openat", Args: []Arg{fd(-100, ""), str("/r/a"), text("O_RDWR|O_TRUNC")}, Ret: 8, Path: "/r/a"},
		{Name: "pwrite64", Args: []Arg{fd(8, "/r/a"), str("zz"), text("2"), text("5")}, Ret: 2},
		{Name: "lseek", Args: []Arg{fd(8, "/r/a"), text("1"), text("SEEK_SET")}, Ret: 1},
		{Name: "write", Args: []Arg{fd(8, "/r/a"), str("q"), text("1")}, Ret: 1},
		{Name: "ftruncate", Args: []Arg{fd(8, "/r/a"), text("4")}, Ret: 0},
		{Name: "fsync", Args: []Arg{fd(8, "/r/a")}, Ret: 0},
		{Name: "close", Args: []Arg{fd(8, "/r/a")}, Ret: 0},
		{Name: "openat", Args: []Arg{fd(-100, ""), str("/r/d"), text("O_RDONLY|O_DIRECTORY")}, Ret: 9, Path: "/r/d"},
		{Name: "fdatasync", Args: []Arg{fd(9, "/r/d")}, Ret: 0},
		{Name: "mkdirat", Args: []Arg{fd(9, "/r/d"), str("m"), text("0755")}, Ret: 0},
		{Name: "unlinkat", Args: []Arg{fd(-100, ""), str("/r/e"), text("AT_REMOVEDIR")}, Ret: 0},
		{Name: "renameat2", Args: []Arg{fd(-100, ""), str("/r/n"), fd(-100, ""), str("/r/a"), text("RENAME_EXCHANGE")}, Ret: 0},
		{Name: "renameat", Args: []Arg{fd(9, "/r/d"), str("x"), fd(9, "/r/d"), str("y")}, Ret: 0},
		{Name: "renameat", Args: []Arg{fd(9, "/r/d"), str("y"), fd(-100, ""), str("/r/b")}, Ret: 0},
		{Name: "unlinkat", Args: []Arg{fd(-100, ""), str("/r/b"), text("0")}, Ret: 0},
		// Failed, and outside the root: nothing.
		{Name: "unlinkat", Args: []Arg{fd(-100, ""), str("/r/a"), text("0")}, Ret: -1, Err: "ENOENT"},
		{Name: "openat", Args: []Arg{fd(-100, ""), str("/o/z"), text("O_WRONLY|O_CREAT")}, Ret: 10, Path: "/o/z"},
		{Name: "write", Args: []Arg{fd(10, "/o/z"), str("out"), text("3")}, Ret: 3},
		{Name: "renameat", Args: []Arg{fd(-100, ""), str("/o/z"), fd(-100, ""), str("/o/w")}, Ret: 0},
		{Name: "writev", Args: []Arg{fd(10, "/o/z")}, Ret: 3},
	}
	initial := replayFS()
	ops, err := Replay(calls, "/r/", initial)
	if err != nil {
		t.Fatal(err)
	}
	want := []Op{
		{Kind: Create, Path: "n", Dir: ".", Ino: 4, Call: 0},
		{Kind: Write, Ino: 4, Off: 0, Data: []byte("abc"), Call: 1},
		{Kind: Write, Ino: 4, Off: 3, Data: []byte("de"), Call: 2},
		{Kind: Truncate, Ino: 1, Call: 3},
		{Kind: Write, Ino: 1, Off: 5, Data: []byte("zz"), Call: 4},
		{Kind: Write, Ino: 1, Off: 1, Data: []byte("q"), Call: 6},
		{Kind: Truncate, Ino: 1, Size: 4, Call: 7},
		{Kind: SyncFile, Ino: 1, Call: 8},
		{Kind: SyncDir, Dir: "d", Call: 11},
		{Kind: Mkdir, Path: "d/m", Dir: "d", Call: 12},
		{Kind: Rmdir, Path: "e", Dir: ".", Call: 13},
		{Kind: Exchange, Path: "n", To: "a", Dir: ".", Call: 14},
		{Kind: Rename, Path: "d/x", To: "d/y", Dir: "d", Call: 15},
		{Kind: Create, Path: "b", Dir: ".", Ino: 3, Call: 16},
		{Kind: Unlink, Path: "d/y", Dir: "d", Call: 16},
		{Kind: Unlink, Path: "b", Dir: ".", Call: 17},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("ops:\n%v\nwant:\n%v", ops, want)
	}
	if !reflect.DeepEqual(initial, replayFS()) {
		t.Errorf("Replay changed the initial tree: %+v", initial)
	}
}

// TestReplayRefuses checks the calls Replay cannot model: each is an
// error naming the call, so that a run is never checked with a wrong
// model.
func TestReplayRefuses(t *testing.T) {
	open := Syscall{Name: "openat", Args: []Arg{fd(-100, ""), str("/r/a"), text("O_RDWR")}, Ret: 7, Path: "/r/a"}
	tests := []struct {
		call Syscall
		want string
	}{
		{Syscall{Name: "openat", Args: []Arg{fd(-100, ""), str("/r/q"), text("O_RDONLY")}, Ret: 7, Path: "/r/q"}, "call 0: openat of q, unknown to the model"},
		{Syscall{Name: "write", Args: []Arg{fd(8, "/r/a"), str("x")}, Ret: 1}, "call 0: write to descriptor 8 (/r/a) not opened in the log"},
		{Syscall{Name: "ftruncate", Args: []Arg{fd(8, "/r/a"), text("0")}, Ret: 0}, "call 0: ftruncate of descriptor 8 not opened in the log"},
		{Syscall{Name: "renameat", Args: []Arg{fd(-100, ""), str("/r/a"), fd(-100, ""), str("/o/a")}, Ret: 0}, "call 0: rename across the root's boundary"},
		{Syscall{Name: "linkat", Args: []Arg{fd(-100, ""), str("/o/a"), fd(-100, ""), str("/r/b"), text("0")}, Ret: 0}, "call 0: link across the root's boundary"},
		{Syscall{Name: "renameat", Args: []Arg{fd(-100, ""), str("/r/d"), fd(-100, ""), str("/r/f")}, Ret: 0}, "call 0: rename of a directory is not modelled"},
		{Syscall{Name: "renameat2", Args: []Arg{fd(-100, ""), str("/r/a"), fd(-100, ""), str("/r/d/a"), text("RENAME_EXCHANGE")}, Ret: 0}, "call 0: exchange across directories is not modelled"},
		{Syscall{Name: "renameat", Args: []Arg{fd(-100, ""), str("/r/q"), fd(-100, ""), str("/r/d/q")}, Ret: 0}, "call 0: rename of q, unknown to the model"},
		{Syscall{Name: "linkat", Args: []Arg{fd(-100, ""), str("/r/a"), fd(-100, ""), str("/r/b"), text("AT_SYMLINK_FOLLOW")}, Ret: 0}, "call 0: linkat with flags AT_SYMLINK_FOLLOW is not modelled"},
		{Syscall{Name: "linkat", Args: []Arg{fd(-100, ""), str("/r/q"), fd(-100, ""), str("/r/b"), text("0")}, Ret: 0}, "call 0: link of q, unknown to the model"},
		{Syscall{Name: "fallocate", Args: []Arg{fd(8, "/r/a")}, Ret: 0}, "call 0: fallocate is not modelled"},
	}
	for _, tt := range tests {
		_, err := Replay([]Syscall{tt.call}, "/r", replayFS())
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: error %v, want %q", tt.call.Name, err, tt.want)
		}
	}
	// A write whose data strace cut is refused, after its open.
	short := Syscall{Name: "write", Args: []Arg{fd(7, "/r/a"), str("ab")}, Ret: 5}
	if _, err := Replay([]Syscall{open, short}, "/r", replayFS()); err == nil || !strings.Contains(err.Error(), "call 1: write data truncated in the log") {
		t.Errorf("short write: error %v, want the data truncated", err)
	}
}
