package editguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// staleDetails runs edit and returns the STALE_FILE error it must fail with.
func staleErr(t *testing.T, err error) *editguard.Error {
	t.Helper()
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeStaleFile {
		t.Fatalf("error = %v, want STALE_FILE", err)
	}
	return e
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// TestStaleShowsChanges: a change refused because the file moved on since
// the read carries the diff from the read to now, and the session's
// baseline moves to the current content, so the agent can redo its change
// without reading again — for an in-memory and for a persistent session.
func TestStaleShowsChanges(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistent=%v", persistent), func(t *testing.T) {
			ctx := context.Background()
			w, dir := newWorkspace(t)
			writeFile(t, dir, "a.go", lines(40, func(i int) string { return fmt.Sprintf("line %d", i) }))
			s := w.NewSession("agent")
			if persistent {
				var err error
				if s, err = w.OpenSession("cli-agent"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Read(ctx, "a.go", &editguard.ReadOptions{Limit: 5}); err != nil {
				t.Fatal(err)
			}
			// Someone else changes line 30.
			writeFile(t, dir, "a.go", lines(40, func(i int) string {
				if i == 30 {
					return "line 30 changed by a person"
				}
				return fmt.Sprintf("line %d", i)
			}))
			edit := []editguard.Edit{{OldString: "line 2\n", NewString: "line two\n"}}
			_, err := s.Edit(ctx, "a.go", edit, &editguard.EditOptions{NoMerge: true})
			e := staleErr(t, err)
			changes, _ := e.Details["changes"].(string)
			if !strings.Contains(changes, "-line 30\n+line 30 changed by a person\n") || e.Details["baseline_updated"] != true {
				t.Fatalf("details = %v, want the diff of line 30 and baseline_updated", e.Details)
			}
			if e.Details["changes_summary"] != "+1 -1 lines in 1 hunk" {
				t.Errorf("changes_summary = %v", e.Details["changes_summary"])
			}
			if strings.Contains(e.RecoveryHint, "call read_file") {
				t.Errorf("hint %q asks for a read the agent no longer needs", e.RecoveryHint)
			}
			// The redo needs no read, and keeps the person's line.
			if _, err := s.Edit(ctx, "a.go", edit, nil); err != nil {
				t.Fatalf("redo after the diff: %v", err)
			}
			got := readFile(t, dir, "a.go")
			if !strings.Contains(got, "line two\n") || !strings.Contains(got, "line 30 changed by a person\n") {
				t.Fatalf("file after redo:\n%s", got)
			}
			// The session's own write is remembered too: a change on top
			// of it is shown against what it wrote.
			writeFile(t, dir, "a.go", strings.Replace(got, "line 5\n", "line five\n", 1))
			_, err = s.Edit(ctx, "a.go", []editguard.Edit{{OldString: "line 7\n", NewString: "line seven\n"}}, &editguard.EditOptions{NoMerge: true})
			if e := staleErr(t, err); !strings.Contains(fmt.Sprint(e.Details["changes"]), "+line five\n") {
				t.Fatalf("details after a change on top of our write = %v", e.Details)
			}
		})
	}
}

// TestStaleLargeChange: a change too large to show gives the changed line
// ranges, and the baseline stays, so the next attempt is refused again
// until the agent reads.
func TestStaleLargeChange(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", lines(2000, func(i int) string { return fmt.Sprintf("line %d", i) }))
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", lines(2000, func(i int) string {
		if i >= 100 && i < 400 {
			return fmt.Sprintf("rewritten %d", i)
		}
		return fmt.Sprintf("line %d", i)
	}))
	edit := []editguard.Edit{{OldString: "line 1\n", NewString: "line one\n"}}
	_, err := s.Edit(ctx, "a.txt", edit, &editguard.EditOptions{NoMerge: true})
	e := staleErr(t, err)
	if _, ok := e.Details["changes"]; ok {
		t.Fatalf("a %d-line change was shown whole", 300)
	}
	if r, _ := e.Details["changed_lines"].([]string); len(r) != 1 || r[0] != "100-399" {
		t.Fatalf("changed_lines = %v, want [100-399]", e.Details["changed_lines"])
	}
	if !strings.Contains(e.RecoveryHint, "read_file") {
		t.Errorf("hint %q does not ask for a read", e.RecoveryHint)
	}
	_, err = s.Edit(ctx, "a.txt", edit, &editguard.EditOptions{NoMerge: true})
	staleErr(t, err)
}

// TestStaleUnavailable: a file too large to keep has no diff, and the
// error says so.
func TestStaleUnavailable(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	big := lines(100000, func(i int) string { return fmt.Sprintf("line %06d", i) }) // > 1 MiB
	writeFile(t, dir, "big.txt", big)
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "big.txt", &editguard.ReadOptions{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "big.txt", "x\n"+big)
	_, err := s.Edit(ctx, "big.txt", []editguard.Edit{{OldString: "line 000001\n", NewString: "one\n"}}, nil)
	e := staleErr(t, err)
	if _, ok := e.Details["changes_unavailable"].(string); !ok {
		t.Fatalf("details = %v, want changes_unavailable", e.Details)
	}
}

// TestStaleWholeFileWriteNeedsRead: after the diff, a whole-file write sent
// again would revert the change it shows, so it still needs a full read.
func TestStaleWholeFileWriteNeedsRead(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "ONE\n")
	_, err := s.Write(ctx, "a.txt", "mine\n", nil)
	if e := staleErr(t, err); e.Details["changes"] == nil || !strings.Contains(e.RecoveryHint, "read_file") {
		t.Fatalf("details = %v, hint %q; want the changes and a read asked for the write", e.Details, e.RecoveryHint)
	}
	if _, err := s.Write(ctx, "a.txt", "mine\n", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("write sent again: %v, want NOT_READ", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "ONE\n" {
		t.Fatalf("a.txt = %q, want the other writer's content", got)
	}
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "ONE", NewString: "mine"}}, nil); err != nil {
		t.Fatalf("edit after the diff: %v", err)
	}
}

// TestEditKeepsPartialRead: an edit after a partial read leaves the
// session with a partial read, so a whole-file write still needs a full
// read, while further edits go on; a whole-file write then leaves a full
// one.
func TestEditKeepsPartialRead(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\ntwo\nthree\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "one", NewString: "ONE"}}, nil); err != nil {
		t.Fatalf("edit after a partial read: %v", err)
	}
	_, err := s.Write(ctx, "a.txt", "mine\n", nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeNotRead || e.Details["reason"] != "partial_read" {
		t.Fatalf("write after edit after partial read = %v, want NOT_READ partial_read", err)
	}
	if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "two", NewString: "TWO"}}, nil); err != nil {
		t.Fatalf("second edit: %v", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "mine\n", nil); err != nil {
		t.Fatalf("write after a full read: %v", err)
	}
	if _, err := s.Write(ctx, "a.txt", "mine again\n", nil); err != nil {
		t.Fatalf("write after a write: %v", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "mine again\n" {
		t.Fatalf("a.txt = %q", got)
	}
}

// TestWholeWriteAfterStaleSaysWhy: after a STALE_FILE showed the other
// writer's change, a whole-file write is refused because the session saw
// that change only as a diff, not because its read was partial; an edit
// goes on, and keeps that reason for the next whole-file write.
func TestWholeWriteAfterStaleSaysWhy(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "one\nTWO\n")
	if _, err := s.Write(ctx, "a.txt", "mine\n", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("write over another change = %v, want STALE_FILE", err)
	}
	for i, step := range []string{"after the diff", "after an edit"} {
		_, err := s.Write(ctx, "a.txt", "mine\n", nil)
		var e *editguard.Error
		if !errors.As(err, &e) || e.Code != editguard.CodeNotRead || e.Details["reason"] != "seen_as_diff" || !strings.Contains(e.Message, "only as a diff") {
			t.Fatalf("whole-file write %s = %v, want NOT_READ seen_as_diff", step, err)
		}
		edit := []editguard.Edit{{OldString: "one", NewString: "ONE"}, {OldString: "TWO", NewString: "2"}}[i]
		if _, err := s.Edit(ctx, "a.txt", []editguard.Edit{edit}, nil); err != nil {
			t.Fatalf("edit %s: %v", step, err)
		}
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "mine\n", nil); err != nil {
		t.Fatalf("whole-file write after a read: %v", err)
	}
}
