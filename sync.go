package editguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/editguard/editguard/internal/remote"
)

// This file is publish and pull as the library offers them: their
// options and results, and the methods of Session that run them through
// package internal/remote, with the session's host (remotehost.go).

// PublishOptions control Session.Publish.
type PublishOptions struct {
	// Remote is the git remote: a configured remote's name, a URL or a
	// path (default "origin").
	Remote string
	// Branch is the remote branch (default: the branch HEAD is on).
	Branch string
	// Session, if set, publishes only the files that session changed
	// (with every unpublished change to them, whoever made it: a file is
	// published whole).
	Session string
	// Attempts bounds how often the remote branch may be found moved
	// between the fetch and the push before Session.Publish gives up with BUSY
	// (default DefaultPublishAttempts).
	Attempts int
}

// DefaultPublishAttempts is how many times Session.Publish fetches, checks and
// pushes before it reports that the branch keeps moving.
const DefaultPublishAttempts = remote.DefaultPublishAttempts

// PublishedFile is one file of a publish.
type PublishedFile struct {
	Path string `json:"path"`
	// Op is "added", "modified" or "deleted", or "unchanged" when the
	// branch already had exactly this content (published before, or the
	// same change made elsewhere).
	Op       string   `json:"op"`
	SHA256   string   `json:"sha256,omitempty"` // the content published; empty for deleted
	Sessions []string `json:"sessions"`
	Tools    []string `json:"tools"`
	// Changes counts the ledger records published, FirstSeq and LastSeq
	// bound their seqs.
	Changes  int    `json:"changes"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// PublishResult describes a publish.
type PublishResult struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// OldHead is the branch's head the commit was built on, NewHead the
	// commit published (equal to OldHead when every file was already
	// there; both empty when there was nothing to publish).
	OldHead  string          `json:"old_head,omitempty"`
	NewHead  string          `json:"new_head,omitempty"`
	Files    []PublishedFile `json:"files"`
	Attempts int             `json:"attempts"`
	Warnings []string        `json:"warnings,omitempty"`
}

// Publish lands the files this workspace's guarded changes touched, and
// that are not published yet, on a remote git branch as one commit:
//
//  1. it fetches the branch's head H;
//  2. every file must be, at H, what the first unpublished change to it
//     found (the content its author read): otherwise it fails with
//     STALE_FILE listing each file changed upstream, with the upstream
//     change, and publishes nothing;
//  3. it builds a commit on H whose tree is H's with exactly those files
//     replaced, added or deleted (other hosts' changes to other files are
//     kept as they are; nothing is merged inside a file);
//  4. it pushes the commit with a lease on H; if the branch moved
//     meanwhile it starts again at 1, at most Attempts times (then BUSY).
//
// The content published is the file as the last guarded change left it;
// a file changed since by something else than editguard is refused with
// STALE_FILE (details.side "local"), since the ledger does not account for
// it. A file the branch already has with exactly that content is not
// changed (so a publish interrupted after its push, or the same change
// made on two hosts, is no conflict).
//
// Every attempt that reaches the remote is appended to the ledger (tool
// "publish", under the name of the session s), and a success moves the workspace's publish marks (in
// .editguard/sync.json). One publish or pull runs at a time in a
// workspace; guarded changes go on meanwhile. The remote branch is only
// ever at its old head or at the complete new commit.
func (s *Session) Publish(ctx context.Context, opts *PublishOptions) (*PublishResult, error) {
	var o PublishOptions
	if opts != nil {
		o = *opts
	}
	h := &remoteHost{s: s}
	r, args, err := remote.Publish(ctx, h, remote.PublishOptions(o))
	err = syncError(err)
	var res *PublishResult
	if r != nil {
		res = publishResult(r)
	}
	if err == nil && len(res.Files) == 0 {
		return res, nil // nothing to publish: nothing was attempted
	}
	if lerr := h.recordSync(opPublish, args, res, err); lerr != nil && err == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("published, but appending the publish to the ledger failed: %v", lerr))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// PullOptions control Session.Pull.
type PullOptions struct {
	// Remote and Branch name the branch, as for Publish.
	Remote string
	Branch string
	// DiscardLocal takes upstream's content also for files changed here:
	// the local content goes to history (restorable) instead of staying.
	DiscardLocal bool
}

// PulledFile is a file Session.Pull changed.
type PulledFile struct {
	Path string `json:"path"`
	Op   string `json:"op"` // "added", "modified" or "deleted"
	// SHA256 is the content written; empty for deleted.
	SHA256 string `json:"sha256,omitempty"`
	// BackupVersion is the history version that keeps what the file held.
	BackupVersion string `json:"backup_version,omitempty"`
	// Discarded is set when what the file held was a local change, which
	// DiscardLocal let upstream's content replace.
	Discarded bool `json:"discarded,omitempty"`
}

// PullConflict is a file Session.Pull left as it is.
type PullConflict struct {
	Path string `json:"path"`
	// Reason is "changed_both" (changed here and upstream), or why the
	// file could not be brought up to date: "unsupported" (a symlink or
	// submodule upstream, or a local path through a symlink), or the code
	// of the error that kept it (details in Error): PROTECTED_PATH for a
	// path pull never writes (inside .git or .editguard at any depth and
	// in any case, or matching the workspace's Deny patterns), TOO_LARGE
	// for upstream content larger than the file size limit (it is not
	// even read), or the code the guarded write failed with.
	Reason         string `json:"reason"`
	LocalSHA256    string `json:"local_sha256,omitempty"`
	BaseSHA256     string `json:"base_sha256,omitempty"`
	UpstreamSHA256 string `json:"upstream_sha256,omitempty"`
	LocalExists    bool   `json:"local_exists"`
	UpstreamExists bool   `json:"upstream_exists"`
	Error          *Error `json:"error,omitempty"`
}

// PullResult describes a pull.
type PullResult struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// OldBase is the commit the working tree was in step with before
	// (empty if none), Head the branch's head it is in step with now,
	// except for the conflicts.
	OldBase   string         `json:"old_base,omitempty"`
	Head      string         `json:"head"`
	Updated   []PulledFile   `json:"updated"`
	Conflicts []PullConflict `json:"conflicts"`
	Warnings  []string       `json:"warnings,omitempty"`
}

// Pull brings the changes made upstream on a remote branch into the working
// tree, through guarded writes: each file changed upstream since the
// working tree's base (the commit of the last pull; before the first, the
// merge base of HEAD and the branch) is
//
//   - written with upstream's content if it is unchanged here since the
//     base; what it held goes to history, and any session that read it
//     finds it changed (STALE_FILE) and reads it again;
//   - left as it is if it was changed here too, and reported as a conflict
//     (its base is kept for the next pull), unless DiscardLocal is set:
//     then the local content goes to history and upstream's is taken.
//
// Content is never merged inside a file, and no local change is lost: it
// stays, or it is in history. A file that is already the same here and
// upstream is no conflict. Two kinds of file are never written, even with
// DiscardLocal, and are reported as conflicts instead: a path the
// workspace protects (PROTECTED_PATH: inside a .git or .editguard
// directory at any depth, in any case, or matching the Deny patterns), and
// one whose upstream content is larger than the file size limit
// (TOO_LARGE: its size is checked before anything is read, and it is not
// read at all, by editguard or by git). Git's HEAD, index and branches are not touched;
// the branch is fetched into editguard's own ref.
//
// The pull runs for the session s: each file written is a ledger record
// of tool "pull" under s's name, asked of s's approver, and so is the pull
// as a whole. A conflict is not an error: it is listed in the result.
func (s *Session) Pull(ctx context.Context, opts *PullOptions) (*PullResult, error) {
	var o PullOptions
	if opts != nil {
		o = *opts
	}
	h := &remoteHost{s: s}
	r, args, err := remote.Pull(ctx, h, remote.PullOptions(o))
	err = syncError(err)
	var res *PullResult
	if r != nil {
		res = pullResult(r)
	}
	if lerr := h.recordSync(opPull, args, res, err); lerr != nil && err == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("appending the pull to the ledger failed: %v", lerr))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// publishResult is r as the library gives it.
func publishResult(r *remote.PublishResult) *PublishResult {
	res := &PublishResult{Remote: r.Remote, Branch: r.Branch, OldHead: r.OldHead, NewHead: r.NewHead,
		Files: make([]PublishedFile, len(r.Files)), Attempts: r.Attempts, Warnings: r.Warnings}
	for i, f := range r.Files {
		res.Files[i] = PublishedFile(f)
	}
	return res
}

// pullResult is r as the library gives it.
func pullResult(r *remote.PullResult) *PullResult {
	res := &PullResult{Remote: r.Remote, Branch: r.Branch, OldBase: r.OldBase, Head: r.Head,
		Updated: make([]PulledFile, len(r.Updated)), Conflicts: make([]PullConflict, len(r.Conflicts)), Warnings: r.Warnings}
	for i, f := range r.Updated {
		res.Updated[i] = PulledFile(f)
	}
	for i, c := range r.Conflicts {
		res.Conflicts[i] = PullConflict{Path: c.Path, Reason: c.Reason, LocalSHA256: c.LocalSHA256, BaseSHA256: c.BaseSHA256,
			UpstreamSHA256: c.UpstreamSHA256, LocalExists: c.LocalExists, UpstreamExists: c.UpstreamExists}
		errors.As(syncError(c.Error), &res.Conflicts[i].Error)
	}
	return res
}

// syncError turns an error internal/remote made (a *remote.Error) into an
// *Error, made as this package makes its own (its details but the path
// as they are); any other error, the host's
// or the context's, is returned as it is.
func syncError(err error) error {
	re, ok := err.(*remote.Error)
	if !ok {
		return err
	}
	e := newError(Code(re.Code), re.Path, re.Message, re.Hint, re.Err)
	for k, v := range re.Details {
		if _, set := e.Details[k]; !set {
			e.Details[k] = v
		}
	}
	return e
}
