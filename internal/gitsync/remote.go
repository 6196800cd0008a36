//go:build unix

package gitsync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kinds of RemoteError, for errors.Is.
var (
	// ErrUnreachable: the remote could not be reached, or the connection
	// failed before git learned the outcome. After a push that failed so,
	// the branch may or may not have moved to the pushed commit; it moved
	// all the way or not at all.
	ErrUnreachable = errors.New("the remote could not be reached")
	// ErrNoBranch: the remote has no branch of that name.
	ErrNoBranch = errors.New("the remote has no such branch")
	// ErrLeaseLost: the remote branch was not at the head the push was
	// built on; it did not move.
	ErrLeaseLost = errors.New("the remote branch moved")
	// ErrRejected: the remote refused the push for another reason (a hook,
	// a protected branch); the branch did not move.
	ErrRejected = errors.New("the remote refused the push")
)

// RemoteError is a fetch or push that failed.
type RemoteError struct {
	Op     string // "fetch" or "push"
	Remote string
	Branch string
	Kind   error  // ErrUnreachable, ErrNoBranch, ErrLeaseLost or ErrRejected
	Reason string // what git or the remote said
	Err    error  // the *Error of the command, if any
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s %s %s: %v: %s", e.Op, e.Remote, e.Branch, e.Kind, e.Reason)
}

func (e *RemoteError) Unwrap() []error { return []error{e.Kind, e.Err} }

// CheckNames validates a remote and a branch name before they are passed to
// git: the branch must be a valid branch name, and the remote (a configured
// remote's name, a URL or a path) must not look like an option.
func (r *Repo) CheckNames(ctx context.Context, remote, branch string) error {
	if remote == "" || strings.HasPrefix(remote, "-") || strings.ContainsAny(remote, "\x00\n") {
		return fmt.Errorf("bad remote %q", remote)
	}
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("bad branch name %q", branch)
	}
	if _, err := r.run(ctx, nil, "check-ref-format", "refs/heads/"+branch); err != nil {
		return fmt.Errorf("bad branch name %q", branch)
	}
	return nil
}

// trackingRef is the private ref that Fetch updates for remote's branch. It
// is editguard's own, so no other program moves it between the fetch and
// the read, and the fetched objects stay reachable.
func trackingRef(remote, branch string) string {
	sum := sha256.Sum256([]byte(remote))
	return "refs/editguard/sync/" + hex.EncodeToString(sum[:8]) + "/heads/" + branch
}

// Fetch fetches branch from remote and returns the commit at its head.
func (r *Repo) Fetch(ctx context.Context, remote, branch string) (string, error) {
	ref := trackingRef(remote, branch)
	args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules"}
	if r.maxBlob > 0 && r.maxBlob < gitBigFileDefault {
		// An upstream on this machine (a path, file://) is served by an
		// upload-pack that git runs here, as a descendant of this process,
		// and that reads the upstream's configuration only: the blob limit
		// given to this fetch does not reach it. It is given its own, so
		// that it sends a huge blob as it streams it, rather than loading it
		// whole (a loose one) or with others like it (to look for deltas).
		// git runs that command line with sh, as every local upload-pack;
		// the only word not written here, git's path, is quoted.
		url, err := r.line(ctx, "ls-remote", "--get-url", "--", remote)
		if err != nil {
			return "", remoteError("fetch", remote, branch, err)
		}
		if localURL(url) {
			args = append(args, "--upload-pack="+shellQuote(r.git)+" -c core.bigFileThreshold="+strconv.FormatInt(r.maxBlob, 10)+" upload-pack")
		}
	}
	args = append(args, "--", remote, "+refs/heads/"+branch+":"+ref)
	_, err := r.runEnv(ctx, RemoteTimeout, nil, nil, args...)
	if err != nil {
		return "", remoteError("fetch", remote, branch, err)
	}
	out, err := r.run(ctx, nil, "rev-parse", "--verify", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// localURL reports whether git reaches url on this machine, running the
// upstream's upload-pack itself: a file:// URL or a path. As for git, a
// scheme ("https://", "ext::") or a colon before the first slash (an scp-like
// "host:path") is a remote.
func localURL(url string) bool {
	if strings.HasPrefix(url, "file://") {
		return true
	}
	if strings.Contains(url, "://") {
		return false
	}
	colon, slash := strings.IndexByte(url, ':'), strings.IndexByte(url, '/')
	return colon < 0 || slash >= 0 && slash < colon
}

// shellQuote quotes s as one word for sh, which git runs a local
// upload-pack command with.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Push moves remote's branch from expect to commit, which must be a
// descendant of expect, only if it is still at expect (a lease): the move
// is the remote's single atomic ref update, so the branch ends at expect or
// at commit, never anywhere in between. A branch that moved meanwhile is
// ErrLeaseLost, and the push changed nothing.
func (r *Repo) Push(ctx context.Context, remote, branch, commit, expect string) error {
	ref := "refs/heads/" + branch
	out, err := r.runEnv(ctx, RemoteTimeout, nil, nil, "push", "--porcelain", "--no-recurse-submodules",
		"--force-with-lease="+ref+":"+expect, "--", remote, commit+":"+ref)
	if err == nil {
		return nil
	}
	// Porcelain lines: flag TAB from:to TAB summary (reason).
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || !strings.HasSuffix(f[1], ":"+ref) || f[0] != "!" {
			continue
		}
		summary := f[2]
		e := &RemoteError{Op: "push", Remote: remote, Branch: branch, Reason: summary, Err: err}
		switch {
		case strings.HasPrefix(summary, "[rejected]"):
			// stale info, fetch first, non-fast-forward: the branch is
			// not where the lease expects it.
			e.Kind = ErrLeaseLost
		case strings.HasPrefix(summary, "[remote rejected]") && movedUnder(summary+" "+stderrOf(err)):
			// It moved between the remote's advertisement and its update.
			e.Kind = ErrLeaseLost
		case strings.HasPrefix(summary, "[remote rejected]"):
			e.Kind = ErrRejected
			e.Reason = strings.TrimSpace(summary + "\n" + remoteLines(stderrOf(err)))
		default:
			// [remote failure] and the like: the outcome is unknown.
			e.Kind = ErrUnreachable
		}
		return e
	}
	return remoteError("push", remote, branch, err)
}

// movedUnder reports whether a remote's refusal says that the ref was not
// at the expected value when it came to update it.
func movedUnder(msg string) bool {
	for _, s := range []string{"failed to update ref", "cannot lock ref", "incorrect old value", "atomic transaction failed", "failed to lock"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func stderrOf(err error) string {
	var ge *Error
	if errors.As(err, &ge) {
		return ge.Stderr
	}
	return ""
}

// remoteLines returns the lines the remote printed ("remote: ...").
func remoteLines(stderr string) string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "remote: ") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, "\n")
}

// remoteError classifies a failed fetch or push that reported no ref
// status.
func remoteError(op, remote, branch string, err error) error {
	if errors.Is(err, ErrGitNotFound) {
		return err
	}
	msg := stderrOf(err)
	e := &RemoteError{Op: op, Remote: remote, Branch: branch, Kind: ErrUnreachable, Reason: msg, Err: err}
	if msg == "" {
		e.Reason = err.Error()
	}
	if strings.Contains(msg, "couldn't find remote ref") {
		e.Kind = ErrNoBranch
	}
	return e
}
