//go:build linux

package editguard_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
)

// A large file being replaced is linked into history under a lease instead
// of copied (internal/engine/held.go). These tests find the version's object by its hash
// and compare inodes: a linked object is the old file itself.

func inode(t *testing.T, p string) (ino, nlink uint64, mode uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino, uint64(st.Nlink), st.Mode & 0o777
}

// objectOf returns the path of the history object holding content.
func objectOf(t *testing.T, dir, content string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, editguard.StateDir, "history", "objects", "*", sha256hex([]byte(content))))
	if len(m) != 1 {
		t.Fatalf("history objects for the old content: %v, want one", m)
	}
	return m[0]
}

// heldWrite makes a.txt hold old, reads it in a new session, runs during
// (if set) and then writes new over it. It returns the old file's inode.
func heldWrite(t *testing.T, old, new string, during func(dir string) func()) (dir string, oldIno uint64) {
	t.Helper()
	w, dir := newWorkspace(t)
	needLeases(t, dir)
	writeFile(t, dir, "a.txt", old)
	oldIno, _, _ = inode(t, filepath.Join(dir, "a.txt"))
	s := w.NewSession("held")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if during != nil {
		defer during(dir)()
	}
	res, err := s.Write(ctx, "a.txt", new, nil)
	if err != nil || len(res.Warnings) > 0 {
		t.Fatalf("Write() = %+v, %v", res, err)
	}
	if got := readFile(t, dir, "a.txt"); got != new {
		t.Fatalf("a.txt holds %d bytes, want the new %d", len(got), len(new))
	}
	sums := checkHistoryRestorable(t, dir, "a.txt")
	if !sums[sha256hex([]byte(old))] {
		t.Fatal("the old content is not in history")
	}
	return dir, oldIno
}

func TestLargeFileLinkedIntoHistory(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	dir, oldIno := heldWrite(t, old, new, nil)
	ino, nlink, mode := inode(t, objectOf(t, dir, old))
	if ino != oldIno || nlink != 1 || mode != 0o444 {
		t.Errorf("object: inode %d, %d names, mode %o; want the old file's inode %d, one name, 0444", ino, nlink, mode, oldIno)
	}
	// Nothing was parked: no program could have the old file open.
	if ents, _ := os.ReadDir(filepath.Join(dir, editguard.StateDir, "displaced")); len(ents) > 0 {
		t.Errorf("parked files %v, want none", ents)
	}
	assertNoTemp(t, dir)
}

// A file another program has open cannot be leased: it is copied, and the
// other program's descriptor still reads the old bytes.
func TestOpenFileCopiedIntoHistory(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	var f *os.File
	dir, oldIno := heldWrite(t, old, new, func(dir string) func() {
		var err error
		if f, err = os.Open(filepath.Join(dir, "a.txt")); err != nil {
			t.Fatal(err)
		}
		return func() { f.Close() }
	})
	if ino, _, _ := inode(t, objectOf(t, dir, old)); ino == oldIno {
		t.Errorf("object is the old file, which another program had open; want a copy")
	}
	if b, err := os.ReadFile(objectOf(t, dir, old)); err != nil || string(b) != old {
		t.Errorf("object holds %d bytes, %v; want the old content", len(b), err)
	}
}

// A file with a second name is copied: the other name stays its own.
func TestHardLinkedFileCopiedIntoHistory(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	dir, oldIno := heldWrite(t, old, new, func(dir string) func() {
		if err := os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")); err != nil {
			t.Fatal(err)
		}
		return func() {}
	})
	if ino, _, _ := inode(t, objectOf(t, dir, old)); ino == oldIno {
		t.Errorf("object is the old file, which has another name; want a copy")
	}
	if got := readFile(t, dir, "b.txt"); got != old {
		t.Errorf("b.txt changed with a.txt")
	}
}

// A change that holds its file does not wait long for the directory's
// commit lock with the lease held (another process's swap may be waiting
// to open the file): it gives the lease up, makes the object a copy, and
// commits once the lock is free.
func TestHeldFileGivenUpWhileCommitLockWaits(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	dir, oldIno := heldWrite(t, old, new, func(dir string) func() {
		d, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		l, err := filelock.Acquire(context.Background(), d, nil)
		if err != nil {
			t.Fatal(err)
		}
		ino, _, _ := inode(t, filepath.Join(dir, "a.txt"))
		go func() {
			// The lock is held for 300 ms from the moment the old file
			// is linked into history, which comes before the change asks
			// for the lock, however slow the fsyncs before it are.
			object := filepath.Join(dir, editguard.StateDir, "history", "objects", "*", sha256hex([]byte(old)))
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				m, _ := filepath.Glob(object)
				var st unix.Stat_t
				if len(m) == 1 && unix.Stat(m[0], &st) == nil && st.Ino == ino {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			l.Unlock()
			d.Close()
		}()
		return func() {}
	})
	if ino, _, _ := inode(t, objectOf(t, dir, old)); ino == oldIno {
		t.Errorf("object is the old file, whose lease was given up; want a copy")
	}
}

// heldCrashWorker replaces a.txt with new content and kills itself with
// SIGKILL when the swap is about to be made: after the old file has been
// linked into history, before it has left the target's name.
func heldCrashWorker(dir string) error {
	w, err := editguard.Open(dir, nil)
	if err != nil {
		return err
	}
	s := w.NewSession("crash")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		return err
	}
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "renameat2" && c.Flags&unix.RENAME_EXCHANGE != 0 {
			unix.Kill(os.Getpid(), unix.SIGKILL)
		}
		return nil
	}, nil, nil)
	_, err = s.Write(ctx, "a.txt", heldContent("new"), nil)
	return fmt.Errorf("the write returned (%v) instead of being killed", err)
}

// crashAtHeldSwap writes a large a.txt in a new workspace and runs
// heldCrashWorker on it, which is killed between the link of the old file
// into history and the swap. It returns the workspace's directory and the
// old content.
func crashAtHeldSwap(t *testing.T) (dir, old string) {
	t.Helper()
	old = heldContent("old")
	w, dir := newWorkspace(t)
	needLeases(t, dir)
	writeFile(t, dir, "a.txt", old)
	w.Close()
	cmd := startWorker(t, "heldcrash", dir, "", filepath.Join(t.TempDir(), "out"))
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("worker ended without being killed: %v\n%s", err, cmd.Stdout)
	}
	return dir, old
}

// A process killed between the link and the swap leaves the history's
// object a second name of the target's file; the next Open, resolving the
// change's intent, makes the object a copy.
func TestOpenDetachesObjectLinkedBeforeACrash(t *testing.T) {
	dir, old := crashAtHeldSwap(t)
	oldIno, _, _ := inode(t, filepath.Join(dir, "a.txt"))
	if ino, _, _ := inode(t, objectOf(t, dir, old)); ino != oldIno {
		t.Fatalf("after the kill the object is not the target's file: nothing to detach, the test proves nothing")
	}

	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := readFile(t, dir, "a.txt"); got != old {
		t.Fatalf("a.txt changed")
	}
	checkNoSharedObjects(t, dir)
	if sums := checkHistoryRestorable(t, dir, "a.txt"); !sums[sha256hex([]byte(old))] {
		t.Errorf("the old content is not in history")
	}
	recs := ledgerRecords(t, w)
	if r := recs[len(recs)-1]; r.Outcome != "interrupted" || r.ErrorReason != "not_applied" {
		t.Errorf("last ledger record = %+v, want the intent's outcome: interrupted, not_applied", r)
	}
	// A program changing the file now does not change the version.
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed in place\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkHistoryRestorable(t, dir, "a.txt")
}

// If the file is changed in place between the crash and the next Open, the
// object's bytes are no longer the version's: Open removes the object's
// name (the version then fails to load, as a damaged one would) rather
// than leave history a name of the file.
func TestOpenUnlinksObjectOfAFileChangedAfterACrash(t *testing.T) {
	dir, old := crashAtHeldSwap(t)
	obj := objectOf(t, dir, old)
	f, err := os.OpenFile(filepath.Join(dir, "a.txt"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("changed in place\n")
	f.Close()
	if b, _ := os.ReadFile(obj); string(b) != "changed in place\n" {
		t.Fatalf("the object did not change with the file: the test proves nothing")
	}
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := os.Lstat(obj); !os.IsNotExist(err) {
		t.Errorf("object %s still there (%v), want it removed", obj, err)
	}
	checkNoSharedObjects(t, dir)
	s := w.NewSession("after")
	vs, err := w.History("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range vs {
		if v.SHA256 == sha256hex([]byte(old)) {
			found = true
			if _, err := s.Restore(ctx, "a.txt", v.ID, nil); err == nil {
				t.Errorf("restoring the version whose bytes were lost succeeded")
			}
		}
	}
	if !found {
		t.Errorf("history lists no version of the old content: %+v", vs)
	}
}

// A read by another session while a change holds the file waits for the
// hold to end and succeeds (its open would fail at once otherwise); the
// change still commits, and its history object is not the file others
// may now have open.
func TestReadDuringHeldCommit(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	w, dir := newWorkspace(t)
	needLeases(t, dir)
	writeFile(t, dir, "a.txt", old)
	a, b := w.NewSession("a"), w.NewSession("b")
	if _, err := a.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	held := pauseAtExchange(w)
	done := make(chan error, 1)
	go func() {
		_, err := a.Write(ctx, "a.txt", new, nil)
		done <- err
	}()
	<-held
	res, err := b.Read(ctx, "a.txt", nil)
	if err != nil {
		t.Fatalf("Read() while the file was held: %v", err)
	}
	if res.Content != old && res.Content != new {
		t.Errorf("Read() gave %d bytes, neither the old nor the new content", len(res.Content))
	}
	if err := <-done; err != nil {
		t.Fatalf("Write() = %v", err)
	}
	if sums := checkHistoryRestorable(t, dir, "a.txt"); !sums[sha256hex([]byte(old))] {
		t.Errorf("the old content is not in history")
	}
}

// A program that opens the file to write it in place while a change holds
// it waits, and its open then gets the file the change displaced: its
// bytes must land in a file editguard keeps (the parked one), not in the
// history's object, which stays the old content.
func TestInPlaceWriterDuringHeldCommit(t *testing.T) {
	old, new := heldContent("old"), heldContent("new")
	w, dir := newWorkspace(t)
	needLeases(t, dir)
	writeFile(t, dir, "a.txt", old)
	s := w.NewSession("a")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	held := pauseAtExchange(w)
	wrote := make(chan error, 1)
	go func() {
		<-held
		f, err := os.OpenFile(filepath.Join(dir, "a.txt"), os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			_, err = f.WriteString("mine\n")
			f.Close()
		}
		wrote <- err
	}()
	if _, err := s.Write(ctx, "a.txt", new, nil); err != nil {
		t.Fatalf("Write() = %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if sums := checkHistoryRestorable(t, dir, "a.txt"); !sums[sha256hex([]byte(old))] {
		t.Errorf("the old content is not in history")
	}
	// The writer's bytes are in the file it opened: the target, if its
	// open came after the swap, or else the displaced file, parked.
	if got := readFile(t, dir, "a.txt"); got == "mine\n" {
		t.Logf("the writer's open came after the swap")
		return
	}
	found := false
	filepath.WalkDir(filepath.Join(dir, editguard.StateDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, "/history/") {
			if b, _ := os.ReadFile(p); string(b) == "mine\n" {
				found = true
			}
		}
		return nil
	})
	if !found {
		t.Errorf("the in-place writer's bytes are neither in a.txt nor in a file editguard kept")
	}
}

// pauseAtExchange makes w's next exchange pause for 30 ms, with the file
// held, and returns a channel closed when the pause begins.
func pauseAtExchange(w *editguard.Workspace) <-chan struct{} {
	held := make(chan struct{})
	var once sync.Once
	editguard.SetFaults(w, func(c *atomicfile.Call) error {
		if c.Op == "renameat2" && c.Flags&unix.RENAME_EXCHANGE != 0 {
			once.Do(func() {
				close(held)
				time.Sleep(30 * time.Millisecond)
			})
		}
		return nil
	}, nil, nil)
	return held
}
