//go:build unix

package editguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/editguard/editguard"
)

// sessionStore returns the directory in which the persistent session name
// keeps its baselines.
func sessionStore(dir, name string) string {
	return filepath.Join(dir, editguard.StateDir, "sessions", name+".b")
}

// storeEntries returns the names of the entries in the session's
// directory of baselines.
func storeEntries(t *testing.T, dir, name string) []string {
	t.Helper()
	ents, err := os.ReadDir(sessionStore(dir, name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// storedEntry is what a baseline's file holds.
type storedEntry struct {
	Key      string             `json:"key"`
	Baseline editguard.Baseline `json:"baseline"`
}

func openSession(t *testing.T, w *editguard.Workspace, name string) *editguard.Session {
	t.Helper()
	s, err := w.OpenSession(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func reopen(t *testing.T, dir string) *editguard.Workspace {
	t.Helper()
	w, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestPersistentSessionAcrossOpens: what one workspace records in a
// persistent session (a read, a drop by a delete, a turn's clearing, the
// name a symlink was read by) holds for the same session in a workspace
// opened later on the same root, as for a later CLI invocation.
func TestPersistentSessionAcrossOpens(t *testing.T) {
	w1, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "b.txt", "bee\n")
	writeFile(t, dir, "target.txt", "same\n")
	writeFile(t, dir, "other.txt", "same\n")
	if err := os.Symlink("target.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	s1 := openSession(t, w1, "p")
	for _, p := range []string{"a.txt", "b.txt", "link.txt"} {
		if _, err := s1.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	// a.txt, b.txt, and target.txt under its own name and under link.txt.
	if got := storeEntries(t, dir, "p"); len(got) != 4 {
		t.Fatalf("store holds %q, want 4 baselines", got)
	}
	w1.Close()

	// Set and get: the reads of w1 let w2 change a.txt.
	w2 := reopen(t, dir)
	s2 := openSession(t, w2, "p")
	if b, ok, err := editguard.SessionBaseline(s2, "a.txt"); err != nil || !ok || b.SHA256 != sha256hex([]byte("one\n")) {
		t.Fatalf("Baseline(a.txt) in a new workspace = %+v, %v, %v; want the read", b, ok, err)
	}
	if _, err := s2.Write(ctx, "a.txt", "two\n", nil); err != nil {
		t.Fatalf("Write(a.txt) after a read in another workspace: %v", err)
	}
	// The name read through a symlink: re-pointed since, it is stale.
	os.Remove(filepath.Join(dir, "link.txt"))
	if err := os.Symlink("other.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := s2.Edit(ctx, "link.txt", []editguard.Edit{{OldString: "same", NewString: "changed"}}, nil)
	if !errors.Is(err, editguard.ErrStaleFile) || reason(err) != editguard.ReasonTypeChanged {
		t.Fatalf("Edit through the re-pointed link = %v, want STALE_FILE type_changed", err)
	}
	// Drop: a deleted file's baseline is gone; the same bytes put back
	// by someone else must be read again.
	if _, err := s2.Delete(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	writeFile(t, dir, "b.txt", "bee\n")
	w3 := reopen(t, dir)
	s3 := openSession(t, w3, "p")
	if _, ok, _ := editguard.SessionBaseline(s3, "b.txt"); ok {
		t.Error("b.txt still has a baseline after its delete")
	}
	if _, err := s3.Write(ctx, "b.txt", "new\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(b.txt) after its delete = %v, want NOT_READ", err)
	}
	if _, ok, _ := editguard.SessionBaseline(s3, "a.txt"); !ok {
		t.Error("a.txt lost its baseline")
	}
	// BeginTurn clears the store.
	if err := s3.BeginTurn(); err != nil {
		t.Fatal(err)
	}
	if got := storeEntries(t, dir, "p"); len(got) != 0 {
		t.Errorf("store after BeginTurn holds %q, want nothing", got)
	}
	w3.Close()
	w4 := reopen(t, dir)
	if _, err := openSession(t, w4, "p").Write(ctx, "a.txt", "three\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(a.txt) after BeginTurn = %v, want NOT_READ", err)
	}
}

// TestPersistentSessionDamagedEntry: a baseline's file that does not parse,
// or that holds another key's baseline, reads as no baseline.
func TestPersistentSessionDamagedEntry(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "same\n")
	writeFile(t, dir, "b.txt", "same\n")
	s := openSession(t, w, "d")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	aEntry := storeEntries(t, dir, "d")
	if _, err := s.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	entries := storeEntries(t, dir, "d")
	if len(aEntry) != 1 || len(entries) != 2 {
		t.Fatalf("store holds %q then %q, want one baseline per read", aEntry, entries)
	}
	bEntry := entries[0]
	if bEntry == aEntry[0] {
		bEntry = entries[1]
	}
	store := sessionStore(dir, "d")
	// b.txt's file now holds a.txt's baseline, as if the two keys shared
	// a name: both files are the same, so only the key tells them apart.
	data, err := os.ReadFile(filepath.Join(store, aEntry[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, bEntry), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := editguard.SessionBaseline(s, "b.txt"); ok {
		t.Error("b.txt reads a.txt's baseline")
	}
	if _, err := s.Write(ctx, "b.txt", "changed\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(b.txt) over another key's file = %v, want NOT_READ", err)
	}
	// A torn file.
	if err := os.WriteFile(filepath.Join(store, aEntry[0]), data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "changed\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(a.txt) over a torn file = %v, want NOT_READ", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "changed\n", nil); err != nil {
		t.Errorf("Write(a.txt) after reading again: %v", err)
	}
}

// legacySession writes, for session name, the one JSON map of baselines an
// older version kept in sessions/NAME.json, holding what the session has
// recorded now, and removes the session's directory.
func legacySession(t *testing.T, dir, name string) string {
	t.Helper()
	m := map[string]editguard.Baseline{}
	for _, e := range storeEntries(t, dir, name) {
		data, err := os.ReadFile(filepath.Join(sessionStore(dir, name), e))
		if err != nil {
			t.Fatal(err)
		}
		var se storedEntry
		if err := json.Unmarshal(data, &se); err != nil {
			t.Fatal(err)
		}
		m[se.Key] = se.Baseline
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(sessionStore(dir, name)); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(dir, editguard.StateDir, "sessions", name+".json")
	if err := os.WriteFile(legacy, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return legacy
}

// TestPersistentSessionLegacyImported: a session file of an older version
// is imported the first time the session is used, even when that use only
// looks a baseline up, and removed; a damaged one is removed with nothing
// imported.
func TestPersistentSessionLegacyImported(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "b.txt", "bee\n")
	s := openSession(t, w, "old")
	for _, p := range []string{"a.txt", "b.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	legacy := legacySession(t, dir, "old")

	w2 := reopen(t, dir)
	// The first use is the check of a change: it finds the read.
	if _, err := openSession(t, w2, "old").Write(ctx, "a.txt", "two\n", nil); err != nil {
		t.Fatalf("Write(a.txt) with the read in a legacy session file: %v", err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("legacy file after import: %v, want it removed", err)
	}
	if got := storeEntries(t, dir, "old"); len(got) != 2 {
		t.Errorf("store after import holds %q, want a.txt and b.txt", got)
	}
	if _, ok, _ := editguard.SessionBaseline(openSession(t, w2, "old"), "b.txt"); !ok {
		t.Error("b.txt's baseline was not imported")
	}

	// A damaged legacy file: removed, nothing read.
	if err := os.WriteFile(legacy, []byte(`{"a.txt": {"sha2`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(sessionStore(dir, "old")); err != nil {
		t.Fatal(err)
	}
	s2 := openSession(t, w2, "old")
	if _, err := s2.Write(ctx, "b.txt", "new\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(b.txt) with a damaged legacy file = %v, want NOT_READ", err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("damaged legacy file: %v, want it removed", err)
	}
	if _, err := s2.Read(ctx, "b.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(ctx, "b.txt", "new\n", nil); err != nil {
		t.Errorf("Write(b.txt) after reading: %v", err)
	}
}

// TestPersistentSessionConcurrent: goroutines of two workspaces on one root
// read files through the same persistent session at once: no baseline is
// lost. Then others read while the session's turn begins again and again:
// no read fails.
func TestPersistentSessionConcurrent(t *testing.T) {
	w1, dir := newWorkspace(t)
	w2 := reopen(t, dir)
	const workers, files = 4, 15
	for i := range 2 * workers * files {
		writeFile(t, dir, fmt.Sprintf("f/%03d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	run := func(read func(w *editguard.Workspace, worker int) error) []error {
		var wg sync.WaitGroup
		errs := make([]error, 2*workers)
		for i := range 2 * workers {
			w := []*editguard.Workspace{w1, w2}[i%2]
			wg.Go(func() { errs[i] = read(w, i) })
		}
		wg.Wait()
		return errs
	}
	errs := run(func(w *editguard.Workspace, worker int) error {
		for j := range files {
			s, err := w.OpenSession("c")
			if err != nil {
				return err
			}
			if _, err := s.Read(ctx, fmt.Sprintf("f/%03d.txt", worker*files+j), nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, reopen(t, dir), "c")
	var lost []int
	for i := range 2 * workers * files {
		if _, ok, _ := editguard.SessionBaseline(s, fmt.Sprintf("f/%03d.txt", i)); !ok {
			lost = append(lost, i)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("baselines lost: files %v", lost)
	}

	// Reads racing BeginTurn: each set either lands before a clear or
	// after it, and none fails.
	stop := make(chan struct{})
	turns := make(chan error, 1)
	go func() {
		s := openSession(t, w2, "c")
		for {
			select {
			case <-stop:
				turns <- nil
				return
			default:
			}
			if err := s.BeginTurn(); err != nil {
				turns <- err
				return
			}
		}
	}()
	errs = run(func(w *editguard.Workspace, worker int) error {
		s, err := w.OpenSession("c")
		if err != nil {
			return err
		}
		for round := range 10 {
			for j := range files {
				if _, err := s.Read(ctx, fmt.Sprintf("f/%03d.txt", worker*files+j), nil); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
			}
		}
		return nil
	})
	close(stop)
	if err := errors.Join(append(errs, <-turns)...); err != nil {
		t.Fatal(err)
	}
}

// TestPersistentSessionLock: recording or clearing a persistent session's
// baselines waits for the session's lock file, which another process of
// the session may hold; looking a baseline up does not.
func TestPersistentSessionLock(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	if _, err := openSession(t, w, "k").Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	w2, err := editguard.Open(dir, &editguard.Options{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	lock, err := os.OpenFile(filepath.Join(dir, editguard.StateDir, "sessions", "k.json.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	s := openSession(t, w2, "k")
	if _, ok, err := editguard.SessionBaseline(s, "a.txt"); !ok || err != nil {
		t.Errorf("Baseline(a.txt) under another's lock = %v, %v; want the read", ok, err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); !errors.Is(err, editguard.ErrBusy) {
		t.Errorf("Read under another's lock = %v, want BUSY", err)
	}
	if err := s.BeginTurn(); !errors.Is(err, editguard.ErrBusy) {
		t.Errorf("BeginTurn under another's lock = %v, want BUSY", err)
	}
	if _, ok, _ := editguard.SessionBaseline(s, "a.txt"); !ok {
		t.Error("the baseline was cleared under another's lock")
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if err := s.BeginTurn(); err != nil {
		t.Errorf("BeginTurn once the lock is let go: %v", err)
	}
}

// TestPersistentSessionCommand: a shell command run through a persistent
// session finds the baselines of the files it changed (an overwrite of
// another's change is reported), moves them to its results, drops those of
// the files it deleted, and gives new baselines to at most 1,000 files the
// session had not read, in path order.
func TestPersistentSessionCommand(t *testing.T) {
	w, dir := newWorkspace(t)
	for _, p := range []string{"f.txt", "g.txt", "h.txt"} {
		writeFile(t, dir, p, p+" as read\n")
	}
	s := openSession(t, w, "cmd")
	for _, p := range []string{"f.txt", "g.txt", "h.txt"} {
		if _, err := s.Read(ctx, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "f.txt", "another's change\n")
	res := runCommand(t, s, dir, `echo overwritten > f.txt; rm g.txt; echo edited > h.txt
mkdir n && seq -f n/%04g.txt 0 1001 | xargs touch`)
	if ow := res.Overwrites(); len(ow) != 1 || ow[0].Path != "f.txt" {
		t.Errorf("Overwrites() = %+v, want f.txt alone", ow)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "2 files the command created or changed are not recorded")
	}) {
		t.Errorf("Warnings = %q, want one about 2 files not recorded as read", res.Warnings)
	}
	s2 := openSession(t, reopen(t, dir), "cmd")
	want := map[string]string{"f.txt": "overwritten\n", "h.txt": "edited\n", "n/0000.txt": "", "n/0999.txt": ""}
	for p, content := range want {
		if b, ok, err := editguard.SessionBaseline(s2, p); !ok || err != nil || b.SHA256 != sha256hex([]byte(content)) {
			t.Errorf("Baseline(%s) = %+v, %v, %v; want the command's result", p, b, ok, err)
		}
	}
	for _, p := range []string{"g.txt", "n/1000.txt", "n/1001.txt"} {
		if _, ok, _ := editguard.SessionBaseline(s2, p); ok {
			t.Errorf("%s has a baseline, want none", p)
		}
	}
	if got := storeEntries(t, dir, "cmd"); len(got) != 1002 {
		t.Errorf("store holds %d baselines, want 1,002", len(got))
	}
}

// TestPersistentSessionSymlinkRefused: a symlink planted for the session's
// directory, or for one of its files, is never followed: it reads as no
// baseline, and what would write or remove through it fails with
// UNSAFE_STATE, leaving the outside untouched.
func TestPersistentSessionSymlinkRefused(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	outside := t.TempDir()

	// The directory itself.
	if err := os.Symlink(outside, sessionStore(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := openSession(t, w, "l").Read(ctx, "a.txt", nil); !errors.Is(err, editguard.ErrUnsafeState) {
		t.Errorf("Read with a symlinked session directory = %v, want UNSAFE_STATE", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("outside directory holds %d entries, want none", len(ents))
	}

	// One of its files: a.txt's baseline moved outside, a link to it put
	// in its place.
	s := openSession(t, w, "f")
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	entries := storeEntries(t, dir, "f")
	if len(entries) != 1 {
		t.Fatalf("store holds %q, want one baseline", entries)
	}
	entry := filepath.Join(sessionStore(dir, "f"), entries[0])
	moved := filepath.Join(outside, "entry")
	if err := os.Rename(entry, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, entry); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(moved)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := editguard.SessionBaseline(s, "a.txt"); ok {
		t.Error("the baseline was read through the symlink")
	}
	if _, err := s.Write(ctx, "a.txt", "two\n", nil); !errors.Is(err, editguard.ErrNotRead) {
		t.Errorf("Write(a.txt) = %v, want NOT_READ", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); !errors.Is(err, editguard.ErrUnsafeState) {
		t.Errorf("Read(a.txt) over the symlink = %v, want UNSAFE_STATE", err)
	}
	if err := s.BeginTurn(); !errors.Is(err, editguard.ErrUnsafeState) {
		t.Errorf("BeginTurn with the symlink = %v, want UNSAFE_STATE", err)
	}
	if fi, err := os.Lstat(entry); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("planted symlink: %v, %v; want it left alone", fi, err)
	}
	if after, err := os.ReadFile(moved); err != nil || string(after) != string(before) {
		t.Errorf("outside file = %q, %v; want it unchanged", after, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("outside directory holds %d entries, want 1", len(ents))
	}
	// Once it is removed, the session works again.
	os.Remove(entry)
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a.txt", "two\n", nil); err != nil {
		t.Fatal(err)
	}
	if got := storeEntries(t, dir, "f"); !slices.Equal(got, entries) {
		t.Errorf("store holds %q, want %q", got, entries)
	}
}
