package remote

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/editguard/editguard/internal/gitsync"
)

// PullOptions, PulledFile, PullConflict and PullResult are the root
// package's types of the same names, which document their fields; the root
// package converts between the two. A conflict's Error is an *Error or an
// error the host returned.
type (
	PullOptions struct {
		Remote, Branch string
		DiscardLocal   bool
	}
	PulledFile struct {
		Path          string
		Op            string
		SHA256        string
		BackupVersion string
		Discarded     bool
	}
	PullConflict struct {
		Path                                    string
		Reason                                  string
		LocalSHA256, BaseSHA256, UpstreamSHA256 string
		LocalExists, UpstreamExists             bool
		Error                                   error
	}
	PullResult struct {
		Remote, Branch string
		OldBase, Head  string
		Updated        []PulledFile
		Conflicts      []PullConflict
		Warnings       []string
	}
)

// Pull brings the changes made upstream on the remote branch into the
// working tree through the host's guarded changes (the root package's
// Session.Pull describes how), for the session h is the host of. It
// returns the result, and the arguments the pull's ledger record carries,
// which the caller appends whether it succeeded or not.
func Pull(ctx context.Context, h Host, o PullOptions) (res *PullResult, args map[string]any, err error) {
	sy := newSyncer(h, map[string]any{"discard_local": o.DiscardLocal})
	res, err = sy.pullLocked(ctx, &o)
	return res, sy.args, err
}

// upstreamFile is a file as a commit has it.
type upstreamFile struct {
	syncedFile
	supported bool   // absent, or a regular file
	exec      bool   // executable
	data      []byte // the content, for a regular file
	// tooLarge describes a regular file whose content is larger than the
	// file size limit: it was not read (data is nil, and SHA256 a
	// stand-in naming the blob).
	tooLarge *largeBlob
}

// largeBlob is a blob that was not read because it is larger than the file
// size limit.
type largeBlob struct {
	oid string
	gitsync.Blob
}

// pullBatchBytes bounds the content a pull reads at once: files are read
// in batches whose blobs, upstream's and the base's, add up to at most
// this, or one file alone (each at most the file size limit; larger ones
// are not read at all).
const pullBatchBytes = 32 << 20

// pullLocked is Pull under the workspace's sync lock.
func (sy *syncer) pullLocked(ctx context.Context, o *PullOptions) (*PullResult, error) {
	sr, err := sy.startSync(ctx, o.Remote, o.Branch)
	if err != nil {
		return nil, err
	}
	defer sr.unlock()
	repo, remote, branch, st, bs := sr.repo, sr.remote, sr.branch, sr.st, sr.bs
	if bs.Files == nil {
		bs.Files = map[string]syncedFile{}
	}
	head, err := repo.Fetch(ctx, remote, branch)
	if err != nil {
		return nil, gitError(err)
	}
	res := &PullResult{Remote: remote, Branch: branch, OldBase: bs.Base, Head: head, Updated: []PulledFile{}, Conflicts: []PullConflict{}}
	base, err := pullBase(ctx, repo, bs.Base, head, res)
	if err != nil {
		return nil, err
	}
	paths, err := pullPaths(ctx, repo, base, head, bs.Files)
	if err != nil {
		return nil, err
	}
	pr := &pullRun{syncRun: sr, base: base, head: head, discard: o.DiscardLocal, res: res}
	for len(paths) > 0 {
		n := min(len(paths), 256) // bounds the tree entries looked at at once
		chunk := paths[:n]
		paths = paths[n:]
		if err := sy.pullChunk(ctx, pr, chunk); err != nil {
			return nil, err
		}
	}
	bs.Base, bs.Head = head, head
	if err := sy.h.SaveState(syncStateName, st); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the pull's new base was not saved (%v): the next pull compares with the old one again", err))
	}
	return res, nil
}

// pullRun is what the steps of one pull share: the sync run, the two
// commits compared (base, where the working tree was in step, and head,
// the branch's head fetched), DiscardLocal, and the result filled in.
type pullRun struct {
	*syncRun
	base, head string
	discard    bool
	res        *PullResult
}

// pullBase returns the commit the working tree is taken to be in step
// with: base, the last pull's, or the merge base of HEAD and head when
// there is none (before the first pull) or it is gone (a warning in res
// says so). A pull compares each file with it to tell a change made here
// from one made upstream.
func pullBase(ctx context.Context, repo *gitsync.Repo, base, head string, res *PullResult) (string, error) {
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
			return "", gitError(err)
		}
		if local != "" {
			if base, err = repo.MergeBase(ctx, local, head); err != nil {
				return "", gitError(err)
			}
		}
	}
	return base, nil
}

// pullPaths returns, sorted, the paths (relative to the workspace) a pull
// looks at: those that differ between base and head, and every path of
// files. Those have a base of their own, which overrides base, so they may
// differ from head even where base and head agree.
func pullPaths(ctx context.Context, repo *gitsync.Repo, base, head string, files map[string]syncedFile) ([]string, error) {
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
	for p := range files {
		changed[p] = true
	}
	return sortedKeys(changed), nil
}

// pullChunk brings the files at chunk up to date, and
// keeps in pr.bs.Files the base of each file that keeps it (see pullFile).
// Their content is read in batches (see pullBatch), so that a pull never
// holds much of it at once.
func (sy *syncer) pullChunk(ctx context.Context, pr *pullRun, chunk []string) error {
	repo, bs := pr.repo, pr.bs
	beforeEntries, err := sy.entriesAt(ctx, repo, pr.base, chunk)
	if err != nil {
		return err
	}
	afterEntries, err := sy.entriesAt(ctx, repo, pr.head, chunk)
	if err != nil {
		return err
	}
	// Removals first, so that a file upstream put where a directory
	// was (or the other way round) finds its place free.
	sort.SliceStable(chunk, func(i, j int) bool {
		_, iExists := afterEntries[chunk[i]]
		_, jExists := afterEntries[chunk[j]]
		return !iExists && jExists
	})
	for len(chunk) > 0 {
		k := pullBatch(chunk, beforeEntries, afterEntries, sy.h.MaxFileSize())
		part := chunk[:k]
		chunk = chunk[k:]
		before, err := sy.filesAt(ctx, repo, beforeEntries, part)
		if err != nil {
			return err
		}
		after, err := sy.filesAt(ctx, repo, afterEntries, part)
		if err != nil {
			return err
		}
		for _, p := range part {
			b := before[p].syncedFile
			if f, ok := bs.Files[p]; ok {
				b = f
			} else if !before[p].supported {
				b = syncedFile{Exists: true, SHA256: "(not a regular file)"}
			}
			if keep := sy.pullFile(ctx, p, b, after[p], pr); keep {
				bs.Files[p] = b
			} else {
				delete(bs.Files, p)
			}
		}
	}
	return nil
}

// entriesAt lists the tree entries of paths (relative to the workspace) in
// commit, keyed by those paths; a path commit does not have is absent. No
// content is read.
func (sy *syncer) entriesAt(ctx context.Context, repo *gitsync.Repo, commit string, paths []string) (map[string]gitsync.Entry, error) {
	out := map[string]gitsync.Entry{}
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
	for i, p := range paths {
		if e, ok := entries[gps[i]]; ok {
			out[p] = e
		}
	}
	return out, nil
}

// pullBatch returns how many of paths to read at once: as many as fit in
// pullBatchBytes of content, base and upstream together, and at least one.
func pullBatch(paths []string, before, after map[string]gitsync.Entry, limit int64) int {
	var sum int64
	for i, p := range paths {
		sum += readCost(before[p], limit) + readCost(after[p], limit)
		if i > 0 && sum > pullBatchBytes {
			return i
		}
	}
	return len(paths)
}

// readCost is what reading e's content holds: its size, for a regular file
// within the limit; nothing for anything else (a larger file is not read).
func readCost(e gitsync.Entry, limit int64) int64 {
	if !e.Regular() || e.Size > limit {
		return 0
	}
	return max(e.Size, 0)
}

// filesAt reads the files at paths (relative to the workspace), whose
// entries in a commit are entries (see entriesAt). A regular file's content
// is read if it is within the file size limit; a larger one is not read
// (the repository is told the limit, see openRepo), only its size known.
func (sy *syncer) filesAt(ctx context.Context, repo *gitsync.Repo, entries map[string]gitsync.Entry, paths []string) (map[string]upstreamFile, error) {
	blobs := map[string]string{}
	for _, p := range paths {
		if e, ok := entries[p]; ok && e.Regular() {
			blobs[gitPath(repo, p)] = e.OID
		}
	}
	contents, err := repo.ReadBlobs(ctx, blobs)
	if err != nil {
		return nil, gitError(err)
	}
	out := map[string]upstreamFile{}
	for _, p := range paths {
		e, ok := entries[p]
		switch {
		case !ok:
			out[p] = upstreamFile{supported: true}
		case e.Regular():
			f := upstreamFile{syncedFile: syncedFile{Exists: true}, supported: true, exec: e.Mode == gitsync.ModeExecutable}
			if b := contents[gitPath(repo, p)]; b.TooLarge {
				// Its SHA-256 is unknown; this stand-in equals no
				// content's, so the file is never taken for one read
				// here.
				f.SHA256, f.tooLarge = "(larger than the file size limit: git blob "+e.OID+")", &largeBlob{e.OID, b}
			} else {
				f.SHA256, f.data = sha256Hex(b.Data), b.Data
			}
			out[p] = f
		default:
			out[p] = upstreamFile{syncedFile: syncedFile{Exists: true, SHA256: e.OID}}
		}
	}
	return out, nil
}

// pullFile brings one file up to date through a guarded change, or reports it in
// pr.res.Conflicts, and reports whether the file keeps its base b (it was
// not brought up to date).
func (sy *syncer) pullFile(ctx context.Context, p string, b syncedFile, up upstreamFile, pr *pullRun) (keep bool) {
	// A conflict keeps the file's base, so that the next pull compares
	// with it again; one pull cannot bring about (an unsupported file, a
	// protected path) is reported once: its base moves on with the pull.
	conflict := func(reason string, local syncedFile, err error) bool {
		c := PullConflict{Path: p, Reason: reason, LocalSHA256: local.SHA256, LocalExists: local.Exists,
			BaseSHA256: b.SHA256, UpstreamSHA256: up.SHA256, UpstreamExists: up.Exists}
		if up.tooLarge != nil {
			c.UpstreamSHA256 = "" // not read; the error names the blob
		}
		c.Error = err
		pr.res.Conflicts = append(pr.res.Conflicts, c)
		return reason != "unsupported" && reason != (codeProtectedPath)
	}
	f, reason, err := sy.pullLocal(p)
	if err != nil {
		return conflict(reason, syncedFile{}, err)
	}
	local := syncedFile{Exists: f.Exists, SHA256: f.SHA256}
	switch {
	case up.tooLarge != nil:
		return conflict((codeTooLarge), local, tooLargeBlob(p, up.tooLarge, sy.h.MaxFileSize(), "the file was left as it is",
			"bring the file in with git, or open the workspace with a larger file size limit and pull again"))
	case f.Resolved != p || f.Exists && !f.Regular:
		return conflict("unsupported", local, nil) // a symlink or a directory here
	case !up.supported:
		return conflict("unsupported", local, nil) // a symlink or submodule upstream
	case local.same(up.syncedFile):
		return false // already in step
	case !local.same(b) && !pr.discard:
		return conflict("changed_both", local, nil)
	}
	r, err := sy.pullWrite(ctx, p, up, f, pr)
	if err != nil {
		reason := sy.codeOf(err)
		if reason == codeNotRead || reason == codeStaleFile {
			reason = "changed_both" // changed here while the pull ran
		}
		return conflict(reason, local, err)
	}
	pulled(pr.res, p, r, !local.same(b))
	return false
}

// pullLocal looks at the file at p as it is here: where p leads
// (Resolved) and what the file holds. A protected path is refused
// before anything is looked at, so that no comparison can make it anything
// else than protected. On failure it returns the error with the conflict
// reason it makes.
func (sy *syncer) pullLocal(p string) (f File, reason string, err error) {
	if e := sy.pullProtection(p, ""); e != nil {
		return f, (codeProtectedPath), e
	}
	var protected *Error
	f, err = sy.h.Look(p, func(resolved string) error {
		if resolved != p {
			if e := sy.pullProtection(p, resolved); e != nil {
				protected = e
				return e
			}
		}
		return nil
	})
	switch {
	case protected != nil:
		return f, (codeProtectedPath), protected
	case err != nil:
		return f, sy.codeOf(err), err
	}
	return f, "", nil
}

// pullWrite writes upstream's content up to p, or removes the file if
// upstream has none, as one guarded change. Its precondition is the file
// as local found it, so that a change made here meanwhile is not
// overwritten: the change fails instead.
func (sy *syncer) pullWrite(ctx context.Context, p string, up upstreamFile, local File, pr *pullRun) (*Written, error) {
	return sy.h.Put(ctx, Put{
		Path: p, Data: up.data, SHA256: up.SHA256, Exec: up.exec, Remove: !up.Exists,
		ExpectedSHA256: local.SHA256, MustNotExist: !local.Exists,
		Args: map[string]any{"path": p, "remote": pr.remote, "branch": pr.branch, "head": pr.head, "discard_local": pr.discard},
	})
}

// pulled lists in res the file r wrote at p, with r's warnings;
// discarded tells that what the file held was a local change.
func pulled(res *PullResult, p string, r *Written, discarded bool) {
	f := PulledFile{Path: p, SHA256: r.SHA256, BackupVersion: r.BackupVersion, Discarded: discarded, Op: "modified"}
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
}

// pullProtection returns the PROTECTED_PATH error of a path pull must
// never write, p as the branch names it and resolved where it leads here
// ("" if not known yet): one with an element that names, or on some file system would name, a
// .git or .editguard directory (see internalPathElem), at any depth, or one
// that the workspace's Deny patterns match. Deny patterns compare exactly,
// so a tree entry .GIT/config, which a file system that ignores case
// writes to .git/config, is caught by the first test.
func (sy *syncer) pullProtection(p, resolved string) *Error {
	for _, name := range []string{p, resolved} {
		if name == "" {
			continue
		}
		for _, elem := range strings.Split(name, "/") {
			if internalPathElem(elem) {
				e := newError(codeProtectedPath, p, fmt.Sprintf("the branch changes a path inside a git repository's internals or editguard's state (%q): pull never writes there", elem),
					"nothing was written; if the branch should not carry this path, remove it from the branch with git", nil)
				e.Details["element"] = elem
				return e
			}
		}
		if pat, ok := sy.h.Denied(name); ok {
			e := newError(codeProtectedPath, p, "path is protected from changes by policy: pull never writes it", "nothing was written", nil)
			e.Details["pattern"] = pat
			return e
		}
	}
	return nil
}

// internalPathElem reports whether a path element names, or on some file
// system could name, a .git or .editguard directory. It is compared without
// case, without the code points HFS+ ignores, without what follows a colon
// (an NTFS stream: ".git::$INDEX_ALLOCATION"), without trailing dots and
// spaces (which Windows drops), and GIT~1 to GIT~9 (.git's NTFS short
// names) count too: git itself refuses to check out such names for the
// same reason.
func internalPathElem(elem string) bool {
	e := strings.Map(func(r rune) rune {
		if hfsIgnores(r) {
			return -1
		}
		return r
	}, elem)
	if i := strings.IndexByte(e, ':'); i >= 0 {
		e = e[:i]
	}
	e = strings.TrimRight(e, ". ")
	if len(e) == 5 && strings.EqualFold(e[:4], "git~") && '1' <= e[4] && e[4] <= '9' {
		return true
	}
	return strings.EqualFold(e, ".git") || strings.EqualFold(e, StateDir)
}

// hfsIgnores reports whether HFS+ ignores r in names (the code points
// git's is_hfs_dotgit skips).
func hfsIgnores(r rune) bool {
	return r >= 0x200c && r <= 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x206a && r <= 0x206f || r == 0xfeff
}

// tooLargeBlob is the TOO_LARGE error of the branch's blob b at p, larger
// than limit and not read, saying what became of the file (outcome).
func tooLargeBlob(p string, b *largeBlob, limit int64, outcome, hint string) *Error {
	what := fmt.Sprintf("%d bytes", b.Size)
	if b.AtLeast {
		what = fmt.Sprintf("more than %d bytes once converted for checkout", limit)
	}
	e := newError(codeTooLarge, p, fmt.Sprintf("the branch's content of %s is %s, larger than the file size limit of %d bytes: it was not read, and %s", p, what, limit, outcome), hint, nil)
	e.Details["side"] = "upstream"
	e.Details["size_bytes"] = b.Size
	e.Details["limit_bytes"] = limit
	e.Details["blob"] = b.oid
	if b.AtLeast {
		e.Details["size_at_least"] = true
	}
	return e
}
