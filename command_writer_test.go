//go:build unix

package editguard_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/editguard/editguard"
)

// TestCommandWriterUnknown: a command begun with WriterUnknown, during
// which "a person" saves a.txt (a file the session read) and the command
// rewrites b.txt. Both changes are recorded as made by a writer unknown
// (result, totals and ledger); neither counts as a read (an edit of a.txt
// is NOT_READ with reason writer_unknown); a second command that starts
// from what the first left overwrote nobody's change; a rewind of the
// session refuses both files (STALE_FILE, writer_unknown) and leaves them,
// and with Force puts them back.
func TestCommandWriterUnknown(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "as read\n")
	writeFile(t, dir, "b.txt", "b one\n")
	s := w.NewSession("agent")
	for _, p := range []string{"a.txt", "b.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.BeginCommand(ctx, "sed -i s/one/two/ b.txt", &editguard.CommandOptions{Tool: "Bash", WriterUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "a person's save\n") // while the command runs
	runShell(t, dir, "sed -i s/one/two/ b.txt")
	res, err := c.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Totals.WriterUnknown != 2 || len(res.Changes) != 2 {
		t.Fatalf("totals %+v, changes %+v: want 2 changes by a writer unknown", res.Totals, res.Changes)
	}
	for _, ch := range res.Changes {
		if !ch.WriterUnknown || !ch.ReadBefore || ch.Overwrote {
			t.Errorf("change %+v: want writer unknown, read before, no overwrite", ch)
		}
	}
	unknown := map[string]bool{}
	for _, r := range ledgerRecords(t, w) {
		var a struct {
			WriterUnknown bool `json:"writer_unknown"`
		}
		json.Unmarshal(r.Args, &a)
		if r.Tool == "Bash" {
			unknown[r.Path] = a.WriterUnknown
		}
	}
	if !unknown["a.txt"] || !unknown["b.txt"] {
		t.Fatalf("ledger records of the command, writer_unknown by path: %v", unknown)
	}

	// Not a read: the person's save cannot be overwritten on its strength.
	_, err = s.Edit(ctx, "a.txt", []editguard.Edit{{OldString: "person", NewString: "agent"}}, nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeNotRead || e.Details["reason"] != editguard.ReasonWriterUnknown {
		t.Fatalf("edit of a.txt after the command: %v, want NOT_READ (writer_unknown)", err)
	}

	// A later command from what this one left overwrote nobody's change.
	res2 := runCommandOpts(t, s, dir, "sed -i s/two/three/ b.txt", &editguard.CommandOptions{Tool: "Bash", WriterUnknown: true})
	if res2.Totals.Overwrote != 0 || res2.Totals.WriterUnknown != 1 {
		t.Fatalf("second command: totals %+v, want one change by a writer unknown and no overwrite", res2.Totals)
	}

	rw, err := s.Rewind(ctx, "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rw.Rewound) != 0 || len(rw.Refused) != 2 {
		t.Fatalf("rewind: %+v, want both files refused", rw)
	}
	for _, r := range rw.Refused {
		if r.Error.Code != editguard.CodeStaleFile || r.Error.Details["reason"] != editguard.ReasonWriterUnknown {
			t.Errorf("refusal of %s: %v (%v), want STALE_FILE writer_unknown", r.Path, r.Error, r.Error.Details["reason"])
		}
	}
	if got := readFile(t, dir, "a.txt"); got != "a person's save\n" {
		t.Fatalf("a.txt after the refused rewind = %q", got)
	}
	rw, err = s.Rewind(ctx, "agent", &editguard.RewindOptions{Force: true})
	if err != nil || len(rw.Rewound) != 2 {
		t.Fatalf("rewind with Force: %+v, %v; want both files rewound", rw, err)
	}
	if a, b := readFile(t, dir, "a.txt"), readFile(t, dir, "b.txt"); a != "as read\n" || b != "b one\n" {
		t.Errorf("after rewind with Force: a.txt %q, b.txt %q", a, b)
	}
}
