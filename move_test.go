package editguard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard"
)

func exists(t *testing.T, dir, name string) bool {
	t.Helper()
	_, err := os.Lstat(filepath.Join(dir, name))
	return err == nil
}

func TestMove(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "alpha\n")
	writeFile(t, dir, "b.txt", "beta\n")
	s := w.NewSession("agent")

	if _, err := s.Move(ctx, "a.txt", "sub/c.txt", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("move without a read: %v, want NOT_READ", err)
	}
	// A partial read of the source is enough: a move discards nothing.
	if _, err := s.Read(ctx, "a.txt", &editguard.ReadOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(ctx, "a.txt", "b.txt", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("move onto an existing file: %v, want STALE_FILE", err)
	}
	if _, err := s.Move(ctx, "a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true}); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("overwrite of an unread destination: %v, want NOT_READ", err)
	}
	if _, err := s.Move(ctx, "a.txt", ".git/config", nil); errorCode(err) != editguard.CodeProtectedPath {
		t.Fatalf("move into .git: %v, want PROTECTED_PATH", err)
	}
	if _, err := s.Move(ctx, "a.txt", "../out.txt", nil); errorCode(err) != editguard.CodeOutsideRoot {
		t.Fatalf("move out of the root: %v, want OUTSIDE_ROOT", err)
	}
	if _, err := s.Move(ctx, "a.txt", ".editguard/x", nil); err == nil {
		t.Fatal("move into .editguard succeeded")
	}
	dry, err := s.Move(ctx, "a.txt", "sub/c.txt", &editguard.MoveOptions{DryRun: true})
	if err != nil || !dry.DryRun || exists(t, dir, "sub") {
		t.Fatalf("dry run = %+v, %v (sub exists %v)", dry, err, exists(t, dir, "sub"))
	}
	res, err := s.Move(ctx, "a.txt", "sub/c.txt", nil)
	if err != nil || !res.Created || res.MovedFrom != "a.txt" || res.SourceVersion == "" || res.BackupVersion == "" {
		t.Fatalf("Move = %+v, %v", res, err)
	}
	if exists(t, dir, "a.txt") || readFile(t, dir, "sub/c.txt") != "alpha\n" {
		t.Fatal("the file did not move")
	}
	// The baseline followed the file: it can be edited at once, and the
	// old name is unknown to the session.
	if _, err := s.Edit(ctx, "sub/c.txt", []editguard.Edit{{OldString: "alpha", NewString: "ALPHA"}}, nil); err != nil {
		t.Fatalf("edit after the move: %v", err)
	}
	// History: the source's version restores the file under its old name
	// (no read needed: it does not exist), the destination's records that
	// it did not exist.
	other := w.NewSession("other")
	if _, err := other.Restore(ctx, "a.txt", res.SourceVersion, nil); err != nil || readFile(t, dir, "a.txt") != "alpha\n" {
		t.Fatalf("restore of the source: %v", err)
	}
	vs, err := w.History("sub/c.txt")
	if err != nil || len(vs) != 2 || !vs[1].Absent || vs[1].ID != res.BackupVersion {
		t.Fatalf("history of the destination = %+v, %v", vs, err)
	}

	// Overwrite, after reading the destination in full.
	if _, err := s.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	res, err = s.Move(ctx, "a.txt", "b.txt", &editguard.MoveOptions{Overwrite: true})
	if err != nil || res.Created || res.BackupVersion == "" {
		t.Fatalf("overwriting Move = %+v, %v", res, err)
	}
	if exists(t, dir, "a.txt") || readFile(t, dir, "b.txt") != "alpha\n" {
		t.Fatal("the overwriting move did not happen")
	}
	if _, err := other.Restore(ctx, "b.txt", res.BackupVersion, &editguard.RestoreOptions{Precondition: &editguard.Precondition{ExpectedSHA256: res.SHA256}}); err != nil || readFile(t, dir, "b.txt") != "beta\n" {
		t.Fatalf("restore of the displaced destination: %v", err)
	}

	// A source changed since the read is refused, and nothing moves.
	writeFile(t, dir, "d.txt", "delta\n")
	if _, err := s.Read(ctx, "d.txt", nil); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "d.txt", "changed\n")
	if _, err := s.Move(ctx, "d.txt", "e.txt", nil); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("move of a changed source: %v, want STALE_FILE", err)
	}
	if exists(t, dir, "e.txt") {
		t.Fatal("e.txt created by a refused move")
	}

	// The ledger verifies, history included, and replays.
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir: %v", err)
	}
	rp, err := editguard.NewReplayer(w, "agent")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []editguard.Code{editguard.CodeNotRead, editguard.CodeStaleFile} {
		if _, err := rp.Move("a.txt", [2]string{"sub/c.txt", "b.txt"}[i], nil); errorCode(err) != want {
			t.Fatalf("replayed call %d: %v, want %s", i, err, want)
		}
	}
}

// TestMoveOppositeDirections runs moves between two directories in both
// directions at once: the locks are taken in one order, so none deadlocks.
func TestMoveOppositeDirections(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	for i := range 20 {
		writeFile(t, dir, filepathJoin("x", i), "x\n")
		writeFile(t, dir, filepathJoin("y", i), "y\n")
	}
	done := make(chan error, 2)
	for _, dirs := range [][2]string{{"x", "y"}, {"y", "x"}} {
		go func() {
			s := w.NewSession("mover-" + dirs[0])
			for i := range 20 {
				src, dst := filepathJoin(dirs[0], i), filepathJoin(dirs[1], i+100)
				if _, err := s.Move(ctx, src, dst, &editguard.MoveOptions{Precondition: &editguard.Precondition{ExpectedSizeBytes: ptr(int64(2))}}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func filepathJoin(d string, i int) string { return fmt.Sprintf("%s/f%d.txt", d, i) }
