package editguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

func TestHistoryAndRestoreRoundTrip(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	// Created by the session: history records "did not exist".
	if _, err := s.Write(ctx, "f.txt", "v1\n", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "f.txt", "v2\n", nil); err != nil {
		t.Fatal(err)
	}
	vs, err := w.History("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || !vs[1].Absent || vs[0].Absent || vs[0].SizeBytes != 3 {
		t.Fatalf("History() = %+v, want [v1 content, absent]", vs)
	}
	if vs[0].LedgerSeq == 0 {
		t.Errorf("History()[0].LedgerSeq = 0, want the ledger record's seq")
	}
	// Restore v1's content.
	res, err := s.Restore(ctx, "f.txt", vs[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "f.txt"); got != "v1\n" {
		t.Fatalf("after restore file = %q, want %q", got, "v1\n")
	}
	if res.BackupVersion == "" {
		t.Fatalf("Restore() BackupVersion empty; the displaced v2 must be in history")
	}
	// v2, displaced by the restore, is itself restorable.
	if _, err := s.Restore(ctx, "f.txt", res.BackupVersion, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "f.txt"); got != "v2\n" {
		t.Fatalf("file = %q, want %q", got, "v2\n")
	}
	// Restoring "did not exist" deletes the file, and that is undoable too.
	res, err = s.Restore(ctx, "f.txt", vs[1].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Deleted {
		t.Errorf("Restore(absent) Deleted = false")
	}
	if _, err := os.Stat(filepath.Join(dir, "f.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still exists after restoring absent version: %v", err)
	}
	if _, err := s.Restore(ctx, "f.txt", res.BackupVersion, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "f.txt"); got != "v2\n" {
		t.Fatalf("file = %q, want %q", got, "v2\n")
	}
	if n, err := w.VerifyLedger(); err != nil || n < 6 {
		t.Fatalf("VerifyLedger() = %d, %v", n, err)
	}
}

// TestRestoreRefusedWhenStale is the rewind bug other agents have: an undo
// that destroys a person's later edit. Restore must refuse.
func TestRestoreRefusedWhenStale(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	writeFile(t, dir, "f.txt", "original\n")
	if _, err := s.Read(ctx, "f.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "f.txt", "agent\n", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "f.txt", "human edit\n")
	vs, _ := w.History("f.txt")
	_, err := s.Restore(ctx, "f.txt", vs[0].ID, nil)
	if !errors.Is(err, editguard.ErrStaleFile) {
		t.Fatalf("Restore() error = %v, want STALE_FILE", err)
	}
	if got := readFile(t, dir, "f.txt"); got != "human edit\n" {
		t.Fatalf("file = %q, the human edit must survive", got)
	}
	// A fresh session has no baseline: NOT_READ.
	if _, err := w.NewSession("other").Restore(ctx, "f.txt", vs[0].ID, nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Fatalf("Restore() without read error = %v, want NOT_READ", err)
	}
	_, err = s.Restore(ctx, "f.txt", "v999", nil)
	var e *editguard.Error
	if !errors.As(err, &e) || e.Code != editguard.CodeInvalidArgument || len(e.Details["versions"].([]string)) != len(vs) {
		t.Fatalf("Restore(unknown) error = %v, want INVALID_ARGUMENT listing the %d versions", err, len(vs))
	}
}

func TestLedgerRecordsRefusalsAndReplays(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	writeFile(t, dir, "f.txt", "a\n")
	_, err1 := s.Edit(ctx, "f.txt", []editguard.Edit{{OldString: "a", NewString: "b"}}, nil) // NOT_READ
	s.Read(ctx, "f.txt", nil)
	_, err2 := s.Edit(ctx, "f.txt", []editguard.Edit{{OldString: "zzz", NewString: "b"}}, nil) // NO_MATCH
	res3, err3 := s.Edit(ctx, "f.txt", []editguard.Edit{{OldString: "a", NewString: "b"}}, nil)
	_, err4 := s.Write(ctx, "../out.txt", "x", nil) // OUTSIDE_ROOT
	if err3 != nil {
		t.Fatal(err3)
	}
	var codes []string
	w.Log(editguard.LogFilter{Session: "agent"}, func(r *editguard.LedgerRecord) error {
		codes = append(codes, r.Outcome+":"+r.ErrorCode)
		return nil
	})
	want := []string{"error:NOT_READ", "error:NO_MATCH", "ok:", "error:OUTSIDE_ROOT"}
	if len(codes) != len(want) {
		t.Fatalf("ledger outcomes = %v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("ledger outcomes = %v, want %v", codes, want)
		}
	}
	r, err := editguard.NewReplayer(w, "agent")
	if err != nil {
		t.Fatal(err)
	}
	_, got1 := r.Edit("f.txt", []editguard.Edit{{OldString: "a", NewString: "b"}}, nil)
	_, got2 := r.Edit("f.txt", []editguard.Edit{{OldString: "zzz", NewString: "b"}}, nil)
	got3, _ := r.Edit("f.txt", []editguard.Edit{{OldString: "a", NewString: "b"}}, nil)
	for i, pair := range [][2]error{{got1, err1}, {got2, err2}} {
		if errorCode(pair[0]) == "" || errorCode(pair[0]) != errorCode(pair[1]) {
			t.Errorf("replay %d = %v, want %v", i, pair[0], pair[1])
		}
	}
	if got3 == nil || got3.SHA256 != res3.SHA256 {
		t.Errorf("replay 3 = %+v, want sha %s", got3, res3.SHA256)
	}
	// Diverging call: different arguments.
	if _, err := r.Write("../out.txt", "different", nil); err == nil {
		t.Errorf("replay of a different call succeeded, want divergence")
	}
	_ = err4
}
