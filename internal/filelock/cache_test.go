//go:build unix

package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestCacheExcludes checks that locks from one Cache exclude each other
// across goroutines, shared and exclusive mixed (a shared holder must never
// see an exclusive holder inside), and that locks from the Cache and from
// AcquireAt on the same file exclude each other.
func TestCacheExcludes(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	c := NewCache(d, 2)
	defer c.Close()
	counter := filepath.Join(dir, "n")
	if err := os.WriteFile(counter, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 100
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				var l *Lock
				var err error
				switch {
				case w == 0:
					l, err = AcquireAt(context.Background(), d, "x.lock", nil)
				case (w+i)%3 == 0:
					// A shared holder reads the counter twice; an
					// exclusive holder inside would change it between.
					l, err = c.Acquire(context.Background(), "x.lock", &Options{Shared: true})
					if err != nil {
						t.Error(err)
						return
					}
					a, _ := os.ReadFile(counter)
					time.Sleep(10 * time.Microsecond)
					b, _ := os.ReadFile(counter)
					if string(a) != string(b) {
						t.Errorf("counter changed under a shared lock: %s, then %s", a, b)
					}
					l.Unlock()
					continue
				default:
					l, err = c.Acquire(context.Background(), "x.lock", nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := os.ReadFile(counter)
				n, _ := strconv.Atoi(string(b))
				os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644)
				if err := l.Unlock(); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(counter)
	want := 0
	for w := range workers {
		for i := range rounds {
			if w == 0 || (w+i)%3 != 0 {
				want++
			}
		}
	}
	if got := string(b); got != strconv.Itoa(want) {
		t.Fatalf("counter = %s, want %d", got, want)
	}
}

// TestCacheKeeps checks that a Cache reuses a descriptor, keeps at most max,
// and closes them on Close.
func TestCacheKeeps(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(openDir(t, dir), 2)
	take := func(name string) int {
		t.Helper()
		l, err := c.Acquire(context.Background(), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		fd := l.fd
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		return fd
	}
	a := take("a.lock")
	if got := take("a.lock"); got != a {
		t.Errorf("second lock of a.lock on descriptor %d, want the kept %d", got, a)
	}
	take("b.lock")
	take("c.lock") // a.lock, the least recently used, is closed
	if len(c.idle) != 2 || c.idle[0].name != "b.lock" || c.idle[1].name != "c.lock" {
		t.Errorf("kept %v, want b.lock and c.lock", c.idle)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(c.idle) != 0 {
		t.Errorf("Close kept %d descriptors", len(c.idle))
	}
	// A lock taken after Close still works, and its descriptor is closed.
	take("a.lock")
	if len(c.idle) != 0 {
		t.Errorf("a closed Cache kept %d descriptors", len(c.idle))
	}
}

// TestCacheReplacedFile checks that a lock file removed and created again
// while the Cache kept it open is locked under its new identity, so the
// lock still excludes whoever opens the name now.
func TestCacheReplacedFile(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	c := NewCache(d, 2)
	defer c.Close()
	l, err := c.Acquire(context.Background(), "x.lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	p := filepath.Join(dir, "x.lock")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = c.Acquire(context.Background(), "x.lock", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := Acquire(context.Background(), f, &Options{Timeout: 20 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		t.Fatalf("lock of the new file while the Cache holds the name = %v, want ErrBusy", err)
	}
	l.Unlock()

	// A symlink put in its place is refused, not followed.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "created")
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(context.Background(), "x.lock", nil); err == nil {
		t.Fatal("Acquire through a symlink succeeded")
	}
	if _, err := os.Lstat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target exists after Acquire: %v", err)
	}
	if len(c.idle) != 0 {
		t.Errorf("the Cache kept %d descriptors of a replaced file", len(c.idle))
	}
}
