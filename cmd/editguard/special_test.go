//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// specialKinds are the special files a test plants where editguard reads a
// regular file, with the words an error names each by. A device needs
// mknod, which only root may call: without it the device is left out.
var specialKinds = []struct {
	name, words string
	make        func(p string) (cleanup func(), err error)
}{
	{"FIFO", "FIFO", func(p string) (func(), error) { return func() {}, unix.Mkfifo(p, 0o600) }},
	{"socket", "socket", func(p string) (func(), error) {
		l, err := net.Listen("unix", p)
		if err != nil {
			return nil, err
		}
		return func() { l.Close() }, nil
	}},
	{"device", "character device", func(p string) (func(), error) {
		return func() {}, unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))) // /dev/null's numbers
	}},
}

// specialRun is one editguard child process's end.
type specialRun struct {
	code int
	out  string
}

// runChild runs the editguard on PATH (the test binary, as TestMain puts
// it there) in dir with env, and fails the test if it has not returned
// within 2 minutes: an open that blocks on a FIFO never returns, and the
// child is then killed so that the test ends. (A child that does not block
// returns in seconds even on a busy machine; the bound only ends a test
// that would otherwise wait for ever.)
func runChild(t *testing.T, dir string, env []string, stdin string, args ...string) specialRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "editguard", append([]string{"--root", dir, "--no-pager"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("editguard %s did not return within 2 minutes (it blocks opening a special file)\n%s", strings.Join(args, " "), out.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("editguard %s: %v", strings.Join(args, " "), err)
	}
	return specialRun{code: cmd.ProcessState.ExitCode(), out: out.String()}
}

// TestSpecialFilesDoNotBlock plants a FIFO, a unix socket and (as root) a
// character device where editguard reads a file it did not write, at the
// git index, a loose git object, editguard's own state (the name policy,
// the owner stamp, a session) and the user's key, and runs every command
// that reads them, and a hook event, as child processes. Each must return
// promptly: where the file is optional (git's), as if it were absent; else
// with an error that says what is there.
func TestSpecialFilesDoNotBlock(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git:", err)
	}
	if _, err := exec.LookPath("editguard"); err != nil {
		t.Skip("the test binary is not on PATH as editguard:", err)
	}
	// Short paths: a unix socket's name is limited to 108 bytes.
	base, err := os.MkdirTemp("", "egsp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })

	type place struct {
		name     string
		optional bool // every command succeeds as without the file
		path     func(t *testing.T, ws, keys string) string
		// want is what the output says when a command fails for the
		// special file; "" for the kind's words.
		want string
	}
	places := []place{
		{name: "git index", optional: true, path: func(t *testing.T, ws, _ string) string { return filepath.Join(ws, ".git", "index") }},
		{name: "loose object", optional: true, path: func(t *testing.T, ws, _ string) string {
			out, err := exec.Command(git, "-C", ws, "rev-parse", "HEAD:a.txt").Output()
			if err != nil {
				t.Fatal(err)
			}
			id := strings.TrimSpace(string(out))
			return filepath.Join(ws, ".git", "objects", id[:2], id[2:])
		}},
		{name: "names", path: func(t *testing.T, ws, _ string) string { return filepath.Join(ws, ".editguard", "names") }},
		{name: "owner", path: func(t *testing.T, ws, _ string) string { return filepath.Join(ws, ".editguard", "owner") }, want: "UNSAFE_STATE"},
		{name: "session", path: func(t *testing.T, ws, _ string) string {
			m, _ := filepath.Glob(filepath.Join(ws, ".editguard", "sessions", "cli-uid*.b"))
			if len(m) != 1 {
				t.Fatalf("sessions: %v, want the default CLI session's store", m)
			}
			return m[0]
		}},
		{name: "user key", path: func(t *testing.T, _, keys string) string { return filepath.Join(keys, "key") }},
	}
	commands := [][]string{
		{"read", "a.txt"}, {"log"}, {"state"}, {"history", "a.txt"}, {"tree"},
		{"rewind", "--session", "cli-test", "--dry-run"}, {"verify"}, {"exec", "--", "true"}, {"hook"},
	}
	// The cases run side by side, each in a directory and with an
	// environment of its own; "cases" returns when all have.
	var n atomic.Int32
	t.Run("cases", func(t *testing.T) {
		for i, kind := range specialKinds {
			if testing.Short() && i > 0 {
				break // the FIFO alone: the one that blocks
			}
			for _, pl := range places {
				t.Run(kind.name+"/"+pl.name, func(t *testing.T) {
					t.Parallel()
					n.Add(1)
					dir := filepath.Join(base, strings.ReplaceAll(kind.name+pl.name, " ", ""))
					ws, keys := filepath.Join(dir, "w"), filepath.Join(dir, "k")
					env := append(os.Environ(), "EDITGUARD_STATE_HOME="+keys, "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1")
					if err := os.MkdirAll(ws, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"}} {
						if out, err := exec.Command(git, append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
							t.Fatalf("git %v: %v\n%s", args, err, out)
						}
					}
					for _, args := range [][]string{{"--session", "cli-test", "read", "a.txt"}, {"--session", "cli-test", "edit", "a.txt", "--old", "one", "--new", "two"}, {"read", "a.txt"}} {
						if r := runChild(t, ws, env, "", args...); r.code != 0 {
							t.Fatalf("editguard %v: exit %d\n%s", args, r.code, r.out)
						}
					}
					p := pl.path(t, ws, keys)
					if err := os.RemoveAll(p); err != nil {
						t.Fatal(err)
					}
					cleanup, err := kind.make(p)
					if err != nil {
						if kind.name == "device" {
							t.Skipf("no device node here (%v)", err)
						}
						t.Fatal(err)
					}
					defer cleanup()
					want := pl.want
					if want == "" {
						want = kind.words
					}
					event, _ := json.Marshal(map[string]any{
						"session_id": "s1", "cwd": ws, "hook_event_name": "PreToolUse", "tool_name": "Edit",
						"tool_input": map[string]any{"file_path": filepath.Join(ws, "a.txt"), "old_string": "two", "new_string": "three"},
					})
					failed := 0
					for _, args := range commands {
						r := runChild(t, ws, env, string(event), args...)
						what := strings.Join(args, " ")
						if args[0] == "hook" {
							// A hook answers in the client's protocol, exit 0:
							// a denial, for a change of a file not read.
							if !strings.Contains(r.out, `"permissionDecision":"deny"`) {
								t.Errorf("hook: exit %d, %q; want a denial", r.code, r.out)
							}
							if pl.optional && !strings.Contains(r.out, "NOT_READ") {
								t.Errorf("hook with %s at the %s: %q; want NOT_READ, as without it", kind.name, pl.name, r.out)
							}
							if !pl.optional && !strings.Contains(r.out, "NOT_READ") {
								failed++
								if !strings.Contains(r.out, want) {
									t.Errorf("hook with %s at the %s: %q; want it to say %q", kind.name, pl.name, r.out, want)
								}
							}
							continue
						}
						switch {
						case pl.optional && r.code != 0:
							t.Errorf("%s with %s at the %s: exit %d; want it to work as without the file\n%s", what, kind.name, pl.name, r.code, r.out)
						case r.code != 0:
							failed++
							if !strings.Contains(r.out, want) {
								t.Errorf("%s with %s at the %s: exit %d, %q; want it to say %q", what, kind.name, pl.name, r.code, r.out, want)
							}
						}
					}
					if !pl.optional && failed == 0 {
						t.Errorf("with %s at the %s every command worked: the file was not read at all", kind.name, pl.name)
					}
				})
			}
		}
	})
	if n.Load() == 0 {
		t.Fatal("no case ran")
	}
}

// TestClientFilesSpecial: a FIFO at a client's configuration file, which
// doctor reads, and at the repository's exclude file, which init appends
// to, fails each with an error naming it (and git, which would wait on
// the exclude file for ever, is not asked); nothing is written through it.
func TestClientFilesSpecial(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git:", err)
	}
	if _, err := exec.LookPath("editguard"); err != nil {
		t.Skip("the test binary is not on PATH as editguard:", err)
	}
	if _, err := testPrograms(); err != nil { // init writes editguard-hook's path too
		t.Fatal(err)
	}
	ws := t.TempDir()
	env := append(os.Environ(), "EDITGUARD_STATE_HOME="+t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1")
	if out, err := exec.Command(git, "-C", ws, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := unix.Mkfifo(filepath.Join(ws, ".mcp.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runChild(t, ws, env, "", "doctor", "claude-code")
	if r.code == 0 || !strings.Contains(r.out, ".mcp.json is not a regular file (a FIFO)") {
		t.Errorf("doctor with a FIFO at .mcp.json: exit %d, %q; want it named as a FIFO", r.code, r.out)
	}
	if err := os.Remove(filepath.Join(ws, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	exclude := filepath.Join(ws, ".git", "info", "exclude")
	os.Remove(exclude)
	if err := unix.Mkfifo(exclude, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runChild(t, ws, env, "", "init", "claude-code")
	if !strings.Contains(r.out, "exclude is not a regular file (a FIFO)") {
		t.Errorf("init with a FIFO at .git/info/exclude: exit %d, %q; want the exclude file named as a FIFO", r.code, r.out)
	}
	if st, err := os.Lstat(exclude); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the exclude FIFO was replaced: %v, %v", st, err)
	}
}
