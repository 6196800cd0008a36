package editguard_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// TestHistoryMaxAge checks retention by age through the workspace: the
// versions an old session displaced are retired once older than
// HistoryMaxAge but the newest of each file, a later session's change can
// still be rewound, and
// restore and rewind say plainly that a version they need was retired.
func TestHistoryMaxAge(t *testing.T) {
	const maxAge = 500 * time.Millisecond
	dir := t.TempDir()
	opts := &editguard.Options{HistoryMaxAge: maxAge}
	w, err := editguard.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f.txt", "zero\n")
	writeFile(t, dir, "g.txt", "g0\n")
	old := w.NewSession("old")
	if _, err := old.Read(ctx, "f.txt", nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"one\n", "two\n", "three\n"} {
		if _, err := old.Write(ctx, "f.txt", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	oldest, err := w.History("f.txt")
	if err != nil || len(oldest) != 3 {
		t.Fatalf("History = %v, %v; want the old session's versions", oldest, err)
	}
	time.Sleep(maxAge + 100*time.Millisecond)

	recent := w.NewSession("recent")
	if _, err := recent.Read(ctx, "g.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := recent.Edit(ctx, "g.txt", []editguard.Edit{{OldString: "g0", NewString: "g1"}}, nil); err != nil {
		t.Fatal(err)
	}
	// Close waits for the pass by age that the edit's commit started.
	w.Close()
	w, err = editguard.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	vs, err := w.History("f.txt")
	if err != nil || len(vs) != 1 {
		t.Fatalf("History after the pass by age = %v, %v; want only the newest, which the old session's last write displaced", vs, err)
	}
	retired := oldest[len(oldest)-1].ID
	s := w.NewSession("person")
	s.Read(ctx, "f.txt", nil)
	_, err = s.Restore(ctx, "f.txt", retired, nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeNotFound || e.Details["retired"] != true || !strings.Contains(e.Message, "retired") {
		t.Fatalf("Restore(%s) error = %v, want NOT_FOUND saying the version was retired", retired, err)
	}

	res, err := s.Rewind(ctx, "old", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0].Error.Message, "retired") {
		t.Fatalf("Rewind(old) refused = %+v, want f.txt refused as retired", res.Refused)
	}
	if got := readFile(t, dir, "f.txt"); got != "three\n" {
		t.Fatalf("f.txt after the refused rewind = %q, want it unchanged", got)
	}

	res, err = s.Rewind(ctx, "recent", nil)
	if err != nil || len(res.Rewound) != 1 {
		t.Fatalf("Rewind(recent) = %+v, %v; want g.txt rewound", res, err)
	}
	if got := readFile(t, dir, "g.txt"); got != "g0\n" {
		t.Fatalf("g.txt after rewinding the recent session = %q, want %q", got, "g0\n")
	}
}
