package editguard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/editguard/editguard"
)

// TestPatchTextKept: a refused patch's record names its text, which
// history keeps, and PatchText gives it back; a committed patch's records
// name it too, and a dry run's result keeps none.
func TestPatchTextKept(t *testing.T) {
	w, dir := newWorkspace(t)
	ctx := context.Background()
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	s := w.NewSession("agent")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	refusedText := "*** Begin Patch\n*** Update File: a.txt\n@@\n-zzz\n+x\n*** End Patch\n"
	var e *editguard.Error
	if _, err := s.ApplyPatch(ctx, refusedText, nil); !errors.As(err, &e) || e.Code != editguard.CodeNoMatch {
		t.Fatalf("error = %v, want NO_MATCH", err)
	}
	dryText := "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch\n"
	if _, err := s.ApplyPatch(ctx, dryText, &editguard.PatchOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	okText := "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** End Patch\n"
	if _, err := s.ApplyPatch(ctx, okText, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{refusedText, "", okText}
	i := 0
	for _, r := range ledgerRecords(t, w) {
		if r.Tool != "apply_patch" {
			continue
		}
		got, err := w.PatchText(r)
		if want[i] == "" {
			if !errors.As(err, &e) || e.Code != editguard.CodeNotFound {
				t.Errorf("record %d (%s): PatchText = %q, %v; want NOT_FOUND", r.Seq, r.Outcome, got, err)
			}
		} else if err != nil || got != want[i] {
			t.Errorf("record %d (%s): PatchText = %q, %v; want %q", r.Seq, r.Outcome, got, err, want[i])
		}
		i++
	}
	if i != len(want) {
		t.Errorf("%d apply_patch records, want %d", i, len(want))
	}
}
