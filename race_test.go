package editguard_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// appendLog is what one writer did: the lines it committed and the lines of
// attempts that were refused.
type appendLog struct {
	Committed []string `json:"committed"`
	Refused   []string `json:"refused"`
	// Calls are the [start, end] wall-clock nanoseconds of every Edit call,
	// committed or not, for matching against other programs' writes.
	Calls [][2]int64 `json:"calls,omitempty"`
}

// appendRounds appends one line per round to name the way an agent would:
// read, edit the last line into itself plus a new line, and on STALE_FILE
// read again and retry. Every attempt writes a distinct line, so a refused
// attempt that left a trace would be visible in the file. pause is slept
// between attempts.
func appendRounds(ctx context.Context, s *editguard.Session, name, id string, rounds int, pause time.Duration) (*appendLog, error) {
	log := &appendLog{}
	for r := range rounds {
		for attempt := 0; ; attempt++ {
			if attempt > 2000 {
				return log, fmt.Errorf("%s round %d: no commit after %d attempts", id, r, attempt)
			}
			if pause > 0 {
				time.Sleep(pause)
			}
			rr, err := s.Read(ctx, name, nil)
			if err != nil {
				return log, err
			}
			last := lastLine(rr.Content)
			if last == "" {
				continue // caught a writer that does not lock mid-write: read again
			}
			line := fmt.Sprintf("%s-r%d-a%d", id, r, attempt)
			start := time.Now().UnixNano()
			_, err = s.Edit(ctx, name, []editguard.Edit{{OldString: last, NewString: last + line + "\n"}}, nil)
			log.Calls = append(log.Calls, [2]int64{start, time.Now().UnixNano()})
			if err == nil {
				log.Committed = append(log.Committed, line)
				break
			}
			log.Refused = append(log.Refused, line)
			if errors.Is(err, editguard.ErrStaleFile) || errors.Is(err, editguard.ErrNoMatch) {
				// NO_MATCH only happens when a writer outside the lock
				// changed the file between our read and our edit.
				continue
			}
			return log, err
		}
	}
	return log, nil
}

// lastLine returns the last line of content with its newline, preceded by
// the newline before it if there is one, which makes it unique in a file of
// distinct lines; or "" if content does not end in a complete line.
func lastLine(content string) string {
	if !strings.HasSuffix(content, "\n") {
		return ""
	}
	i := strings.LastIndexByte(content[:len(content)-1], '\n')
	if i < 0 {
		return content
	}
	return content[i:]
}

// checkAppended verifies a file built by appendRounds: it starts with
// "start", holds every committed line exactly once and no refused line.
func checkAppended(t *testing.T, data string, logs []*appendLog) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(data, "\n"), "\n")
	if lines[0] != "start" {
		t.Errorf("first line = %q, want %q", lines[0], "start")
	}
	count := map[string]int{}
	for _, l := range lines[1:] {
		count[l]++
	}
	committed, refused := 0, 0
	for _, lg := range logs {
		for _, l := range lg.Committed {
			committed++
			if count[l] != 1 {
				t.Errorf("committed line %q appears %d times, want 1 (lost update)", l, count[l])
			}
			delete(count, l)
		}
		for _, l := range lg.Refused {
			refused++
			if count[l] != 0 {
				t.Errorf("refused line %q is in the file", l)
			}
		}
	}
	for l, n := range count {
		t.Errorf("line %q (%d times) was never committed", l, n)
	}
	if got := len(lines) - 1; got != committed {
		t.Errorf("file has %d appended lines, want %d", got, committed)
	}
	t.Logf("%d edits committed, %d refused and retried", committed, refused)
}

// TestConcurrentSessionsNoLostUpdate races goroutines, each with its own
// session, appending to one file with read → edit → retry on STALE_FILE.
func TestConcurrentSessionsNoLostUpdate(t *testing.T) {
	const goroutines = 8
	rounds := 12
	if testing.Short() {
		rounds = 5
	}
	w, dir := newWorkspace(t)
	writeFile(t, dir, "log.txt", "start\n")
	logs := make([]*appendLog, goroutines)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			s := w.NewSession(fmt.Sprintf("g%d", g))
			logs[g], errs[g] = appendRounds(ctx, s, "log.txt", fmt.Sprintf("g%d", g), rounds, 0)
		})
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", g, err)
		}
	}
	checkAppended(t, readFile(t, dir, "log.txt"), logs)
	if got, want := countCommitted(logs), goroutines*rounds; got != want {
		t.Errorf("%d edits committed, want %d", got, want)
	}
	assertNoTemp(t, dir)
}

func countCommitted(logs []*appendLog) int {
	n := 0
	for _, lg := range logs {
		if lg != nil {
			n += len(lg.Committed)
		}
	}
	return n
}

// TestConcurrentCreate races sessions creating the same new file: exactly
// one wins, the others are told the file was created.
func TestConcurrentCreate(t *testing.T) {
	w, dir := newWorkspace(t)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := w.NewSession(fmt.Sprintf("c%d", i))
			_, errs[i] = s.Write(ctx, "new.txt", fmt.Sprintf("creator %d\n", i),
				&editguard.WriteOptions{Precondition: &editguard.Precondition{MustNotExist: true}})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("creators %d and %d both succeeded", winner, i)
			}
			winner = i
		case reason(err) != editguard.ReasonCreated:
			t.Errorf("creator %d: %v, want STALE_FILE created", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no creator succeeded")
	}
	if got, want := readFile(t, dir, "new.txt"), fmt.Sprintf("creator %d\n", winner); got != want {
		t.Errorf("new.txt = %q, want %q", got, want)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".new.txt.*.egtmp")); len(m) > 0 {
		t.Error("temporary file left behind")
	}
}
