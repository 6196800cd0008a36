//go:build unix

package safeopen

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// within runs f, failing the test if it has not returned after a generous
// deadline: an open that blocks on a FIFO never returns.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return within 20 s: the open blocks", what)
	}
}

// specials makes a FIFO, a unix socket and, where permitted, a character
// device in dir, and returns their names with the kind each must be
// reported as.
func specials(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	got["fifo"] = "a FIFO"
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got["sock"] = "a socket"
	if err := unix.Mknod(filepath.Join(dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err == nil {
		got["null"] = "a character device"
	} else {
		t.Logf("no device node (%v): only FIFO and socket", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got["dir"] = "a directory"
	return got
}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	kinds := specials(t, dir)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for name, kind := range kinds {
		full := filepath.Join(dir, name)
		check := func(how string, err error) {
			t.Helper()
			var nr *NotRegularError
			if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) {
				t.Fatalf("%s %s: got %v, want a *NotRegularError", how, name, err)
			}
			if nr.Kind != kind || !strings.Contains(err.Error(), "is not a regular file ("+kind+")") {
				t.Errorf("%s %s: %q, want it to say it is %s", how, name, err, kind)
			}
		}
		within(t, "Open "+name, func() {
			f, err := Open(full)
			if f != nil {
				f.Close()
			}
			check("Open", err)
		})
		within(t, "ReadFile "+name, func() { _, err := ReadFile(full, 1<<20); check("ReadFile", err) })
		within(t, "OpenIn "+name, func() {
			f, err := OpenIn(root, name)
			if f != nil {
				f.Close()
			}
			check("OpenIn", err)
		})
		within(t, "ReadFileIn "+name, func() { _, err := ReadFileIn(root, name, 1<<20); check("ReadFileIn", err) })
	}
	// A symlink to a FIFO is what it points to.
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	within(t, "ReadFileIn link", func() {
		if _, err := ReadFileIn(root, "link", 1<<20); !errors.Is(err, ErrNotRegular) {
			t.Errorf("a symlink to a FIFO: %v, want ErrNotRegular", err)
		}
	})
}

func TestReadsRegularFiles(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(name, 6)
	if err != nil || string(b) != "hello\n" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
	var tl *TooLargeError
	if _, err := ReadFile(name, 5); !errors.As(err, &tl) || tl.Size != 6 || tl.Max != 5 {
		t.Errorf("ReadFile over max: %v, want a *TooLargeError of 6 bytes over 5", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if b, err := ReadFileIn(root, "f", 6); err != nil || string(b) != "hello\n" {
		t.Fatalf("ReadFileIn: %q, %v", b, err)
	}
	if _, err := ReadFileIn(root, "../f", 6); err == nil {
		t.Error("ReadFileIn left the root")
	}
	f, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 10)
	if n, err := f.Read(buf); n != 6 || err != nil {
		t.Errorf("a read of the file Open opened: %d, %v", n, err)
	}
}
