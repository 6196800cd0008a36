package editguard_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

func TestDelete(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "precious\n")
	s := w.NewSession("agent")

	// Guarded like a whole-file write.
	if _, err := s.Delete(ctx, "a.txt", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("delete without a read: %v, want NOT_READ", err)
	}
	if _, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Limit: 1, Offset: 1}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "precious\nmore\n")
	if _, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "a.txt", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("delete after a partial read: %v, want NOT_READ", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "changed by a person\n")
	if _, err := s.Delete(ctx, "a.txt", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("delete after a change: %v, want STALE_FILE", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	dry, err := s.Delete(ctx, "a.txt", &editguard.DeleteOptions{DryRun: true})
	if err != nil || !dry.Deleted || !dry.DryRun {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if got := readFile(t, dir, "a.txt"); got != "changed by a person\n" {
		t.Fatalf("dry run changed the file: %q", got)
	}
	res, err := s.Delete(ctx, "a.txt", nil)
	if err != nil || !res.Deleted || res.BackupVersion == "" {
		t.Fatalf("Delete = %+v, %v", res, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a.txt still there: %v", err)
	}
	if _, err := s.Delete(ctx, "a.txt", nil); errorCode(err) != editguard.CodeNotFound {
		t.Fatalf("second delete: %v, want NOT_FOUND", err)
	}
	// Another session, which never read the file, restores it: nothing is
	// discarded, so no read is needed.
	other := w.NewSession("other")
	if _, err := other.Restore(ctx, "a.txt", res.BackupVersion, nil); err != nil {
		t.Fatalf("restore of the deleted file: %v", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "changed by a person\n" {
		t.Fatalf("restored a.txt = %q", got)
	}
	// The first session's read went with the file: the restored file is
	// new to it.
	if _, err := s.Delete(ctx, "a.txt", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("delete of the restored file without a read: %v, want NOT_READ", err)
	}

	// Protected paths and directories.
	if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, ".git/config", "x\n")
	if _, err := s.Delete(ctx, ".git/config", &editguard.DeleteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: sha256hex([]byte("x\n"))}}); errorCode(err) != editguard.CodeProtectedPath {
		t.Fatalf("delete .git/config: %v, want PROTECTED_PATH", err)
	}
	if _, err := s.Delete(ctx, ".git", &editguard.DeleteOptions{Precondition: &editguard.Precondition{ExpectedSizeBytes: new(int64)}}); err == nil {
		t.Fatal("delete of a directory succeeded")
	}

	// The ledger replays the calls.
	rp, err := editguard.NewReplayer(w, "agent")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []editguard.Code{editguard.CodeNotRead, editguard.CodeNotRead, editguard.CodeStaleFile} {
		if _, err := rp.Delete("a.txt", nil); errorCode(err) != want {
			t.Fatalf("replayed call %d: %v, want %s", i, err, want)
		}
	}
	if r, err := rp.Delete("a.txt", &editguard.DeleteOptions{DryRun: true}); err != nil || !r.DryRun {
		t.Fatalf("replayed dry run = %+v, %v", r, err)
	}
	if r, err := rp.Delete("a.txt", nil); err != nil || r.BackupVersion != res.BackupVersion {
		t.Fatalf("replayed delete = %+v, %v", r, err)
	}
}
