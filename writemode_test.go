package editguard_test

import (
	"context"
	"testing"

	"github.com/editguard/editguard"
)

func TestWriteModes(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	writeFile(t, dir, "log.txt", "one\r\ntwo\r\n")
	s := w.NewSession("agent")

	// append needs no read, keeps the line endings, and keeps the old
	// version in history.
	res, err := s.Write(ctx, "log.txt", "three\n", &editguard.WriteOptions{Mode: editguard.WriteAppend})
	if err != nil || res.BackupVersion == "" {
		t.Fatalf("append = %+v, %v", res, err)
	}
	if got := readFile(t, dir, "log.txt"); got != "one\r\ntwo\r\nthree\r\n" {
		t.Fatalf("after append: %q", got)
	}
	// Appending gave the session no read of what it did not see: a
	// whole-file write still needs one.
	if _, err := s.Write(ctx, "log.txt", "gone\n", nil); errorCode(err) != editguard.CodeNotRead {
		t.Fatalf("overwrite after an append without a read: %v, want NOT_READ", err)
	}
	// Append creates a missing file.
	if _, err := s.Write(ctx, "new/log.txt", "first\n", &editguard.WriteOptions{Mode: editguard.WriteAppend}); err != nil || readFile(t, dir, "new/log.txt") != "first\n" {
		t.Fatalf("append to a new file: %v", err)
	}
	// An explicit precondition still applies to an append.
	pre := &editguard.Precondition{ExpectedSHA256: sha256hex([]byte("not it"))}
	if _, err := s.Write(ctx, "log.txt", "x\n", &editguard.WriteOptions{Mode: editguard.WriteAppend, Precondition: pre}); errorCode(err) != editguard.CodeStaleFile {
		t.Fatalf("append with a failing precondition: %v, want STALE_FILE", err)
	}

	// create refuses an existing path, without a read.
	if _, err := s.Write(ctx, "log.txt", "x\n", &editguard.WriteOptions{Mode: editguard.WriteCreate}); errorCode(err) != editguard.CodeStaleFile || reason(err) != editguard.ReasonCreated {
		t.Fatalf("create over an existing file: %v, want STALE_FILE created", err)
	}
	if _, err := s.Write(ctx, "made.txt", "x\n", &editguard.WriteOptions{Mode: editguard.WriteCreate}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := s.Write(ctx, "made.txt", "x\n", &editguard.WriteOptions{Mode: "sideways"}); errorCode(err) != editguard.CodeInvalidArgument {
		t.Fatalf("unknown mode: %v, want INVALID_ARGUMENT", err)
	}
	vs, err := w.History("log.txt")
	if err != nil || len(vs) != 1 {
		t.Fatalf("history of log.txt = %v, %v; want the version before the append", vs, err)
	}
}
