//go:build unix

package history

import (
	"bufio"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestSaveKilled kills a process in the middle of saving (kill -9) and
// checks that every version it reported is intact, that the index still
// reads, and that the next Save continues the sequence.
func TestSaveKilled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "history")
	cmd := helperCmd(t, "loop", dir, "a.txt", "k", 0, "")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var reported []string
	for len(reported) < 20 && sc.Scan() {
		reported = append(reported, sc.Text())
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if len(reported) < 20 {
		t.Fatalf("helper reported %d versions before exiting, want 20", len(reported))
	}

	s, err := openAt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List("a.txt")
	if err != nil {
		t.Fatalf("List after kill: %v", err)
	}
	if len(list) < len(reported) {
		t.Fatalf("List after kill has %d versions, want at least the %d reported", len(list), len(reported))
	}
	got := ids(list)
	for _, id := range reported {
		if !slices.Contains(got, id) {
			t.Errorf("reported version %s missing after kill", id)
		}
	}
	for _, v := range list {
		if _, _, err := s.Load("a.txt", v.ID); err != nil {
			t.Errorf("Load(%s) after kill: %v", v.ID, err)
		}
	}
	v := mustSave(t, s, "a.txt", []byte("after"), false)
	if want := formatID(uint64(len(list) + 1)); v.ID != want {
		t.Errorf("Save after kill ID = %s, want %s", v.ID, want)
	}
}
