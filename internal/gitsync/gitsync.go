//go:build unix

// Package gitsync runs the git commands behind editguard's publish and pull:
// it fetches one branch of a remote, reads files of a commit, builds a
// commit that changes exactly a set of paths on top of another, and pushes
// it with a lease, so that the remote branch moves only from the head the
// commit was built on.
//
// It runs the real git binary, never a shell: every command is an argument
// list, in an environment of its own (no GIT_DIR or GIT_INDEX_FILE of the
// caller leaks in, LC_ALL=C so messages can be told apart, no terminal
// prompts), with settings on its command line that override the
// repository's (no core.fsmonitor program, and blobs over the limit
// streamed; see globalArgs), in a new session without a controlling
// terminal (so ssh cannot stop to ask for a passphrase either), and under
// a context: when the context ends, the whole process group is killed.
//
// Nothing here decides what may be published or pulled; that is the
// editguard package's job. This package only knows git.
package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrGitNotFound reports that no git binary was found in PATH.
var ErrGitNotFound = errors.New("git was not found in PATH")

// ErrNotRepository reports a directory that is not inside a git working tree.
var ErrNotRepository = errors.New("not inside a git working tree")

// Error is a git command that failed.
type Error struct {
	Args   []string // the arguments after "git"
	Exit   int      // exit status, or -1 if git did not run to its end
	Stderr string   // what git printed on its standard error, trimmed
	Err    error    // the cause: an *exec.ExitError, a context error, ...
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", firstArg(e.Args), msg)
}

func (e *Error) Unwrap() error { return e.Err }

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// Timeouts of the commands Repo runs, unless the caller's context ends
// first. A fetch or push crosses the network and may move a large pack.
const (
	LocalTimeout  = 2 * time.Minute
	RemoteTimeout = 5 * time.Minute
)

// Repo is a git working tree, as seen from a directory inside it.
type Repo struct {
	git    string // absolute path of the git binary
	dir    string // the directory git runs in: the working tree's top
	prefix string // the directory Open was given, relative to the top, with a trailing slash ("" at the top)
	env    []string
	// maxBlob is the largest content ReadBlobs reads; 0 means no limit.
	maxBlob int64
}

// Open finds the git working tree that contains dir. It fails with an error
// wrapping ErrGitNotFound when there is no git binary, and ErrNotRepository
// when dir is not in a working tree.
func Open(ctx context.Context, dir string) (*Repo, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGitNotFound, err)
	}
	if git, err = filepath.Abs(git); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrGitNotFound, err)
	}
	r := &Repo{git: git, dir: dir, env: cleanEnv(os.Environ())}
	out, err := r.run(ctx, nil, "rev-parse", "--show-toplevel", "--show-prefix")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return nil, fmt.Errorf("%w: %s", ErrNotRepository, dir)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 1 || lines[0] == "" {
		// A bare repository, or inside .git: no working tree.
		return nil, fmt.Errorf("%w: %s", ErrNotRepository, dir)
	}
	r.dir = lines[0]
	if len(lines) > 1 {
		r.prefix = lines[1]
	}
	return r, nil
}

// SetMaxBlobSize sets the largest content ReadBlobs reads (see there), and
// makes every git command Repo runs stream blobs larger than n instead of
// holding them whole in memory (core.bigFileThreshold, where n is below
// git's default): a fetch of a branch holding a huge blob then costs git
// little memory, and ReadBlobs never reads such a blob. n <= 0 removes the
// limit. Call it before the Repo is used.
func (r *Repo) SetMaxBlobSize(n int64) { r.maxBlob = max(n, 0) }

// Top returns the working tree's top directory.
func (r *Repo) Top() string { return r.dir }

// Prefix returns the directory Open was given, relative to the top, with a
// trailing slash, or "" if it is the top.
func (r *Repo) Prefix() string { return r.prefix }

// localEnv lists the variables that make git work on another repository
// than the one it finds from its directory (git rev-parse --local-env-vars),
// and others that would change what the commands here do. They are removed
// from the environment git runs in.
var localEnv = []string{
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
	"GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
	"GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX",
	"GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_QUARANTINE_PATH", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
	"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_EDITOR", "GIT_PAGER", "GIT_TRACE", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS",
	"GIT_ICASE_PATHSPECS", "GIT_LITERAL_PATHSPECS", "LC_ALL", "LANG", "LANGUAGE",
}

// cleanEnv returns environ without localEnv's variables, and with those
// that keep git from waiting for a person and make its messages stable.
func cleanEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range localEnv {
			if name == n || strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
				drop = true
				break
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return append(out,
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",      // never ask for a user name or password
		"GCM_INTERACTIVE=never",      // nor through Git Credential Manager
		"GIT_LITERAL_PATHSPECS=1",    // a path is a path, never a pattern
		"GIT_OPTIONAL_LOCKS=0",       // no index refresh behind the person's back
		"GIT_ADVICE=0",               // shorter messages (git 2.46+)
		"GIT_PAGER=cat", "PAGER=cat", // never a pager
	)
}

// gitBigFileDefault is git's default core.bigFileThreshold.
const gitBigFileDefault = 512 << 20

// globalArgs come before every command's own arguments. Settings given on
// the command line override the repository's configuration:
//
//   - core.fsmonitor is emptied: it names a program that git runs whenever
//     it reads an index (check-attr, diff-tree, read-tree, update-index and
//     write-tree all do). None of the commands here needs it, and a
//     configuration written by anyone but the person (an upstream tree
//     entry .git/config written by a careless tool) must not make a pull
//     or a publish run a program. An empty value turns it off in every git
//     version (before 2.36 it was a path, "" meaning none; since, it is a
//     boolean or a path, "" meaning false).
//   - core.bigFileThreshold is lowered to the blob limit (see
//     SetMaxBlobSize), so that git streams larger blobs (fetch's
//     unpack-objects and index-pack, cat-file) instead of loading them.
func (r *Repo) globalArgs() []string {
	args := []string{"-c", "core.fsmonitor="}
	if r.maxBlob > 0 && r.maxBlob < gitBigFileDefault {
		args = append(args, "-c", "core.bigFileThreshold="+strconv.FormatInt(r.maxBlob, 10))
	}
	return args
}

// run runs git with args in the working tree and returns its standard
// output. stdin, if not nil, is its standard input.
func (r *Repo) run(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return r.runEnv(ctx, LocalTimeout, nil, stdin, args...)
}

// runEnv is run with extra environment variables and a timeout.
func (r *Repo) runEnv(ctx context.Context, timeout time.Duration, extra []string, stdin []byte, args ...string) ([]byte, error) {
	var stdout bytes.Buffer
	err := r.execute(ctx, timeout, extra, stdin, &stdout, nil, args...)
	return stdout.Bytes(), err
}

// errEnough is returned by a stream's reader that has read all it wants
// before the end of git's output: git is stopped, and that is no failure.
var errEnough = errors.New("gitsync: enough output read")

// stream runs git with args in the working tree and hands its standard
// output to read as it comes, so that nothing but what read keeps is held.
// If read returns an error, git is killed and the error returned; errEnough
// kills git too, and stream returns nil. Once read returns nil, the rest of
// the output is discarded.
func (r *Repo) stream(ctx context.Context, stdin []byte, read func(io.Reader) error, args ...string) error {
	return r.execute(ctx, LocalTimeout, nil, stdin, nil, read, args...)
}

// maxStderr bounds what is kept of a command's standard error (a remote
// can make git print without end).
const maxStderr = 1 << 20

// execute runs git with args: its standard output goes to stdout, or, when
// read is not nil, through a pipe to read (see stream).
func (r *Repo) execute(ctx context.Context, timeout time.Duration, extra []string, stdin []byte, stdout io.Writer, read func(io.Reader) error, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.git, append(r.globalArgs(), args...)...)
	cmd.Dir = r.dir
	cmd.Env = append(append([]string(nil), r.env...), extra...)
	detach(cmd)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	stderr := &headBuffer{max: maxStderr}
	cmd.Stderr = stderr
	// Output pipes held open by a grandchild (an ssh or a credential
	// helper) must not keep Wait from returning once git is gone.
	cmd.WaitDelay = 5 * time.Second
	var err error
	killed := false // by this function, not by the caller's context or the timeout
	if read == nil {
		cmd.Stdout = stdout
		err = cmd.Run()
	} else {
		pipe, perr := cmd.StdoutPipe()
		if perr != nil {
			return perr
		}
		if err = cmd.Start(); err == nil {
			rerr := read(pipe)
			if rerr == nil {
				_, rerr = io.Copy(io.Discard, pipe)
			}
			if rerr != nil && ctx.Err() == nil {
				killed = true
				cancel() // kills git's process group (see detach)
			}
			err = cmd.Wait()
			if errors.Is(rerr, errEnough) {
				return nil
			}
			if rerr != nil {
				// Reported with what git said, if it failed first.
				err = rerr
			}
		}
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		// git exited with status 0; a helper it left running (an ssh
		// connection master) still holds the output pipes.
		err = nil
	}
	if err != nil {
		e := &Error{Args: args, Exit: -1, Stderr: strings.TrimSpace(stderr.String()), Err: err}
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Exited() {
			e.Exit = ee.ExitCode()
		}
		if ctx.Err() != nil && !killed {
			e.Err = fmt.Errorf("%w (after %v)", ctx.Err(), timeout)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && e.Stderr == "" {
				e.Stderr = fmt.Sprintf("timed out after %v", timeout)
			}
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			// The binary LookPath found is gone.
			return fmt.Errorf("%w: %v", ErrGitNotFound, err)
		}
		return e
	}
	return nil
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	bytes.Buffer
	max int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
