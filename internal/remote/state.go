package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/gitsync"
	"github.com/editguard/editguard/internal/ledger"
)

// This file holds what publish and pull share: the state they keep in
// .editguard/sync.json, the lock that runs one of them at a time in a
// workspace, and the reading of the ledger that finds the changes not yet
// published. See docs/DISTRIBUTED.md for the model.

// syncStateName is the sync state's file in .editguard.
const syncStateName = "sync.json"

// syncState is the content of .editguard/sync.json.
type syncState struct {
	Branches []*branchSync `json:"branches"`
}

// branchSync is what the workspace knows of one remote branch.
type branchSync struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// Base is the commit the working tree was last brought to by pull:
	// a file whose content is the one Base has was not changed here since.
	// Empty until the first pull.
	Base string `json:"base,omitempty"`
	// Files overrides Base for single files: the content a file had when
	// it was last in step with the branch, where that is not Base's (a
	// file published since, or one left in conflict by a pull, whose base
	// stays what it was).
	Files map[string]syncedFile `json:"files,omitempty"`
	// Published holds, per file, the ledger seq of its last change that
	// was published (or found already upstream): later changes are
	// unpublished.
	Published map[string]uint64 `json:"published,omitempty"`
	// Head is the branch's head after the last publish or pull.
	Head string `json:"head,omitempty"`
}

// branchSyncJSON is branchSync's stored form. JSON object keys are
// Unicode, so a path that is not UTF-8 is kept under its hex in
// FilesHex and PublishedHex instead (internal/rawpath's hex).
type branchSyncJSON struct {
	branchSyncFields
	FilesHex     map[string]syncedFile `json:"files_hex,omitempty"`
	PublishedHex map[string]uint64     `json:"published_hex,omitempty"`
}

// branchSyncFields is branchSync without its methods.
type branchSyncFields branchSync

func (b branchSync) MarshalJSON() ([]byte, error) {
	w := branchSyncJSON{branchSyncFields: branchSyncFields(b)}
	w.Files, w.FilesHex = splitKeys(b.Files)
	w.Published, w.PublishedHex = splitKeys(b.Published)
	return json.Marshal(&w)
}

func (b *branchSync) UnmarshalJSON(data []byte) error {
	var w branchSyncJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*b = branchSync(w.branchSyncFields)
	var err error
	if b.Files, err = joinKeys(b.Files, w.FilesHex); err != nil {
		return err
	}
	b.Published, err = joinKeys(b.Published, w.PublishedHex)
	return err
}

// splitKeys moves the entries of m whose keys are not UTF-8 to a map of
// their own, keyed by the keys' hex.
func splitKeys[V any](m map[string]V) (valid, byHex map[string]V) {
	for k, v := range m {
		if utf8.ValidString(k) {
			continue
		}
		if byHex == nil {
			valid, byHex = make(map[string]V, len(m)), map[string]V{}
			for k, v := range m {
				if utf8.ValidString(k) {
					valid[k] = v
				}
			}
		}
		byHex[hex.EncodeToString([]byte(k))] = v
	}
	if byHex == nil {
		return m, nil
	}
	return valid, byHex
}

// joinKeys is the inverse of splitKeys.
func joinKeys[V any](valid, byHex map[string]V) (map[string]V, error) {
	if len(byHex) == 0 {
		return valid, nil
	}
	if valid == nil {
		valid = make(map[string]V, len(byHex))
	}
	for h, v := range byHex {
		k, err := hex.DecodeString(h)
		if err != nil || utf8.Valid(k) {
			return nil, fmt.Errorf("sync state: %q is not the hex of a name that is not UTF-8", h)
		}
		valid[string(k)] = v
	}
	return valid, nil
}

// syncedFile is a file's content, or its absence.
type syncedFile struct {
	Exists bool   `json:"exists"`
	SHA256 string `json:"sha256,omitempty"`
}

func (f syncedFile) same(g syncedFile) bool {
	return f.Exists == g.Exists && (!f.Exists || f.SHA256 == g.SHA256)
}

// branch returns the state of remote's branch, adding it if new.
func (s *syncState) branch(remote, branch string) *branchSync {
	for _, b := range s.Branches {
		if b.Remote == remote && b.Branch == branch {
			return b
		}
	}
	b := &branchSync{Remote: remote, Branch: branch}
	s.Branches = append(s.Branches, b)
	return b
}

// unpublished is the changes to one file that are not published yet.
type unpublished struct {
	path  string
	first *ledger.Record // its state before is the base the changes were made on
	last  *ledger.Record // its state after is what is to be published
	recs  []*ledger.Record
}

// base is the file as the first change found it.
func (u *unpublished) base() syncedFile {
	r := u.first
	if r.Observed != nil {
		return syncedFile{Exists: r.Observed.Exists, SHA256: r.SHA256Before}
	}
	return syncedFile{Exists: r.SHA256Before != "", SHA256: r.SHA256Before}
}

// result is the file as the last change left it.
func (u *unpublished) result() syncedFile {
	return syncedFile{Exists: u.last.SHA256After != "", SHA256: u.last.SHA256After}
}

// sessions and tools name who made the changes, sorted.
func (u *unpublished) sessions() []string {
	return distinct(u.recs, func(r *ledger.Record) string { return sessionLabel(r.Session) })
}

func (u *unpublished) tools() []string {
	return distinct(u.recs, func(r *ledger.Record) string { return r.Tool })
}

func distinct(recs []*ledger.Record, key func(*ledger.Record) string) []string {
	var out []string
	for _, r := range recs {
		if k := key(r); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sessionLabel(s string) string {
	if s == "" {
		return "(unnamed)"
	}
	return s
}

// unpublishedChanges reads the ledger and returns, per file, the committed
// changes not yet published to b: those after the file's Published seq and
// after the last pull that wrote the file (a pull makes the file upstream's
// again, so what came before it is no longer to be published). Records of
// publish and pull themselves are not changes to publish. If only is not
// nil, only those files are looked at.
func (sy *syncer) unpublishedChanges(b *branchSync, only map[string]bool) (map[string]*unpublished, error) {
	out := map[string]*unpublished{}
	err := sy.h.Log(func(r *ledger.Record) error {
		if r.Outcome != "ok" || r.Path == "" || r.Tool == toolPublish || (only != nil && !only[r.Path]) {
			return nil
		}
		if r.Tool == toolPull {
			delete(out, r.Path)
			return nil
		}
		if r.Seq <= b.Published[r.Path] {
			return nil
		}
		u := out[r.Path]
		if u == nil {
			u = &unpublished{path: r.Path, first: r}
			out[r.Path] = u
		}
		u.last = r
		u.recs = append(u.recs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// openRepo finds the git working tree of the workspace.
func (sy *syncer) openRepo(ctx context.Context) (*gitsync.Repo, error) {
	r, err := gitsync.Open(ctx, sy.h.Dir())
	if err != nil {
		return nil, gitError(err)
	}
	// No blob larger than a file editguard may write is read, nor held
	// whole by git (see gitsync.Repo.SetMaxBlobSize).
	r.SetMaxBlobSize(sy.h.MaxFileSize())
	return r, nil
}

// syncTarget fills in the default remote and branch and checks both names.
func syncTarget(ctx context.Context, repo *gitsync.Repo, remote, branch string) (string, string, error) {
	if remote == "" {
		remote = "origin"
	}
	if branch == "" {
		b, err := repo.CurrentBranch(ctx)
		if err != nil {
			return "", "", gitError(err)
		}
		if b == "" {
			return "", "", newError(codeInvalidArgument, "", "HEAD is detached, so there is no current branch to sync with", "name the branch (--branch)", nil)
		}
		branch = b
	}
	if err := repo.CheckNames(ctx, remote, branch); err != nil {
		return "", "", newError(codeInvalidArgument, "", err.Error(), "", err)
	}
	return remote, branch, nil
}

// gitError maps a failure of package gitsync to a §5 error: GIT for the
// local side (git missing, no working tree, a command that failed), REMOTE
// for the remote.
func gitError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	var (
		re *gitsync.RemoteError
		ge *gitsync.Error
	)
	if (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && !errors.As(err, &ge) {
		return err // the caller's context, not a git command's timeout
	}
	switch {
	case errors.Is(err, gitsync.ErrGitNotFound):
		return newError(codeGit, "", "git was not found: publish and pull run the git program, and no git is in PATH",
			"install git, or put it in PATH", err)
	case errors.Is(err, gitsync.ErrNotRepository):
		return newError(codeGit, "", "the workspace is not inside a git working tree",
			"run publish and pull in a clone of the shared repository", err)
	case errors.As(err, &re):
		e := newError(codeRemote, "", re.Error(), "", err)
		e.Details["remote"] = re.Remote
		e.Details["branch"] = re.Branch
		e.Details["remote_message"] = re.Reason
		switch {
		case errors.Is(err, gitsync.ErrNoBranch):
			e.Message = fmt.Sprintf("the remote %s has no branch %s", re.Remote, re.Branch)
			e.Details["reason"] = "no_branch"
			e.Hint = "create the branch with git push first, or name another one (--branch)"
		case errors.Is(err, gitsync.ErrRejected):
			e.Message = fmt.Sprintf("the remote %s refused the push to %s: %s", re.Remote, re.Branch, firstLine(re.Reason))
			e.Details["reason"] = "rejected"
			e.Hint = "the branch did not move; see remote_message for the remote's reason"
		default:
			e.Message = fmt.Sprintf("the remote %s could not be reached (%s): %s", re.Remote, re.Op, firstLine(re.Reason))
			e.Details["reason"] = "unreachable"
			e.Hint = "check the remote's address and the network, then retry"
			if re.Op == "push" {
				e.Hint = "the branch either did not move or moved to the complete commit; publish again once the remote is back: changes already there are recognised and not published twice"
			}
		}
		return e
	}
	if errors.As(err, &ge) {
		e := newError(codeGit, "", ge.Error(), "", err)
		e.Details["git_args"] = ge.Args
		return e
	}
	return newError(codeGit, "", err.Error(), "", err)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// gitPath maps a path relative to the workspace root to one relative to
// the repository's top; workspacePath maps back, reporting false for a
// path outside the workspace.
func gitPath(repo *gitsync.Repo, p string) string { return repo.Prefix() + p }

func workspacePath(repo *gitsync.Repo, p string) (string, bool) {
	if !strings.HasPrefix(p, repo.Prefix()) {
		return "", false
	}
	return strings.TrimPrefix(p, repo.Prefix()), true
}

// hostname names this host in commits, for people reading the history.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, h)
}

// syncer is one publish or pull: the host of the session it runs for, and
// the arguments its ledger record carries.
type syncer struct {
	h    Host
	args map[string]any
}

func newSyncer(h Host, args map[string]any) *syncer {
	return &syncer{h: h, args: args}
}

// syncRun is what a publish or a pull works with: the repository, the
// remote branch, the workspace's sync lock (held until unlock) and the
// branch's state.
type syncRun struct {
	repo           *gitsync.Repo
	remote, branch string
	unlock         func()
	st             *syncState
	bs             *branchSync
}

// startSync opens the repository, settles the remote and branch (the
// defaults filled in), takes the sync lock and loads the state. It records
// the remote and branch in the record's arguments as soon as they are
// known, so that a failure is recorded with them.
func (sy *syncer) startSync(ctx context.Context, remote, branch string) (*syncRun, error) {
	sy.args["remote"], sy.args["branch"] = remote, branch
	repo, err := sy.openRepo(ctx)
	if err != nil {
		return nil, err
	}
	remote, branch, err = syncTarget(ctx, repo, remote, branch)
	if err != nil {
		return nil, err
	}
	sy.args["remote"], sy.args["branch"] = remote, branch
	unlock, err := sy.h.LockSync(ctx)
	if err != nil {
		return nil, err
	}
	st := &syncState{}
	if err := sy.h.LoadState(syncStateName, st); err != nil {
		unlock()
		return nil, err
	}
	return &syncRun{repo: repo, remote: remote, branch: branch, unlock: unlock, st: st, bs: st.branch(remote, branch)}, nil
}

// sha256Hex is the hex SHA-256 of data, as the ledger and history write it.
func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
