//go:build linux

package watch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fsnotify/fsnotify"
)

func start(t *testing.T, root string, opts Options) *Watcher {
	t.Helper()
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		return w.Add(filepath.ToSlash(rel))
	})
	if err != nil {
		t.Fatal(err)
	}
	w.Ready()
	return w
}

func mark(t *testing.T, w *Watcher) uint64 {
	t.Helper()
	_, m, _ := w.Since(0)
	if m == 0 {
		t.Fatalf("no mark: %v", w.Err())
	}
	return m
}

func since(t *testing.T, w *Watcher, m uint64) ([]Change, uint64) {
	t.Helper()
	ch, now, ok := w.Since(m)
	if !ok {
		t.Fatalf("Since(%d) not vouched for: %v", m, w.Err())
	}
	slices.SortFunc(ch, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return ch, now
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDirtySinceMark(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "a/b"), 0o755)
	write(t, filepath.Join(root, "a/b/f"), "1")
	write(t, filepath.Join(root, "g"), "1")
	w := start(t, root, Options{})
	m0 := mark(t, w)
	write(t, filepath.Join(root, "a/b/f"), "2")
	os.Remove(filepath.Join(root, "g"))
	ch, m1 := since(t, w, m0)
	if want := []Change{{Path: "a/b/f"}, {Path: "g"}}; !slices.Equal(ch, want) {
		t.Fatalf("changes %v, want %v", ch, want)
	}
	// A new directory, its files made before the watcher saw it, then a
	// file in it after: the directory is Created; the later change is an
	// event of its own, since the directory is watched by then.
	os.MkdirAll(filepath.Join(root, "n/m"), 0o755)
	write(t, filepath.Join(root, "n/m/x"), "1")
	ch, m2 := since(t, w, m1)
	if len(ch) == 0 || ch[0] != (Change{Path: "n", Created: true}) {
		t.Fatalf("changes %v: want n created", ch)
	}
	write(t, filepath.Join(root, "n/m/y"), "1")
	ch, _ = since(t, w, m2)
	if !slices.Contains(ch, Change{Path: "n/m/y"}) {
		t.Fatalf("changes %v: want n/m/y", ch)
	}
	// Nothing changed since the last mark: no changes.
	_, m3 := since(t, w, m2)
	if ch, _ := since(t, w, m3); len(ch) != 0 {
		t.Fatalf("changes %v since a mark with nothing after it", ch)
	}
}

// A directory moved into the tree brings its files without events: it is
// Created; one moved within the tree is watched at its new name.
func TestWatchMovedDirectories(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(out, "d/e"), 0o755)
	write(t, filepath.Join(out, "d/e/f"), "1")
	os.MkdirAll(filepath.Join(root, "a/s"), 0o755)
	w := start(t, root, Options{})
	m0 := mark(t, w)
	if err := os.Rename(filepath.Join(out, "d"), filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	ch, m1 := since(t, w, m0)
	if !slices.Equal(ch, []Change{{Path: "d", Created: true}}) {
		t.Fatalf("changes %v: want d created", ch)
	}
	write(t, filepath.Join(root, "d/e/g"), "1")
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	ch, m2 := since(t, w, m1)
	if want := []Change{{Path: "a"}, {Path: "b", Created: true}, {Path: "d/e/g"}}; !slices.Equal(ch, want) {
		t.Fatalf("changes %v, want %v", ch, want)
	}
	write(t, filepath.Join(root, "b/s/h"), "1")
	ch, _ = since(t, w, m2)
	if !slices.Equal(ch, []Change{{Path: "b/s/h"}}) {
		t.Fatalf("changes %v: want b/s/h (watched at its new name)", ch)
	}
}

func TestWatchNotVouched(t *testing.T) {
	t.Run("overflow injected", func(t *testing.T) {
		w := start(t, t.TempDir(), Options{})
		m := mark(t, w)
		w.Inject(fsnotify.ErrEventOverflow)
		if _, now, ok := w.Since(m); ok || now != 0 || !errors.Is(w.Err(), fsnotify.ErrEventOverflow) {
			t.Fatalf("after an overflow: ok %v now %d err %v", ok, now, w.Err())
		}
	})
	t.Run("overflow of the kernel's queue", func(t *testing.T) {
		limit := 16384
		if data, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
			limit, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if limit > 100000 {
			t.Skipf("max_queued_events is %d", limit)
		}
		root := t.TempDir()
		hold := make(chan struct{})
		w := start(t, root, Options{Hold: hold})
		go func() { hold <- struct{}{} }() // the sync's marker
		m := mark(t, w)
		// Held, the watcher's goroutine reads no more; fsnotify reads a
		// buffer of events, then the kernel's queue fills.
		for i := range limit + 8192 {
			f, err := os.Create(filepath.Join(root, strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		close(hold)
		if _, _, ok := w.Since(m); ok || !errors.Is(w.Err(), fsnotify.ErrEventOverflow) {
			t.Fatalf("after a burst past the queue: ok %v err %v", ok, w.Err())
		}
	})
	t.Run("watch limit", func(t *testing.T) {
		root := t.TempDir()
		full := errors.New("no space left on device")
		w := start(t, root, Options{Fault: func(rel string) error {
			if rel != "." {
				return full
			}
			return nil
		}})
		m := mark(t, w)
		os.Mkdir(filepath.Join(root, "new"), 0o755)
		if _, _, ok := w.Since(m); ok || !errors.Is(w.Err(), full) {
			t.Fatalf("after a failed watch: ok %v err %v", ok, w.Err())
		}
	})
	t.Run("root moved", func(t *testing.T) {
		parent := t.TempDir()
		root := filepath.Join(parent, "r")
		os.Mkdir(root, 0o755)
		w := start(t, root, Options{})
		m := mark(t, w)
		os.Rename(root, root+"2")
		if _, _, ok := w.Since(m); ok || w.Err() == nil {
			t.Fatal("a moved root is vouched for")
		}
	})
	t.Run("closed", func(t *testing.T) {
		w := start(t, t.TempDir(), Options{})
		m := mark(t, w)
		w.Close()
		if _, _, ok := w.Since(m); ok {
			t.Fatal("a closed watcher vouches")
		}
	})
	t.Run("not ready", func(t *testing.T) {
		w, err := New(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, now, ok := w.Since(0); ok || now != 0 {
			t.Fatal("a watcher not ready gives a mark")
		}
	})
	t.Run("a mark older than what it remembers", func(t *testing.T) {
		w := start(t, t.TempDir(), Options{})
		if _, _, ok := w.Since(0); ok {
			t.Fatal("mark 0 is vouched for")
		}
	})
}
