package filelock

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// TestExcludesGoroutines checks that the lock serialises goroutines of one
// process: a non-atomic read-modify-write of a counter file under the lock
// must not lose increments. (A file, not a variable: the race detector cannot
// see the ordering flock provides.)
func TestExcludesGoroutines(t *testing.T) {
	dir := t.TempDir()
	lockPath, counter := filepath.Join(dir, "x.lock"), filepath.Join(dir, "n")
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
				l, err := Acquire(lockPath)
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
	if got := string(b); got != strconv.Itoa(workers*rounds) {
		t.Fatalf("counter = %s, want %d", got, workers*rounds)
	}
}
