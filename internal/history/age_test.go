package history

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for a Store under test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestPruneMaxAge checks retention by age: versions saved longer ago than
// MaxAge go, except the newest of each file, and younger ones stay even
// past the count.
func TestPruneMaxAge(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openStore(t, &Options{MaxAge: 24 * time.Hour})
	s.now = c.now
	for i := range 3 {
		mustSave(t, s, "a.txt", []byte{'a', byte('0' + i)}, false)
	}
	mustSave(t, s, "old.txt", []byte("only version"), false)
	c.advance(48 * time.Hour)
	mustSave(t, s, "a.txt", []byte("a3"), false)
	mustSave(t, s, "a.txt", []byte("a4"), false)

	if !s.AgeDue() {
		t.Fatal("AgeDue = false with MaxAge set and no pass ever made")
	}
	st, err := s.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if st.VersionsRemoved != 3 {
		t.Errorf("VersionsRemoved = %d, want 3 (a.txt's versions older than a day)", st.VersionsRemoved)
	}
	list, err := s.List("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list), []string{"v000005", "v000004"}; !slices.Equal(got, want) {
		t.Errorf("a.txt after Prune = %v, want %v", got, want)
	}
	if list, err := s.List("old.txt"); err != nil || len(list) != 1 {
		t.Errorf("old.txt after Prune = %v, %v; want its one version, the newest, however old", list, err)
	}
	if s.AgeDue() {
		t.Error("AgeDue = true right after a pass")
	}
	c.advance(ageEvery(24*time.Hour) + time.Second)
	if !s.AgeDue() {
		t.Errorf("AgeDue = false %v after the last pass", ageEvery(24*time.Hour))
	}
}

// TestAgeDueAcrossProcesses checks that the time of the last pass is kept
// on disk, so that a store opened afterwards (another command) does not
// make a pass of its own, and that a store without MaxAge never asks.
func TestAgeDueAcrossProcesses(t *testing.T) {
	dir := t.TempDir() + "/.editguard/history"
	s := mustOpenAt(t, dir, &Options{MaxAge: time.Hour})
	mustSave(t, s, "a", []byte("1"), false)
	if _, err := s.Prune(); err != nil {
		t.Fatal(err)
	}
	again := mustOpenAt(t, dir, &Options{MaxAge: time.Hour})
	if again.AgeDue() {
		t.Error("a store opened just after a pass says a pass is due")
	}
	later := mustOpenAt(t, dir, &Options{MaxAge: time.Hour})
	later.now = func() time.Time { return time.Now().Add(2 * ageEvery(time.Hour)) }
	if !later.AgeDue() {
		t.Error("AgeDue = false twice ageEvery after the last pass")
	}
	if none := mustOpenAt(t, dir, nil); none.AgeDue() {
		t.Error("AgeDue = true without MaxAge")
	}
	var kept int
	list, err := again.List("a")
	if err == nil {
		kept = len(list)
	}
	if kept != 1 {
		t.Errorf("List(a) = %d versions, %v; want the one, kept as the newest", kept, err)
	}
}
