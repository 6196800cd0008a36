//go:build unix

package statedir

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// setup returns a workspace root, its state Dir, and an outside directory
// holding a file whose bytes must never change.
func setup(t *testing.T) (string, *Dir, string) {
	t.Helper()
	root, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside bytes, no newline"), 0o644); err != nil {
		t.Fatal(err)
	}
	rf, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rf.Close() })
	d, err := Open(rf, "", ".editguard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return root, d, outside
}

func checkOutside(t *testing.T, outside string, wantEntries int) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(outside, "secret"))
	if err != nil || string(got) != "outside bytes, no newline" {
		t.Errorf("outside file = %q, %v; want it unchanged", got, err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != wantEntries {
		t.Errorf("outside dir has %d entries, want %d", len(ents), wantEntries)
	}
}

func wantUnsafe(t *testing.T, what string, err error, kind string) {
	t.Helper()
	var ue *UnsafeError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
		t.Fatalf("%s: err = %v, want *UnsafeError", what, err)
	}
	if ue.Kind != kind {
		t.Fatalf("%s: Kind = %q, want %q", what, ue.Kind, kind)
	}
}

func TestRefusesSymlinks(t *testing.T) {
	root, d, outside := setup(t)
	state := filepath.Join(root, ".editguard")
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(state, "ledger.jsonl"))
	os.Symlink(outside, filepath.Join(state, "history"))
	os.Symlink(filepath.Join(outside, "created"), filepath.Join(state, "dangling.lock"))

	_, err := d.OpenFile("ledger.jsonl", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	wantUnsafe(t, "OpenFile(symlink)", err, "symlink")
	_, err = d.ReadFile("ledger.jsonl")
	wantUnsafe(t, "ReadFile(symlink)", err, "symlink")
	_, err = d.Sub("history/objects", true)
	wantUnsafe(t, "Sub(symlink)", err, "symlink")
	_, err = d.Open("ledger.jsonl", os.O_RDONLY, 0)
	wantUnsafe(t, "Open(symlink)", err, "symlink")
	_, err = d.Lock(context.Background(), "dangling.lock", nil)
	wantUnsafe(t, "Lock(dangling symlink)", err, "symlink")
	locks := d.Locks(2)
	defer locks.Close()
	_, err = locks.Lock(context.Background(), "dangling.lock", nil)
	wantUnsafe(t, "Locks.Lock(dangling symlink)", err, "symlink")
	checkOutside(t, outside, 1)
}

func TestRefusesWrongTypesAndHardLinks(t *testing.T) {
	root, d, outside := setup(t)
	state := filepath.Join(root, ".editguard")
	os.Mkdir(filepath.Join(state, "ledger.jsonl"), 0o755)
	os.WriteFile(filepath.Join(state, "locks"), nil, 0o644)
	if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(state, "index.jsonl")); err != nil {
		t.Skip("no hard links here:", err)
	}
	syscall.Mkfifo(filepath.Join(state, "fifo"), 0o644)

	_, err := d.OpenFile("ledger.jsonl", os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	wantUnsafe(t, "OpenFile(dir)", err, "directory")
	_, err = d.Sub("locks", true)
	wantUnsafe(t, "Sub(file)", err, "file")
	_, err = d.OpenFile("index.jsonl", os.O_RDWR|os.O_APPEND, 0)
	wantUnsafe(t, "OpenFile(hard link, write)", err, "hard-linked file")
	_, err = d.OpenFile("fifo", os.O_RDONLY, 0)
	wantUnsafe(t, "OpenFile(fifo)", err, "FIFO")
	_, err = d.Open("index.jsonl", os.O_RDWR|os.O_APPEND, 0)
	wantUnsafe(t, "Open(hard link, write)", err, "hard-linked file")
	_, err = d.Open("fifo", os.O_RDWR, 0)
	wantUnsafe(t, "Open(fifo)", err, "FIFO")
	if l, err := net.Listen("unix", filepath.Join(state, "sock")); err == nil {
		defer l.Close()
		_, err = d.ReadFile("sock")
		wantUnsafe(t, "ReadFile(socket)", err, "socket")
	} else {
		t.Logf("no unix socket here (%v)", err)
	}
	locks := d.Locks(2)
	defer locks.Close()
	_, err = locks.Lock(context.Background(), "fifo", nil)
	wantUnsafe(t, "Locks.Lock(fifo)", err, "FIFO")
	_, err = locks.Lock(context.Background(), "ledger.jsonl", nil)
	wantUnsafe(t, "Locks.Lock(dir)", err, "directory")
	checkOutside(t, outside, 1)
}

// TestWriteFileReplacesSymlinkItself checks that WriteFile over a symlink
// replaces the link, not its target.
func TestWriteFileReplacesSymlinkItself(t *testing.T) {
	root, d, outside := setup(t)
	link := filepath.Join(root, ".editguard", "s.json")
	os.Symlink(filepath.Join(outside, "secret"), link)
	if err := d.WriteFile("s.json", []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("s.json after WriteFile: %v, %v; want a regular file", fi, err)
	}
	checkOutside(t, outside, 1)
}

// TestStateDirItselfSymlink checks that a .editguard that is a symlink is
// refused.
func TestStateDirItselfSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(root, ".editguard"))
	rf, _ := os.Open(root)
	defer rf.Close()
	_, err := Open(rf, "", ".editguard")
	wantUnsafe(t, "Open(symlink)", err, "symlink")
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("outside dir has %d entries, want 0", len(ents))
	}
}

func TestSubCreates(t *testing.T) {
	root, d, _ := setup(t)
	s, err := d.Sub("history/objects/ab", true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Name() != ".editguard/history/objects/ab" {
		t.Errorf("Name() = %q", s.Name())
	}
	if fi, err := os.Stat(filepath.Join(root, ".editguard/history/objects/ab")); err != nil || !fi.IsDir() {
		t.Fatalf("created dir: %v %v", fi, err)
	}
	if _, err := d.Sub("nope", false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Sub(missing, no create) = %v, want ErrNotExist", err)
	}
}

// TestFiles checks the two ways a state file is opened: File's reads,
// writes and appends, and OpenFile's *os.File, which is left blocking with
// its O_APPEND kept.
func TestFiles(t *testing.T) {
	root, d, _ := setup(t)
	f, err := d.Open("a", os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != 0 || f.Name() != ".editguard/a" {
		t.Errorf("new file: Size %d, Name %q", f.Size(), f.Name())
	}
	if _, err := f.Write([]byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("world\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if f, err = d.Open("a", os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	if f.Size() != 12 {
		t.Errorf("Size = %d, want 12", f.Size())
	}
	if _, err := f.WriteAt([]byte("J"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 20)
	if n, err := f.ReadAt(b, 0); err != io.EOF || string(b[:n]) != "Jello world\n" {
		t.Errorf("ReadAt = %q, %v; want the whole file and io.EOF", b[:n], err)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got, err := d.ReadFile("a"); err != nil || string(got) != "Jello" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if _, err := d.Open("missing", os.O_RDONLY, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}

	of, err := d.OpenFile("a", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	fl, err := unix.FcntlInt(of.Fd(), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK != 0 || fl&unix.O_APPEND == 0 {
		t.Errorf("OpenFile's flags %#x: want O_APPEND and not O_NONBLOCK", fl)
	}
	if _, err := of.WriteAt([]byte("x"), 0); err == nil {
		t.Error("WriteAt on a file opened O_APPEND succeeded")
	}
	if _, err := of.Write([]byte("!")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, ".editguard", "a")); string(got) != "Jello!" {
		t.Errorf("file = %q, want %q", got, "Jello!")
	}
}

// TestReadDirInfoThroughDescriptor checks that an entry's Info describes
// the file in the state directory, not a file of the same relative name
// under the working directory, which is where an os.File named for
// messages (".editguard/...") would look.
func TestReadDirInfoThroughDescriptor(t *testing.T) {
	_, d, _ := setup(t)
	sub, err := d.Sub("sub", true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	f, err := sub.Open("f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("12345"))
	f.Close()
	// A decoy of the same relative name where the process runs.
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".editguard", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".editguard", "sub", "f"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	ents, err := sub.ReadDir()
	if err != nil || len(ents) != 1 {
		t.Fatalf("ReadDir() = %v, %v; want one entry", ents, err)
	}
	info, err := ents[0].Info()
	if err != nil {
		t.Fatalf("Info() error: %v", err)
	}
	if info.Name() != "f" || info.Size() != 5 || !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 || info.ModTime().IsZero() {
		t.Errorf("Info() = {%s %d %v %v}, want {f 5 -rw------- a time}", info.Name(), info.Size(), info.Mode(), info.ModTime())
	}
	t.Chdir(t.TempDir())
	if _, err := ents[0].Info(); err != nil {
		t.Errorf("Info() with nothing of that name under the working directory: %v", err)
	}
}

// TestReadFileInto checks that ReadFileInto reads into the buffer it is
// given when that is large enough, and into a new one when it is not.
func TestReadFileInto(t *testing.T) {
	_, d, _ := setup(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if err := d.WriteFile("big", want, 0o644); err != nil {
		t.Fatal(err)
	}
	small := make([]byte, 0, 100)
	got, err := d.ReadFileInto("big", small)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFileInto(small buffer) = %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if cap(got) == cap(small) {
		t.Errorf("ReadFileInto read 64 KiB into a 100-byte buffer")
	}
	large := make([]byte, 5, 1<<20)
	got, err = d.ReadFileInto("big", large)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadFileInto(large buffer) = %d bytes, %v; want the file's %d", len(got), err, len(want))
	}
	if &got[0] != &large[:1][0] {
		t.Errorf("ReadFileInto did not reuse a buffer large enough")
	}
}

// TestCheckFile: a missing entry or a regular file (hard-linked or not)
// passes; a symlink, dangling or not, a directory and a FIFO are refused,
// and nothing is followed.
func TestCheckFile(t *testing.T) {
	root, d, outside := setup(t)
	state := filepath.Join(root, ".editguard")
	os.WriteFile(filepath.Join(state, "plain"), []byte("x"), 0o644)
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(state, "link"))
	os.Symlink(filepath.Join(outside, "created"), filepath.Join(state, "dangling"))
	os.Mkdir(filepath.Join(state, "dir"), 0o755)
	syscall.Mkfifo(filepath.Join(state, "fifo"), 0o644)

	for name, want := range map[string]bool{"missing": false, "plain": true} {
		if ok, err := d.CheckFile(name); ok != want || err != nil {
			t.Errorf("CheckFile(%s) = %v, %v; want %v, nil", name, ok, err, want)
		}
	}
	if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(state, "hardlink")); err == nil {
		if ok, err := d.CheckFile("hardlink"); !ok || err != nil {
			t.Errorf("CheckFile(hard link) = %v, %v; want true, nil", ok, err)
		}
	}
	for name, kind := range map[string]string{"link": "symlink", "dangling": "symlink", "dir": "directory", "fifo": "FIFO"} {
		ok, err := d.CheckFile(name)
		wantUnsafe(t, "CheckFile("+name+")", err, kind)
		if ok {
			t.Errorf("CheckFile(%s) reports a file", name)
		}
	}
	if _, err := d.CheckFile("../x"); err == nil {
		t.Error("CheckFile(../x) = nil error, want a bad name")
	}
	checkOutside(t, outside, 1)
}
