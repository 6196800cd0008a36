package editguard

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/editguard/editguard/internal/gitsync"
	"github.com/editguard/editguard/internal/ledger"
)

// PullOptions control Pull.
type PullOptions struct {
	// Remote and Branch name the branch, as for Publish.
	Remote string
	Branch string
	// DiscardLocal takes upstream's content also for files changed here:
	// the local content goes to history (restorable) instead of staying.
	DiscardLocal bool
}

// PulledFile is a file Pull changed.
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

// PullConflict is a file Pull left as it is.
type PullConflict struct {
	Path string `json:"path"`
	// Reason is "changed_both" (changed here and upstream), or why the
	// file could not be brought up to date: "unsupported" (a symlink or
	// submodule upstream, or a local path through a symlink), or the code
	// of the error the guarded write failed with (details in Error).
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
// upstream is no conflict. Git's HEAD, index and branches are not touched;
// the branch is fetched into editguard's own ref.
//
// Each file written is a ledger record of tool "pull", and so is the pull
// as a whole. A conflict is not an error: it is listed in the result.
func (s *Session) Pull(ctx context.Context, opts *PullOptions) (*PullResult, error) {
	var o PullOptions
	if opts != nil {
		o = *opts
	}
	a := &attempt{rec: ledger.Record{Session: s.name, Tool: toolPull, Approval: "auto"}}
	res, err := s.pullLocked(ctx, &o, a)
	if lerr := s.w.finishSync(a, res, err); lerr != nil && err == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("appending the pull to the ledger failed: %v", lerr))
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// upstreamFile is a file as a commit has it.
type upstreamFile struct {
	syncedFile
	supported bool   // absent, or a regular file
	exec      bool   // executable
	data      []byte // the content, for a regular file
}

func (s *Session) pullLocked(ctx context.Context, o *PullOptions, a *attempt) (*PullResult, error) {
	w := s.w
	sr, err := w.startSync(ctx, a, map[string]any{"discard_local": o.DiscardLocal}, o.Remote, o.Branch)
	if err != nil {
		return nil, err
	}
	defer sr.lock.Unlock()
	repo, remote, branch, st, bs := sr.repo, sr.remote, sr.branch, sr.st, sr.bs
	if bs.Files == nil {
		bs.Files = map[string]syncedFile{}
	}
	head, err := repo.Fetch(ctx, remote, branch)
	if err != nil {
		return nil, gitError(err)
	}
	res := &PullResult{Remote: remote, Branch: branch, OldBase: bs.Base, Head: head, Updated: []PulledFile{}, Conflicts: []PullConflict{}}
	base := bs.Base
	if base != "" && !repo.HasCommit(ctx, base) {
		// The branch's history was rewritten and the old base collected:
		// start again as before the first pull. Files changed here still
		// differ from the new base and are conflicts, not overwritten.
		res.Warnings = append(res.Warnings, fmt.Sprintf("the last pull's base %s is no longer in the repository; comparing with the merge base of HEAD instead", base))
		base = ""
	}
	if base == "" {
		// Before the first pull the working tree is in step with the
		// commit it was checked out from, as far as it is the branch's.
		local, err := repo.Head(ctx)
		if err != nil {
			return nil, gitError(err)
		}
		if local != "" {
			if base, err = repo.MergeBase(ctx, local, head); err != nil {
				return nil, gitError(err)
			}
		}
	}
	changed := map[string]bool{}
	diff, err := repo.DiffPaths(ctx, base, head)
	if err != nil {
		return nil, gitError(err)
	}
	for _, gp := range diff {
		if p, ok := workspacePath(repo, gp); ok {
			changed[p] = true
		}
	}
	for p := range bs.Files {
		changed[p] = true
	}
	paths := sortedKeys(changed)
	// The writes are recorded under the caller's name, but in a session
	// of their own: the caller did not see upstream's content, so its
	// reads must not come to cover it (its next change to such a file is
	// STALE_FILE, as for every other session's).
	writer := w.NewSession(s.name)
	// Removals first, so that a file upstream put where a directory was
	// (or the other way round) finds its place free.
	for len(paths) > 0 {
		n := min(len(paths), 256) // bounds the content held at once
		chunk := paths[:n]
		paths = paths[n:]
		before, err := w.filesAt(ctx, repo, base, chunk)
		if err != nil {
			return nil, err
		}
		after, err := w.filesAt(ctx, repo, head, chunk)
		if err != nil {
			return nil, err
		}
		sort.SliceStable(chunk, func(i, j int) bool { return !after[chunk[i]].Exists && after[chunk[j]].Exists })
		for _, p := range chunk {
			b := before[p].syncedFile
			if f, ok := bs.Files[p]; ok {
				b = f
			} else if !before[p].supported {
				b = syncedFile{Exists: true, SHA256: "(not a regular file)"}
			}
			if keep := writer.pullFile(ctx, p, b, after[p], o.DiscardLocal, remote, branch, head, res); keep {
				bs.Files[p] = b
			} else {
				delete(bs.Files, p)
			}
		}
	}
	bs.Base, bs.Head = head, head
	if err := w.saveSync(st); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the pull's new base was not saved (%v): the next pull compares with the old one again", err))
	}
	return res, nil
}

// filesAt reads the files at paths (relative to the workspace) in commit.
func (w *Workspace) filesAt(ctx context.Context, repo *gitsync.Repo, commit string, paths []string) (map[string]upstreamFile, error) {
	out := map[string]upstreamFile{}
	for _, p := range paths {
		out[p] = upstreamFile{supported: true}
	}
	if commit == "" {
		return out, nil
	}
	gps := make([]string, len(paths))
	for i, p := range paths {
		gps[i] = gitPath(repo, p)
	}
	entries, err := repo.Entries(ctx, commit, gps)
	if err != nil {
		return nil, gitError(err)
	}
	blobs := map[string]string{}
	for _, gp := range gps {
		if e, ok := entries[gp]; ok && e.Regular() {
			blobs[gp] = e.OID
		}
	}
	contents, err := repo.ReadBlobs(ctx, blobs)
	if err != nil {
		return nil, gitError(err)
	}
	for i, p := range paths {
		e, ok := entries[gps[i]]
		switch {
		case !ok:
		case e.Regular():
			data := contents[gps[i]]
			out[p] = upstreamFile{syncedFile: syncedFile{Exists: true, SHA256: sha256Hex(data)}, supported: true,
				exec: e.Mode == gitsync.ModeExecutable, data: data}
		default:
			out[p] = upstreamFile{syncedFile: syncedFile{Exists: true, SHA256: e.OID}}
		}
	}
	return out, nil
}

// pullFile brings one file up to date, or reports it in res.Conflicts, and
// reports whether the file keeps its base b (it was not brought up to date).
func (s *Session) pullFile(ctx context.Context, p string, b syncedFile, up upstreamFile, discard bool, remote, branch, head string, res *PullResult) (keep bool) {
	w := s.w
	// A conflict keeps the file's base, so that the next pull compares
	// with it again; one pull cannot bring about is reported once.
	conflict := func(reason string, local syncedFile, err error) bool {
		c := PullConflict{Path: p, Reason: reason, LocalSHA256: local.SHA256, LocalExists: local.Exists,
			BaseSHA256: b.SHA256, UpstreamSHA256: up.SHA256, UpstreamExists: up.Exists}
		errors.As(err, &c.Error)
		res.Conflicts = append(res.Conflicts, c)
		return reason != "unsupported"
	}
	t, err := w.openTarget(p)
	if err != nil {
		return conflict(codeOf(err), syncedFile{}, err)
	}
	obs, err := w.observe(t)
	t.close()
	if err != nil {
		return conflict(codeOf(err), syncedFile{}, err)
	}
	local := syncedFile{Exists: obs.stat.Exists, SHA256: obs.sum}
	switch {
	case t.resolved != p || obs.stat.Exists && !obs.stat.Regular():
		return conflict("unsupported", local, nil) // a symlink or a directory here
	case !up.supported:
		return conflict("unsupported", local, nil) // a symlink or submodule upstream
	case local.same(up.syncedFile):
		return false // already in step
	case !local.same(b) && !discard:
		return conflict("changed_both", local, nil)
	}
	pre := &Precondition{ExpectedSHA256: obs.sum}
	if !obs.stat.Exists {
		pre = &Precondition{MustNotExist: true}
	}
	r, err := s.mutate(ctx, &change{
		tool: toolPull, path: p, pre: pre, wholeFile: true,
		args: map[string]any{"path": p, "remote": remote, "branch": branch, "head": head, "discard_local": discard},
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if !up.Exists {
				return &plan{remove: true, oldText: textOf(obs.data, "")}, nil
			}
			pl := &plan{data: up.data, sum: up.SHA256, oldText: textOf(obs.data, ""), newText: textOf(up.data, "")}
			if up.exec {
				pl.mode = 0o755
			}
			return pl, nil
		},
	})
	if err != nil {
		reason := codeOf(err)
		if IsConflict(err) {
			reason = "changed_both" // changed here while the pull ran
		}
		return conflict(reason, local, err)
	}
	f := PulledFile{Path: p, SHA256: r.SHA256, BackupVersion: r.BackupVersion, Discarded: !local.same(b), Op: "modified"}
	switch {
	case r.Deleted:
		f.Op = "deleted"
	case r.Created:
		f.Op = "added"
	}
	res.Updated = append(res.Updated, f)
	for _, warn := range r.Warnings {
		res.Warnings = append(res.Warnings, p+": "+warn)
	}
	return false
}

func codeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return string(e.Code)
	}
	return string(CodeIO)
}
