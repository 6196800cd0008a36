//go:build linux

package atomicfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func openDir(t *testing.T) (*Dir, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return NewDir(f), dir
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestReplaceKeepsModeAndLeavesNoTemp(t *testing.T) {
	d, dir := openDir(t)
	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("old"), 0o640)
	os.Chmod(p, 0o640)
	res, err := d.Replace("a.txt", []byte("new"), sum([]byte("old")), Options{Mode: 0o640, UID: -1, GID: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Strategy != Exchange {
		t.Errorf("Strategy = %q, want %q", res.Strategy, Exchange)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "new" {
		t.Errorf("content = %q, want %q", got, "new")
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Errorf("dir = %v, want only a.txt", names)
	}
}

// TestReplaceDetectsUnlockedWriter injects a plain write to the target just
// before the exchange: the exchange must be undone and the other writer's
// bytes kept.
func TestReplaceDetectsUnlockedWriter(t *testing.T) {
	d, dir := openDir(t)
	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("old"), 0o644)
	first := true
	d.SetHook(func(c *Call) error {
		if c.Op == "renameat2" && first {
			first = false
			os.WriteFile(p, []byte("theirs"), 0o644)
		}
		return nil
	})
	_, err := d.Replace("a.txt", []byte("ours"), sum([]byte("old")), Options{Mode: 0o644, UID: -1, GID: -1})
	if !errors.Is(err, ErrRaced) {
		t.Fatalf("Replace() error = %v, want ErrRaced", err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "theirs" {
		t.Errorf("content = %q, want %q", got, "theirs")
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Errorf("dir = %v, want only a.txt", names)
	}
}

// TestReplaceComparesExpected is TestReplaceDetectsUnlockedWriter with
// Options.Expect: the displaced file is compared with the expected bytes,
// not hashed, and any other bytes undo the exchange, whatever their length.
func TestReplaceComparesExpected(t *testing.T) {
	big := []byte(strings.Repeat("0123456789abcdef", 10_000)) // several read buffers
	for _, tc := range []struct {
		name        string
		old, theirs []byte
	}{
		{"unchanged", []byte("old"), nil},
		{"unchanged large", big, nil},
		{"empty", []byte{}, nil},
		{"same length", []byte("old"), []byte("odd")},
		{"longer", []byte("old"), []byte("older")},
		{"shorter", []byte("old"), []byte("ol")},
		{"emptied", []byte("old"), []byte{}},
		{"last byte of a large file", big, append(big[:len(big)-1:len(big)-1], 'X')},
		{"a large file grown", big, append(big[:len(big):len(big)], 'X')},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, dir := openDir(t)
			p := filepath.Join(dir, "a.txt")
			os.WriteFile(p, tc.old, 0o644)
			if tc.theirs != nil {
				first := true
				d.SetHook(func(c *Call) error {
					if c.Op == "renameat2" && first {
						first = false
						os.WriteFile(p, tc.theirs, 0o644)
					}
					return nil
				})
			}
			res, err := d.Replace("a.txt", []byte("ours"), sum(tc.old), Options{Mode: 0o644, UID: -1, GID: -1, Expect: tc.old})
			got, _ := os.ReadFile(p)
			if tc.theirs == nil {
				if err != nil || res.Strategy != Exchange || string(got) != "ours" {
					t.Fatalf("Replace() = %+v, %v; content %q, want an exchange to %q", res, err, got, "ours")
				}
			} else {
				if !errors.Is(err, ErrRaced) {
					t.Fatalf("Replace() error = %v, want ErrRaced", err)
				}
				if string(got) != string(tc.theirs) {
					t.Errorf("content = %.20q, want %.20q", got, tc.theirs)
				}
			}
			if names := listDir(t, dir); len(names) != 1 {
				t.Errorf("dir = %v, want only a.txt", names)
			}
		})
	}
}

func TestCreateRefusesExisting(t *testing.T) {
	d, dir := openDir(t)
	if _, err := d.Create("n.txt", []byte("one"), Options{Mode: 0o644, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	_, err := d.Create("n.txt", []byte("two"), Options{Mode: 0o644, UID: -1, GID: -1})
	if !errors.Is(err, ErrExist) {
		t.Fatalf("second Create() error = %v, want ErrExist", err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "n.txt"))
	if string(got) != "one" {
		t.Errorf("content = %q, want %q", got, "one")
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Errorf("dir = %v, want only n.txt", names)
	}
}

// TestLookalikeTempIsKept checks that a file with the form of a temporary
// name (a user's file, or another writer's live temp) is never removed by a
// commit, and that the commit does not collide with it.
func TestLookalikeTempIsKept(t *testing.T) {
	d, dir := openDir(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old"), 0o644)
	for _, name := range []string{".a.txt.egtmp", tempName("a.txt")} {
		os.WriteFile(filepath.Join(dir, name), []byte("user data"), 0o600)
	}
	if _, err := d.Replace("a.txt", []byte("new"), sum([]byte("old")), Options{Mode: 0o644, UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	if names := listDir(t, dir); len(names) != 3 {
		t.Errorf("dir = %v, want a.txt and both look-alikes", names)
	}
}

// TestTempNamesDiffer checks that temporary names are fresh per call, so
// writers of one target in different workspaces never share one.
func TestTempNamesDiffer(t *testing.T) {
	a, b := tempName("f.go"), tempName("f.go")
	if a == b {
		t.Fatalf("tempName twice = %q", a)
	}
	if !IsTemp(a) || IsTemp(".f.go.egtmp") || IsTemp("f.go") {
		t.Fatalf("IsTemp(%q) = %v, IsTemp(.f.go.egtmp) = %v", a, IsTemp(a), IsTemp(".f.go.egtmp"))
	}
	long := tempName(strings.Repeat("x", 255))
	if len(long) > 255 || !IsTemp(long) {
		t.Fatalf("tempName of a 255-byte name = %d bytes, IsTemp %v", len(long), IsTemp(long))
	}
}

// TestReplaceRefusesReadOnly checks that a file the caller may not write is
// not replaced although its directory is writable (root may write anything,
// as it may with a plain write).
func TestReplaceRefusesReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write a 0444 file")
	}
	d, dir := openDir(t)
	p := filepath.Join(dir, "ro.txt")
	os.WriteFile(p, []byte("old"), 0o444)
	if _, err := d.Replace("ro.txt", []byte("new"), sum([]byte("old")), Options{Mode: 0o444, UID: -1, GID: -1}); !errors.Is(err, ErrNotWritable) {
		t.Fatalf("Replace() error = %v, want ErrNotWritable", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("content = %q, want old", got)
	}
}

// TestCreateHonoursUmask checks that a new file gets 0666 less the umask.
func TestCreateHonoursUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	d, dir := openDir(t)
	if _, err := d.Create("n.txt", []byte("x"), Options{UID: -1, GID: -1}); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "n.txt"))
	if got := fi.Mode().Perm(); got != 0o640 {
		t.Fatalf("mode = %v, want 0640", got)
	}
}

// TestOpenDirDurableAndNoFollow checks that OpenDir creates a missing
// directory and refuses a symlink to one.
func TestOpenDirDurableAndNoFollow(t *testing.T) {
	d, dir := openDir(t)
	f, created, err := d.OpenDir("sub", true)
	if err != nil || !created {
		t.Fatalf("OpenDir(create) = %v, created %v", err, created)
	}
	f.Close()
	f, created, err = d.OpenDir("sub", true)
	if err != nil || created {
		t.Fatalf("OpenDir(existing) = %v, created %v", err, created)
	}
	f.Close()
	os.Symlink(t.TempDir(), filepath.Join(dir, "link"))
	if _, _, err := d.OpenDir("link", true); !errors.Is(err, ErrNotDir) {
		t.Fatalf("OpenDir(symlink) = %v, want ErrNotDir", err)
	}
}

func TestRemoveVerifies(t *testing.T) {
	d, dir := openDir(t)
	p := filepath.Join(dir, "a.txt")
	os.WriteFile(p, []byte("changed"), 0o644)
	if _, err := d.Remove("a.txt", sum([]byte("old")), Options{}); !errors.Is(err, ErrRaced) {
		t.Fatalf("Remove() error = %v, want ErrRaced", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "changed" {
		t.Fatalf("content = %q, want it kept", got)
	}
	if _, err := d.Remove("a.txt", sum([]byte("changed")), Options{}); err != nil {
		t.Fatal(err)
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Errorf("dir = %v, want empty", names)
	}
}

// endless yields 'a' forever, like a file that keeps growing while read.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestReadAllHashStopsAtLimit checks that a file growing while it is read
// costs at most the limit: the read stops past it with ErrTooLarge.
func TestReadAllStopsAtLimit(t *testing.T) {
	if _, err := readAll(endless{}, 10, 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("readAll(growing) error = %v, want ErrTooLarge", err)
	}
	data, err := readAll(strings.NewReader("exactly10!"), 4, 10)
	if err != nil || string(data) != "exactly10!" {
		t.Fatalf("readAll(10 bytes, limit 10) = %q, %v", data, err)
	}
}

// TestReadFileExpect: bytes equal to the expected ones take the caller's
// sum without a hash (shown with a sum no content has), and any other
// bytes, of the same length or not, are hashed.
func TestReadFileExpect(t *testing.T) {
	d, dir := openDir(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o644)
	const given = "given"
	for _, tc := range []struct {
		expect []byte
		want   string
	}{
		{[]byte("hello"), given},
		{[]byte("hellO"), sum([]byte("hello"))},
		{[]byte("hello!"), sum([]byte("hello"))},
		{[]byte("hell"), sum([]byte("hello"))},
		{nil, sum([]byte("hello"))},
	} {
		_, data, got, err := d.ReadFileExpect("a.txt", 0, given, tc.expect)
		if err != nil || string(data) != "hello" || got != tc.want {
			t.Errorf("ReadFileExpect(expect %q) = %q, %q, %v; want %q", tc.expect, data, got, err, tc.want)
		}
	}
}

// TestReadFileExpectLarge: a file of many read buffers that holds the
// expected bytes is returned as the caller's slice itself (no new
// memory); one that differs only in its last byte is read and hashed.
func TestReadFileExpectLarge(t *testing.T) {
	d, dir := openDir(t)
	content := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320,000 bytes
	os.WriteFile(filepath.Join(dir, "big.txt"), content, 0o644)
	expect := bytes.Clone(content)
	_, data, got, err := d.ReadFileExpect("big.txt", 0, "given", expect)
	if err != nil || got != "given" || len(data) != len(expect) || &data[0] != &expect[0] {
		t.Fatalf("ReadFileExpect(same bytes) = %d bytes, sum %q, %v; want the expected slice itself", len(data), got, err)
	}
	expect[len(expect)-1] = 'X'
	_, data, got, err = d.ReadFileExpect("big.txt", 0, "given", expect)
	if err != nil || got != sum(content) || !bytes.Equal(data, content) || &data[0] == &expect[0] {
		t.Fatalf("ReadFileExpect(last byte differs) = %d bytes, sum %q, %v; want the file's bytes and their hash", len(data), got, err)
	}
}

// TestReadWaitsForHeldFile: a read of a file another change holds under a
// lease waits until it is released instead of failing (the open uses
// O_NONBLOCK, with which a lease makes it fail with EAGAIN at once).
func TestReadWaitsForHeldFile(t *testing.T) {
	d, dir := openDir(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("held"), 0o644)
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(dir, "a.txt"), &st)
	h := d.Hold("a.txt", st.Ino, []byte("held"))
	if h == nil {
		t.Skip("no file leases here")
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		close(released)
		h.Close()
	}()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d2 := NewDir(f)
	_, data, _, err := d2.ReadFile("a.txt", 0)
	select {
	case <-released:
	default:
		t.Errorf("the read returned before the hold was released")
	}
	if err != nil || string(data) != "held" {
		t.Errorf("ReadFile() = %q, %v; want the file once released", data, err)
	}
}

// A file system that refuses RENAME_EXCHANGE sends its later commits
// straight to rename; commits on another file system keep exchanging, and
// verifying what they displace.
func TestExchangeRefusedOnOneFileSystem(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "atomicfile-")
	if err != nil {
		t.Skipf("no second file system to test on: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	var a, b syscall.Stat_t
	d, dir := openDir(t)
	if syscall.Stat(dir, &a) != nil || syscall.Stat(other, &b) != nil || a.Dev == b.Dev {
		t.Skipf("%s and %s are on one file system", dir, other)
	}
	t.Cleanup(func() {
		noExchangeMu.Lock()
		noExchangeOn = nil
		noExchangeAny.Store(false)
		noExchangeMu.Unlock()
	})
	f, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	e := NewDir(f)
	refused := 0
	d.SetHook(func(c *Call) error {
		if c.Op == "renameat2" && c.Flags&renameExchange != 0 {
			refused++
			return syscall.EINVAL
		}
		return nil
	})
	replace := func(d *Dir, root string) string {
		t.Helper()
		p := filepath.Join(root, "f.txt")
		if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := d.Replace("f.txt", []byte("new"), sum([]byte("old")), Options{UID: -1, GID: -1})
		if got, _ := os.ReadFile(p); err != nil || string(got) != "new" {
			t.Fatalf("Replace = %+v, %v; the file holds %q", res, err, got)
		}
		return res.Strategy
	}
	if s := replace(d, dir); s != Rename || refused != 1 {
		t.Fatalf("a refused exchange: strategy %q after %d refusals, want %q after 1", s, refused, Rename)
	}
	if s := replace(d, dir); s != Rename || refused != 1 {
		t.Errorf("the file system that refused: strategy %q, %d refusals; want %q without trying again", s, refused, Rename)
	}
	if s := replace(e, other); s != Exchange {
		t.Errorf("another file system: strategy %q, want %q", s, Exchange)
	}
}
