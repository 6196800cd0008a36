//go:build unix

package filelock

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

func openDir(t *testing.T, dir string) *os.File {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestExcludesGoroutines checks that the lock serialises goroutines of one
// process: a non-atomic read-modify-write of a counter file under the lock
// must not lose increments. (A file, not a variable: the race detector cannot
// see the ordering flock provides.)
func TestExcludesGoroutines(t *testing.T) {
	dir := t.TempDir()
	d := openDir(t, dir)
	counter := filepath.Join(dir, "n")
	if err := os.WriteFile(counter, []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 100
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := AcquireAt(context.Background(), d, "x.lock", nil)
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
	if got, want := string(b), strconv.Itoa(workers*rounds); got != want {
		t.Fatalf("counter = %s, want %s", got, want)
	}
}

// TestDirectoryLock checks that two separately opened descriptors of one
// directory exclude each other: the commit lock is a lock on the parent
// directory.
func TestDirectoryLock(t *testing.T) {
	dir := t.TempDir()
	a, b := openDir(t, dir), openDir(t, dir)
	l, err := Acquire(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(context.Background(), b, &Options{Timeout: 20 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Lock = %v, want ErrBusy", err)
	}
	l.Unlock()
	l2, err := Acquire(context.Background(), b, &Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("Lock after Unlock = %v", err)
	}
	l2.Unlock()
}

// TestBusyAcrossProcesses holds the lock in another process (flock(1), -o so
// that only flock itself holds it) and
// checks that the wait ends with ErrBusy instead of lasting forever.
func TestBusyAcrossProcesses(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed")
	}
	dir := t.TempDir()
	cmd := exec.Command("flock", "-o", "-x", dir, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	d := openDir(t, dir)
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := Acquire(context.Background(), d, &Options{Timeout: 50 * time.Millisecond})
		if errors.Is(err, ErrBusy) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("flock(1) never took the lock")
		}
		// flock(1) has not started yet: we got the lock; let it go.
		l.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	l, err := Acquire(context.Background(), d, &Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Lock after the holder died = %v", err)
	}
	l.Unlock()
}

// TestCanceled checks that a canceled context ends the wait.
func TestCanceled(t *testing.T) {
	dir := t.TempDir()
	a, b := openDir(t, dir), openDir(t, dir)
	l, err := Acquire(context.Background(), a, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, b, &Options{Timeout: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock with canceled context = %v, want DeadlineExceeded", err)
	}
}

// TestFreeLockTakenPastDeadline checks that a free lock is taken even when
// the caller's context is already done: a caller that only tries (a short
// deadline) must not lose a free lock to the moment its deadline passed.
func TestFreeLockTakenPastDeadline(t *testing.T) {
	dir := t.TempDir()
	f := openDir(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 200; i++ {
		l, err := Acquire(ctx, f, nil)
		if err != nil {
			t.Fatalf("attempt %d: Acquire of a free lock with a done context = %v", i, err)
		}
		l.Unlock()
	}
}

// TestAcquireAtRefusesSymlink checks that a lock path that is a symlink, even
// a dangling one, is refused and creates nothing where it points.
func TestAcquireAtRefusesSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "created")
	if err := os.Symlink(target, filepath.Join(dir, "x.lock")); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireAt(context.Background(), openDir(t, dir), "x.lock", nil); err == nil {
		t.Fatal("AcquireAt through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the symlink's target exists after AcquireAt: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireAt(context.Background(), openDir(t, dir), "d.lock", nil); err == nil {
		t.Fatal("AcquireAt on a directory succeeded")
	}
}
