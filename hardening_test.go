//go:build unix

package editguard_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestNewUTF8FileHasNoBOM checks that naming UTF-8 does not add a byte order
// mark (a script written that way would no longer run), and that one is
// added when asked.
func TestNewUTF8FileHasNoBOM(t *testing.T) {
	w, dir := newWorkspace(t)
	s := w.NewSession("s")
	if _, err := s.Write(ctx, "run.sh", "#!/bin/sh\necho ok\n", &editguard.WriteOptions{Encoding: "utf-8"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "run.sh"); got != "#!/bin/sh\necho ok\n" {
		t.Fatalf("run.sh = %q, want no BOM", got)
	}
	if _, err := s.Write(ctx, "bom.txt", "x\n", &editguard.WriteOptions{BOM: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, "bom.txt"); got != "\ufeffx\n" {
		t.Fatalf("bom.txt = %q, want a BOM", got)
	}
}

// TestMalformedExpectedSHA256 checks that a hash that is not one is a bad
// argument, not a stale file.
func TestMalformedExpectedSHA256(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	s := w.NewSession("s")
	for _, h := range []string{"abc", "zz" + sha256hex([]byte("a\n"))[2:], sha256hex([]byte("a\n")) + "0"} {
		_, err := s.Write(ctx, "a.txt", "b\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: h}})
		if !errors.Is(err, editguard.ErrInvalidArgument) {
			t.Errorf("Write(expected_sha256 %q) error = %v, want INVALID_ARGUMENT", h, err)
		}
	}
	upper := bytes.ToUpper([]byte(sha256hex([]byte("a\n"))))
	if _, err := s.Write(ctx, "a.txt", "b\n", &editguard.WriteOptions{Precondition: &editguard.Precondition{ExpectedSHA256: string(upper)}}); err != nil {
		t.Errorf("Write(expected_sha256 in upper case) error = %v", err)
	}
}

// TestNestedRepositoriesProtected checks that the .git of a nested
// repository or submodule, a worktree's .git file, and a nested workspace's
// .editguard cannot be changed.
func TestNestedRepositoriesProtected(t *testing.T) {
	w, dir := newWorkspace(t)
	for _, p := range []string{".git/config", "vendor/lib/.git/config", "vendor/lib/.git/hooks/pre-commit", "sub/.git", "a/b/.editguard/ledger.jsonl", "x/.EDITGUARD/key"} {
		writeFile(t, dir, p, "original\n")
	}
	s := w.NewSession("s")
	for _, p := range []string{".git/config", "vendor/lib/.git/config", "vendor/lib/.git/hooks/pre-commit", "vendor/lib/.git/hooks/new", "sub/.git", "a/b/.editguard/ledger.jsonl", "x/.EDITGUARD/key"} {
		s.Read(ctx, p, nil)
		_, err := s.Write(ctx, p, "[core]\n\tfsmonitor = touch /tmp/pwned\n", nil)
		if !errors.Is(err, editguard.ErrProtectedPath) {
			t.Errorf("Write(%s) error = %v, want PROTECTED_PATH", p, err)
		}
	}
	if got := readFile(t, dir, "vendor/lib/.git/config"); got != "original\n" {
		t.Errorf("vendor/lib/.git/config = %q, want it unchanged", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "vendor/lib/.git/hooks/new")); err == nil {
		t.Error("a hook was created in a nested repository")
	}
}

// TestNonUTF8Names checks that a path that is not UTF-8 is a name like any
// other to the library (the CLI passes such names as they are), and that a
// name copied from a listing with U+FFFD does not create a look-alike.
func TestNonUTF8Names(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a\xffb.txt", "bytes\n")
	s := w.NewSession("s")
	if r, err := s.Read(ctx, "a\xffb.txt", nil); err != nil || r.Content != "bytes\n" {
		t.Errorf("Read(non-UTF-8) = %+v, %v; want its content", r, err)
	}
	if _, err := s.Write(ctx, "a\ufffdb.txt", "look-alike\n", nil); !errors.Is(err, editguard.ErrInvalidArgument) {
		t.Errorf("Write(U+FFFD name) error = %v, want INVALID_ARGUMENT", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory has %d entries, want the state dir and the original file only", len(ents))
	}
}

// TestStateGitignore checks that .editguard keeps itself out of git add -A.
func TestStateGitignore(t *testing.T) {
	_, dir := newWorkspace(t)
	if got := readFile(t, dir, ".editguard/.gitignore"); !bytes.Contains([]byte(got), []byte("\n*\n")) {
		t.Fatalf(".editguard/.gitignore = %q, want it to ignore everything", got)
	}
	if _, err := exec.LookPath("git"); err != nil {
		return
	}
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q")
	writeFile(t, dir, "a.txt", "a\n")
	if out := run("status", "--porcelain", "--untracked-files=all"); out != "?? a.txt\n" {
		t.Fatalf("git status = %q, want only a.txt", out)
	}
}

// hostileState is one way a repository can ship a .editguard of its own.
type hostileState struct {
	name  string
	setup func(t *testing.T, state, outside string)
}

func hostileStates() []hostileState {
	link := func(target, name string) func(t *testing.T, state, outside string) {
		return func(t *testing.T, state, outside string) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(state, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, target), filepath.Join(state, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []hostileState{
		{"state dir is a symlink", func(t *testing.T, state, outside string) {
			os.Remove(state)
			if err := os.Symlink(outside, state); err != nil {
				t.Fatal(err)
			}
		}},
		{"sessions is a symlink", link("", "sessions")},
		{"key is a symlink", link("secret", "key")},
		{"key is a dangling symlink", link("created", "key")},
		{"session file is a symlink", link("secret", "sessions/s.json")},
		{"session lock is a dangling symlink", link("created", "sessions/s.json.lock")},
		{"history is a symlink", link("", "history")},
		{"history/objects is a symlink", link("", "history/objects")},
		{"history/index is a symlink", link("", "history/index")},
		{"history store lock is a dangling symlink", link("created", "history/locks/store.lock")},
		{"history index file is a symlink", link("secret", "history/index/"+sha256hex([]byte("a.txt"))[:32]+".jsonl")},
		{"history object directory is a symlink", link("", "history/objects/"+sha256hex([]byte("a.txt"))[:32])},
		{"ledger is a symlink", link("secret", "ledger.jsonl")},
		{"displaced is a symlink", link("", "displaced")},
	}
}

// TestHostileStateDir opens and uses workspaces whose .editguard was shipped
// by the repository: every access either works on editguard's own entries or
// fails with UNSAFE_STATE, and nothing outside the root changes.
func TestHostileStateDir(t *testing.T) {
	for _, h := range hostileStates() {
		t.Run(h.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			secret := filepath.Join(outside, "secret")
			os.WriteFile(secret, []byte("outside, no newline"), 0o644)
			state := filepath.Join(dir, editguard.StateDir)
			os.Mkdir(state, 0o755)
			h.setup(t, state, outside)
			writeFile(t, dir, "a.txt", "a\n")

			w, err := editguard.Open(dir, nil)
			if err == nil {
				s, serr := w.OpenSession("s")
				if serr == nil {
					if _, err = s.Read(ctx, "a.txt", nil); err == nil {
						_, err = s.Write(ctx, "a.txt", "b\n", nil)
					}
				}
				w.Close()
			}
			if !errors.Is(err, editguard.ErrUnsafeState) {
				t.Errorf("error = %v, want UNSAFE_STATE", err)
			}
			if got, _ := os.ReadFile(secret); string(got) != "outside, no newline" {
				t.Errorf("outside file = %q, want it unchanged", got)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("outside directory has %d entries, want 1", len(ents))
			}
		})
	}
}

// TestCommittedChangeWithFailedBaseline checks that a change whose bytes are
// in place is reported as committed when only recording the baseline fails.
func TestCommittedChangeWithFailedBaseline(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	s, err := w.OpenSession("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	sess := filepath.Join(dir, editguard.StateDir, "sessions", "s.json")
	os.Remove(sess)
	os.Mkdir(sess, 0o755) // saving the session now fails
	res, err := s.Write(ctx, "a.txt", "b\n", nil)
	if err != nil {
		t.Fatalf("Write() error = %v, want the committed result", err)
	}
	if len(res.Warnings) == 0 {
		t.Errorf("Warnings = %v, want one about the session", res.Warnings)
	}
	if got := readFile(t, dir, "a.txt"); got != "b\n" {
		t.Errorf("a.txt = %q", got)
	}
	var last *editguard.LedgerRecord
	w.Log(editguard.LogFilter{}, func(r *editguard.LedgerRecord) error { last = r; return nil })
	if last == nil || last.Outcome != "ok" {
		t.Errorf("last ledger record = %+v, want outcome ok", last)
	}
}

// TestNestedWorkspacesNoLostUpdate races processes that open the workspace
// R and processes that open R/sub, all appending to R/sub/log.txt. They use
// different state directories, yet must exclude each other: every
// acknowledged line must be in the file.
func TestNestedWorkspacesNoLostUpdate(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 4
	}
	w, dir := newWorkspace(t)
	w.Close()
	sub := filepath.Join(dir, "sub")
	writeFile(t, dir, "sub/log.txt", "start\n")
	if w2, err := editguard.Open(sub, nil); err != nil {
		t.Fatal(err)
	} else {
		w2.Close()
	}
	out := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 6 {
		root, p := dir, "sub/log.txt"
		if i%2 == 1 {
			root, p = sub, "log.txt"
		}
		cmds = append(cmds, startWorker(t, "append", root, fmt.Sprintf("n%d,%d,0s,%s", i, rounds, p), filepath.Join(out, fmt.Sprint(i))))
	}
	var logs []*appendLog
	for i, cmd := range cmds {
		lg := new(appendLog)
		waitWorker(t, cmd, filepath.Join(out, fmt.Sprint(i)), lg)
		logs = append(logs, lg)
	}
	checkAppended(t, readFile(t, dir, "sub/log.txt"), logs)
	if got := countCommitted(logs); got != 6*rounds {
		t.Errorf("%d edits committed, want %d", got, 6*rounds)
	}
	assertNoTemp(t, sub)
}

// TestRestoreRefusesTamperedIndex edits the history index so that version
// v000002 names the bytes of v000003, and checks that restore refuses it:
// the ledger's record of the commit says what it displaced.
func TestRestoreRefusesTamperedIndex(t *testing.T) {
	w, dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	s := w.NewSession("s")
	for _, c := range []string{"two\n", "three\n", "four\n"} {
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, "a.txt", c, nil); err != nil {
			t.Fatal(err)
		}
	}
	// v000001 holds "one", v000002 "two", v000003 "three".
	if _, err := editguard.VerifyDir(dir); err != nil {
		t.Fatalf("VerifyDir() before tampering = %v", err)
	}
	two, three := sha256hex([]byte("two\n")), sha256hex([]byte("three\n"))
	tampered := 0
	filepath.WalkDir(filepath.Join(dir, editguard.StateDir, "history"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		var out []string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.Contains(line, `"v000002"`) && strings.Contains(line, two) {
				line = strings.ReplaceAll(line, two, three)
				tampered++
			}
			out = append(out, line)
		}
		if tampered > 0 {
			os.Chmod(p, 0o644)
			return os.WriteFile(p, []byte(strings.Join(out, "")), 0o644)
		}
		return nil
	})
	if tampered == 0 {
		t.Fatal("found no index entry of v000002 to tamper with")
	}
	if _, err := editguard.VerifyDir(dir); !errors.Is(err, editguard.ErrUnsafeState) {
		t.Errorf("VerifyDir() after tampering with the index = %v, want UNSAFE_STATE", err)
	}
	if _, err := s.Read(ctx, "a.txt", nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.Restore(ctx, "a.txt", "v000002", nil)
	if !errors.Is(err, editguard.ErrUnsafeState) {
		t.Fatalf("Restore(tampered v000002) error = %v, want UNSAFE_STATE", err)
	}
	if got := readFile(t, dir, "a.txt"); got != "four\n" {
		t.Fatalf("a.txt = %q, want it unchanged", got)
	}
	if _, err := s.Restore(ctx, "a.txt", "v000001", nil); err != nil {
		t.Fatalf("Restore(v000001) error = %v", err)
	}
}

// TestRetentionAcrossProcesses writes one file many times, opening the
// workspace afresh for every write as separate CLI invocations do: the
// history keeps at most a quarter over KeepVersions, and every kept version
// loads.
func TestRetentionAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", "v0\n")
	const keep, writes = 8, 60
	for i := 1; i <= writes; i++ {
		w, err := editguard.Open(dir, &editguard.Options{KeepVersions: keep})
		if err != nil {
			t.Fatal(err)
		}
		s := w.NewSession("cli")
		if _, err := s.Read(ctx, "a.txt", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(ctx, "a.txt", fmt.Sprintf("v%d\n", i), nil); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	w, err := editguard.Open(dir, &editguard.Options{KeepVersions: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	vs, err := w.History("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < keep || len(vs) > keep+keep/4 {
		t.Fatalf("history has %d versions after %d writes, want %d to %d", len(vs), writes, keep, keep+keep/4)
	}
	if vs[0].ID != fmt.Sprintf("v%06d", writes) {
		t.Errorf("newest version = %s, want v%06d", vs[0].ID, writes)
	}
	for _, v := range vs {
		if _, err := editguard.VersionContent(w, "a.txt", v.ID); err != nil {
			t.Errorf("version %s: %v", v.ID, err)
		}
	}
}
