package remote

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/gitsync"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/udiff"
)

// PublishOptions, PublishedFile and PublishResult are the root package's
// types of the same names, which document their fields; the root package
// converts between the two.
type (
	PublishOptions struct {
		Remote, Branch, Session string
		Attempts                int
	}
	PublishedFile struct {
		Path              string
		Op                string
		SHA256            string
		Sessions, Tools   []string
		Changes           int
		FirstSeq, LastSeq uint64
	}
	PublishResult struct {
		Remote, Branch   string
		OldHead, NewHead string
		Files            []PublishedFile
		Attempts         int
		Warnings         []string
	}
)

// DefaultPublishAttempts is how many times Publish fetches, checks and
// pushes before it reports that the branch keeps moving.
const DefaultPublishAttempts = 5

// Publish lands the files with changes not yet published on the remote
// branch as one commit (the root package's Session.Publish describes the
// steps), for the session h is the host of. It returns the result, and the
// arguments the publish's ledger record carries, which the caller appends
// whether it succeeded or not (when err is nil and res lists no file,
// nothing was attempted).
func Publish(ctx context.Context, h Host, o PublishOptions) (res *PublishResult, args map[string]any, err error) {
	if o.Attempts <= 0 {
		o.Attempts = DefaultPublishAttempts
	}
	sy := newSyncer(h, map[string]any{"session": o.Session})
	res, err = sy.publishLocked(ctx, &o)
	return res, sy.args, err
}

// publishLocked is Publish under the workspace's sync lock.
func (sy *syncer) publishLocked(ctx context.Context, o *PublishOptions) (*PublishResult, error) {
	sr, err := sy.startSync(ctx, o.Remote, o.Branch)
	if err != nil {
		return nil, err
	}
	defer sr.unlock()
	repo, remote, branch, st, bs := sr.repo, sr.remote, sr.branch, sr.st, sr.bs
	res := &PublishResult{Remote: remote, Branch: branch, Files: []PublishedFile{}}
	files, err := sy.snapshotUnpublished(ctx, bs, o.Session)
	if err != nil || len(files) == 0 {
		return res, err
	}
	if err := sy.publish(ctx, repo, bs, files, o.Attempts, res); err != nil {
		return nil, err
	}
	for _, f := range files {
		bs.Published[f.u.path] = f.u.last.Seq
		bs.Files[f.u.path] = f.state
	}
	bs.Head = res.NewHead
	if err := sy.h.SaveState(syncStateName, st); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("published, but the publish marks were not saved (%v): the next publish finds these files already there", err))
	}
	return res, nil
}

// publishFile is one file to publish: its unpublished changes and its
// content now.
type publishFile struct {
	u     *unpublished
	state syncedFile
	data  []byte
	exec  bool   // the local file is executable
	oid   string // its blob, once stored
}

// snapshotUnpublished finds the files with unpublished changes (by session
// only, if set) and reads each as its last guarded change left it. The
// files' locks are all held while the ledger is read again and the files
// are read (host.Snapshot), so no guarded change falls between the two. A
// file changed since by something else than editguard fails the whole
// with STALE_FILE.
func (sy *syncer) snapshotUnpublished(ctx context.Context, bs *branchSync, session string) ([]*publishFile, error) {
	if bs.Published == nil {
		bs.Published = map[string]uint64{}
	}
	if bs.Files == nil {
		bs.Files = map[string]syncedFile{}
	}
	only, err := sy.unpublishedPaths(bs, session)
	if err != nil {
		return nil, err
	}
	if len(only) == 0 {
		return nil, nil
	}
	paths := sortedKeys(only)
	var pending map[string]*unpublished
	files, err := sy.h.Snapshot(ctx, paths, func() (map[string]bool, error) {
		var err error
		pending, err = sy.unpublishedChanges(bs, only)
		if err != nil {
			return nil, err
		}
		reads := map[string]bool{}
		for p := range pending {
			reads[p] = true
		}
		return reads, nil
	})
	if err != nil {
		return nil, err
	}
	out, local := readUnpublished(files, pending)
	if len(local) > 0 {
		return nil, changedLocally(local)
	}
	return out, nil
}

// unpublishedPaths returns the paths of the files with unpublished
// changes, only those session changed if it is set: the files a publish
// looks at.
func (sy *syncer) unpublishedPaths(bs *branchSync, session string) (map[string]bool, error) {
	first, err := sy.unpublishedChanges(bs, nil)
	if err != nil {
		return nil, err
	}
	only := map[string]bool{}
	for p, u := range first {
		if session == "" || slices.ContainsFunc(u.recs, func(r *ledger.Record) bool { return r.Session == session }) {
			only[p] = true
		}
	}
	return only, nil
}

// readUnpublished takes from files, as the snapshot found them, those with
// pending changes. A path that could not be opened, that now leads
// elsewhere, or whose file is not as its last guarded change left it is
// listed in local instead, for the STALE_FILE error: first those that
// could not be opened, then the others, each in the order of files.
func readUnpublished(files []File, pending map[string]*unpublished) (out []*publishFile, local []map[string]any) {
	for _, f := range files {
		if f.OpenErr != nil {
			local = append(local, map[string]any{"path": f.Path, "side": "local", "reason": reasonTypeChanged, "error": f.OpenErr.Error()})
		}
	}
	for _, f := range files {
		switch {
		case f.OpenErr != nil:
			continue
		case f.Resolved != f.Path:
			// A symlink now stands where the changes were made: the
			// path leads elsewhere.
			local = append(local, map[string]any{"path": f.Path, "side": "local", "reason": reasonTypeChanged,
				"current_path": f.Resolved})
			continue
		}
		u := pending[f.Path]
		if u == nil {
			continue
		}
		now := syncedFile{Exists: f.Exists, SHA256: f.SHA256}
		want := u.result()
		if f.Exists && !f.Regular || !now.same(want) {
			local = append(local, map[string]any{"path": u.path, "side": "local", "reason": reasonModified,
				"expected": want, "actual": stateOf(f), "sessions": u.sessions()})
			continue
		}
		out = append(out, &publishFile{u: u, state: now, data: f.Data, exec: f.Exec})
	}
	return out, local
}

// fileState is a file's state as the root package's FileState encodes it
// in JSON.
type fileState struct {
	Exists  bool   `json:"exists"`
	SHA256  string `json:"sha256,omitempty"`
	Size    int64  `json:"size_bytes"`
	MtimeMS int64  `json:"mtime_ms,omitempty"`
}

// stateOf is f's state.
func stateOf(f File) fileState {
	if !f.Exists {
		return fileState{}
	}
	return fileState{Exists: true, SHA256: f.SHA256, Size: f.Size, MtimeMS: f.MtimeMS}
}

// changedLocally is the STALE_FILE error of a publish that found the files
// of local (at least one) changed after their last guarded change.
func changedLocally(local []map[string]any) *Error {
	e := newError(codeStaleFile, "", fmt.Sprintf("%s changed after the last guarded change, by something other than editguard; nothing was published", count(len(local), "file")),
		"publish sends only what the ledger accounts for: make the change through editguard (read the file and write it again), or restore the last guarded version, then publish", nil)
	e.Details["side"] = "local"
	e.Details["files"] = local
	if len(local) == 1 {
		e.Details["path"] = local[0]["path"]
	}
	return e
}

// publish runs steps 1-4 of Publish for files and fills in res.
func (sy *syncer) publish(ctx context.Context, repo *gitsync.Repo, bs *branchSync, files []*publishFile, attempts int, res *PublishResult) error {
	remote, branch := bs.Remote, bs.Branch
	// The blobs are stored once; they outlive a lost lease.
	for _, f := range files {
		if !f.state.Exists {
			continue
		}
		oid, err := repo.HashObject(ctx, gitPath(repo, f.u.path), f.data)
		if err != nil {
			return gitError(err)
		}
		f.oid = oid
	}
	var lost error
	for attempt := 1; attempt <= attempts; attempt++ {
		res.Attempts = attempt
		if attempt > 1 {
			// A random pause, growing with each loss, so that hosts
			// racing for the branch do not collide in step again.
			d := time.Duration(rand.Int64N(int64(50*time.Millisecond) << min(attempt-2, 4)))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		head, err := repo.Fetch(ctx, remote, branch)
		if err != nil {
			return gitError(err)
		}
		res.OldHead = head
		changes, published, err := sy.checkUpstream(ctx, repo, bs, head, files)
		if err != nil {
			return err
		}
		res.Files = published
		if len(changes) == 0 {
			res.NewHead = head
			return nil
		}
		message, ident := commitText(published)
		ident.When = time.Now()
		commit, err := repo.Commit(ctx, head, changes, message, ident)
		if err != nil {
			return gitError(err)
		}
		err = repo.Push(ctx, remote, branch, commit, head)
		if errors.Is(err, gitsync.ErrLeaseLost) {
			lost = err
			continue
		}
		if err != nil {
			return gitError(err)
		}
		res.NewHead = commit
		return nil
	}
	e := newError(codeBusy, "", fmt.Sprintf("the branch %s of %s moved between fetch and push %d times in a row; nothing was published", branch, remote, attempts),
		"other hosts are publishing to the branch right now: publish again in a moment", lost)
	e.Details["remote"], e.Details["branch"], e.Details["attempts"] = remote, branch, attempts
	return e
}

// checkUpstream compares each file's base with the branch's head and
// returns the changes to commit and the files' report, or STALE_FILE.
func (sy *syncer) checkUpstream(ctx context.Context, repo *gitsync.Repo, bs *branchSync, head string, files []*publishFile) ([]gitsync.Change, []PublishedFile, error) {
	up, err := readUpstream(ctx, repo, head, files)
	if err != nil {
		return nil, nil, err
	}
	if err := sy.tooLargeUpstream(repo, bs, head, files, up); err != nil {
		return nil, nil, err
	}
	// A file the branch does not have, whose changes started from content
	// that exists here: if the branch never had it as far as this host
	// knows, that content was made here (outside editguard) and publishing
	// adds the file; if it had, someone deleted it upstream.
	var orphans []string
	for _, f := range files {
		if _, found := up.entries[gitPath(repo, f.u.path)]; !found && f.u.base().Exists && f.state.Exists {
			orphans = append(orphans, f.u.path)
		}
	}
	known, err := sy.knownOnBranch(ctx, repo, bs, head, orphans)
	if err != nil {
		return nil, nil, err
	}
	var (
		changes []gitsync.Change
		report  []PublishedFile
		stale   []map[string]any
	)
	for _, f := range files {
		newToBranch := slices.Contains(orphans, f.u.path) && !known[f.u.path]
		c, pf, reason := compareUpstream(repo, f, up, newToBranch)
		switch {
		case reason != "":
			gp := gitPath(repo, f.u.path)
			stale = append(stale, sy.upstreamChange(f, reason, pf.base, pf.up, up.contents[gp].Data))
		case c != nil:
			changes = append(changes, *c)
		}
		report = append(report, pf.PublishedFile)
	}
	if len(stale) > 0 {
		e := newError(codeStaleFile, "", fmt.Sprintf("%s changed upstream since the changes to them were made; nothing was published", count(len(stale), "file")),
			"run editguard pull: it lists these files as conflicts. To keep upstream's version, pull --discard-local (yours goes to history); to keep yours, pull --discard-local, then restore the version it saved and publish again", nil)
		e.Details["side"] = "upstream"
		e.Details["remote"], e.Details["branch"], e.Details["head"] = bs.Remote, bs.Branch, head
		e.Details["files"] = stale
		if len(stale) == 1 {
			e.Details["path"] = stale[0]["path"]
		}
		return nil, nil, e
	}
	return changes, report, nil
}

// upstream is what the branch's head holds at the files being published:
// their tree entries, and the contents of those that are regular files.
type upstream struct {
	entries  map[string]gitsync.Entry
	contents map[string]gitsync.Blob
}

// readUpstream reads the branch's entries and blobs at the files' paths.
func readUpstream(ctx context.Context, repo *gitsync.Repo, head string, files []*publishFile) (*upstream, error) {
	var paths []string
	for _, f := range files {
		paths = append(paths, gitPath(repo, f.u.path))
	}
	entries, err := repo.Entries(ctx, head, paths)
	if err != nil {
		return nil, gitError(err)
	}
	blobs := map[string]string{}
	for _, p := range paths {
		if e, ok := entries[p]; ok && e.Regular() {
			blobs[p] = e.OID
		}
	}
	contents, err := repo.ReadBlobs(ctx, blobs)
	if err != nil {
		return nil, gitError(err)
	}
	return &upstream{entries: entries, contents: contents}, nil
}

// tooLargeUpstream refuses the publish when a blob of the branch is larger
// than the file size limit and so was not read (see openRepo): nothing is
// published over content editguard cannot compare with the changes' base.
func (sy *syncer) tooLargeUpstream(repo *gitsync.Repo, bs *branchSync, head string, files []*publishFile, up *upstream) error {
	var large []map[string]any
	for _, f := range files {
		gp := gitPath(repo, f.u.path)
		if b := up.contents[gp]; b.TooLarge {
			d := tooLargeBlob(f.u.path, &largeBlob{up.entries[gp].OID, b}, sy.h.MaxFileSize(), "nothing was published", "").Details
			large = append(large, d)
		}
	}
	if len(large) == 0 {
		return nil
	}
	e := newError(codeTooLarge, "", fmt.Sprintf("the branch holds %s larger than the file size limit of %d bytes, where this publish changes them: they were not read, and nothing was published", count(len(large), "file"), sy.h.MaxFileSize()),
		"resolve these files with git, or open the workspace with a larger file size limit and publish again", nil)
	e.Details["side"] = "upstream"
	e.Details["remote"], e.Details["branch"], e.Details["head"] = bs.Remote, bs.Branch, head
	e.Details["limit_bytes"] = sy.h.MaxFileSize()
	e.Details["files"] = large
	if len(large) == 1 {
		e.Details["path"] = large[0]["path"]
		e.Details["size_bytes"] = large[0]["size_bytes"]
	}
	return e
}

// comparedFile is a file's report, with the states compareUpstream
// compared: its base (what its changes started from) and upstream's.
type comparedFile struct {
	PublishedFile
	base, up syncedFile
}

// compareUpstream decides one file: unchanged (upstream already holds it),
// a change to commit (upstream still holds its base), or stale with a
// reason. newToBranch says the branch never had the file, so a base that
// exists here was made here and the file is added.
func compareUpstream(repo *gitsync.Repo, f *publishFile, up *upstream, newToBranch bool) (*gitsync.Change, comparedFile, string) {
	gp := gitPath(repo, f.u.path)
	entry, found := up.entries[gp]
	cf := comparedFile{base: f.u.base()}
	reason := ""
	switch {
	case found && !entry.Regular():
		reason = reasonTypeChanged // a directory, symlink or submodule upstream
	case found:
		cf.up = syncedFile{Exists: true, SHA256: sha256Hex(up.contents[gp].Data)}
	default:
		if parent := fileAbove(up.entries, gp); parent != "" {
			reason = reasonTypeChanged // a parent directory is a file upstream
		}
	}
	want := f.state
	if !found && cf.base.Exists && newToBranch {
		cf.base = syncedFile{} // new to the branch
	}
	cf.PublishedFile = PublishedFile{Path: f.u.path, SHA256: want.SHA256, Sessions: f.u.sessions(), Tools: f.u.tools(),
		Changes: len(f.u.recs), FirstSeq: f.u.first.Seq, LastSeq: f.u.last.Seq}
	switch {
	case reason == "" && cf.up.same(want):
		cf.Op = "unchanged"
		return nil, cf, ""
	case reason == "" && cf.up.same(cf.base):
		c := &gitsync.Change{Path: gp, OID: f.oid, Mode: gitsync.ModeFile}
		switch {
		case !want.Exists:
			c.Delete, cf.Op = true, "deleted"
		case cf.up.Exists:
			cf.Op = "modified"
			if entry.Mode == gitsync.ModeExecutable {
				c.Mode = gitsync.ModeExecutable // the branch's mode is kept
			}
		default:
			cf.Op = "added"
			if f.exec {
				c.Mode = gitsync.ModeExecutable
			}
		}
		return c, cf, ""
	}
	if reason == "" {
		switch {
		case !cf.up.Exists:
			reason = reasonDeleted
		case !cf.base.Exists:
			reason = reasonCreated
		default:
			reason = reasonModified
		}
	}
	return nil, cf, reason
}

// knownOnBranch reports which of paths the branch had, as far as this host
// knows: per the file's synced state, or else the pull's base commit (or,
// before the first pull, the merge base of HEAD and head).
func (sy *syncer) knownOnBranch(ctx context.Context, repo *gitsync.Repo, bs *branchSync, head string, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	var rest []string
	for _, p := range paths {
		if f, ok := bs.Files[p]; ok {
			out[p] = f.Exists
		} else {
			rest = append(rest, p)
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	base := bs.Base
	if base == "" || !repo.HasCommit(ctx, base) {
		local, err := repo.Head(ctx)
		if err != nil || local == "" {
			return out, gitErrorOrNil(err)
		}
		if base, err = repo.MergeBase(ctx, local, head); err != nil || base == "" {
			return out, gitErrorOrNil(err)
		}
	}
	gps := make([]string, len(rest))
	for i, p := range rest {
		gps[i] = gitPath(repo, p)
	}
	entries, err := repo.Entries(ctx, base, gps)
	if err != nil {
		return nil, gitError(err)
	}
	for i, p := range rest {
		_, out[p] = entries[gps[i]]
	}
	return out, nil
}

func gitErrorOrNil(err error) error {
	if err == nil {
		return nil
	}
	return gitError(err)
}

// fileAbove returns a directory of p that is not a directory in entries
// (a file, symlink or submodule), or "".
func fileAbove(entries map[string]gitsync.Entry, p string) string {
	for i := range len(p) {
		if p[i] != '/' {
			continue
		}
		if e, ok := entries[p[:i]]; ok && e.Type != "tree" {
			return p[:i]
		}
	}
	return ""
}

// upstreamDiffMax bounds the diff of one file in a publish's STALE_FILE,
// in bytes, as the root package bounds a guarded change's STALE_FILE diff.
const upstreamDiffMax = 3000

// upstreamChange describes a file changed upstream: the diff from the base
// its changes were made on (kept in history by the first change) to
// upstream's content, bounded.
func (sy *syncer) upstreamChange(f *publishFile, reason string, base, up syncedFile, upData []byte) map[string]any {
	d := map[string]any{"path": f.u.path, "side": "upstream", "reason": reason,
		"base_sha256": base.SHA256, "upstream_sha256": up.SHA256, "sessions": f.u.sessions()}
	var baseData []byte
	if base.Exists {
		data, err := sy.h.Version(f.u.path, f.u.first.HistoryVersion)
		if err != nil || sha256Hex(data) != base.SHA256 {
			d["changes_unavailable"] = "the content the changes were based on is no longer in history"
			return d
		}
		baseData = data
	}
	diff := udiff.Unified("a/"+f.u.path+" (your base)", textcodec.Show(baseData, ""), "b/"+f.u.path+" (upstream)", textcodec.Show(upData, ""))
	if !base.Exists {
		diff = udiff.File(f.u.path, "", textcodec.Show(upData, ""), true, false)
	} else if !up.Exists {
		diff = udiff.File(f.u.path, textcodec.Show(baseData, ""), "", false, true)
	}
	d["changes_summary"] = udiff.Count(diff).String()
	d["changes"], _ = udiff.Bound(diff, upstreamDiffMax)
	return d
}

// commitText writes the message and the identity of a publish's commit:
// both name the sessions and tools that made the changes it carries.
func commitText(report []PublishedFile) (string, gitsync.Ident) {
	var (
		files           []PublishedFile
		sessions, tools []string
		first, last     uint64
	)
	for _, f := range report {
		if f.Op == "unchanged" {
			continue
		}
		files = append(files, f)
		sessions = append(sessions, f.Sessions...)
		tools = append(tools, f.Tools...)
		if first == 0 || f.FirstSeq < first {
			first = f.FirstSeq
		}
		last = max(last, f.LastSeq)
	}
	sessions, tools = sortedSet(sessions), sortedSet(tools)
	who := strings.Join(sessions, ", ")
	if len(who) > 80 {
		who = fmt.Sprintf("%s and %d more sessions", sessions[0], len(sessions)-1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "editguard publish: %s from %s\n\n", count(len(files), "file"), who)
	for _, f := range files {
		op := map[string]string{"added": "A", "deleted": "D"}[f.Op]
		if op == "" {
			op = "M"
		}
		fmt.Fprintf(&b, "%s %s (%s: %s)\n", op, f.Path, strings.Join(f.Sessions, ", "), strings.Join(f.Tools, ", "))
	}
	fmt.Fprintf(&b, "\nEditguard-Sessions: %s\nEditguard-Tools: %s\nEditguard-Ledger: %d-%d\nEditguard-Host: %s\n",
		strings.Join(sessions, ", "), strings.Join(tools, ", "), first, last, hostname())
	name := identSafe("editguard (" + who + ")")
	return b.String(), gitsync.Ident{Name: name, Email: "editguard@" + hostname()}
}

func sortedSet(s []string) []string {
	sort.Strings(s)
	return slices.Compact(s)
}

// count writes "1 file", "2 files".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// identSafe removes what git refuses in a name: angle brackets and line
// breaks.
func identSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == '\r' || r == 0 {
			return -1
		}
		return r
	}, s)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
