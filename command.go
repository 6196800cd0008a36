//go:build unix

package editguard

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
	"golang.org/x/sys/unix"
)

// Commands between checkpoints.
//
// A shell command (sed -i, a heredoc, a formatter, a build step) changes
// files without passing through editguard. BeginCommand and End put it
// between two checkpoints of the workspace, so that its changes are kept
// and accounted for like a tool's:
//
//   - A checkpoint walks the covered files (every regular file Walk visits:
//     not in .git or .editguard, not ignored by a .gitignore, at most
//     MaxFileSize) and makes the content of each recoverable: it is copied,
//     once, into a content-addressed store in .editguard/checkpoints/objects,
//     and the store is made durable with one syncfs before the command may
//     run. A stat cache (size, mtime, ctime, inode, mode) spares the files
//     whose stat did not change since the last checkpoint from being read
//     again; a file whose mtime or ctime is within racyWindow of the scan
//     that cached it is read again regardless (git's racy-timestamp rule:
//     a change in the same clock tick leaves the stat as it was).
//   - End checkpoints again and compares: each file the command created,
//     changed or deleted gets its displaced content (or "did not exist")
//     saved in history and a ledger record (tool: the client's shell tool,
//     or "exec"; the command, cut; sha256 before and after; the history
//     version), as a tool's change does, and the session's baseline moves
//     to the file's new content. So log, history, restore and rewind treat
//     them like any other change.
//   - A file the command replaced or deleted whose content before it was
//     not what this session last read or wrote (another writer's change) is
//     reported (Overwrote): the other writer's version is the one history
//     keeps as BackupVersion.
//   - A change another editguard tool made while the command ran is in the
//     ledger already: it is named (ChangedBy), not recorded twice.
//
// Checkpoints take a lock (.editguard/checkpoints/lock) for their scan, so
// commands may overlap in time; each keeps its first checkpoint in
// .editguard/checkpoints/active/<id>.json until it ends, and the store keeps
// every object an active command or the last checkpoint names.

const (
	checkpointDir = "checkpoints"
	// racyWindow is how close to a scan's start a file's mtime or ctime
	// must be for the next scan to read it again despite an equal stat.
	racyWindow = int64(2 * time.Second)
	// maxCommandText is how much of a command a ledger record keeps.
	maxCommandText = 1000
	// maxNotChecked is how many uncovered files a result names.
	maxNotChecked = 20
)

// cpEntry is a covered file as a checkpoint found it.
type cpEntry struct {
	Size    int64  `json:"s"`
	MtimeNS int64  `json:"m"`
	CtimeNS int64  `json:"c"`
	Ino     uint64 `json:"i"`
	Mode    uint32 `json:"o"`
	SHA256  string `json:"h"`
}

func (e cpEntry) sameStat(o cpEntry) bool {
	return e.Size == o.Size && e.MtimeNS == o.MtimeNS && e.CtimeNS == o.CtimeNS && e.Ino == o.Ino && e.Mode == o.Mode
}

// cpManifest is a checkpoint: every covered file, and when its scan began.
type cpManifest struct {
	StartNS int64              `json:"start_ns"`
	Files   map[string]cpEntry `json:"files"`
}

// activeCommand is what .editguard/checkpoints/active/<id>.json holds.
type activeCommand struct {
	ID       string          `json:"id"`
	Session  string          `json:"session"`
	Tool     string          `json:"tool"`
	Command  string          `json:"command"`
	PID      int             `json:"pid"`
	Started  time.Time       `json:"started"`
	Ledger   ledger.Position `json:"ledger"`
	Before   *cpManifest     `json:"before"`
	NotCheck []string        `json:"not_checked,omitempty"`
}

// CommandOptions control BeginCommand.
type CommandOptions struct {
	// Tool names the ledger records of the command's changes: the client's
	// shell tool (Bash, run_shell_command, shell) or, by default, "exec".
	Tool string
	// ID names the command, for ResumeCommand in another process (a
	// client's hook after its tool); by default a random one. It is 1 to
	// 64 of a-z, 0-9 and '-'. A command of that id still in progress is
	// ended first (recorded), as its after-hook never came.
	ID string
}

// A Command is a command between two checkpoints (see BeginCommand).
type Command struct {
	s   *Session
	act *activeCommand
}

// ID is the command's id, which names its checkpoint until it ends.
func (c *Command) ID() string { return c.act.ID }

// CommandChange is one file a command created, changed or deleted.
type CommandChange struct {
	Path         string `json:"path"`
	Op           string `json:"op"` // created, changed, deleted
	SHA256Before string `json:"sha256_before,omitempty"`
	SHA256After  string `json:"sha256_after,omitempty"`
	// BackupVersion is the history version of what the command displaced
	// (for a created file, the version saying it did not exist).
	BackupVersion string `json:"backup_version,omitempty"`
	// Overwrote is set when the file held, before the command, something
	// other than what this session last read or wrote: the command
	// replaced or deleted another writer's change, which BackupVersion
	// keeps.
	Overwrote bool `json:"overwrote,omitempty"`
	// ChangedBy names the ledger record of another tool's change that made
	// this same change while the command ran; it is not recorded again.
	ChangedBy string `json:"changed_by,omitempty"`
}

// CommandResult is what a command changed, as End found it.
type CommandResult struct {
	ID      string          `json:"id"`
	Command string          `json:"command"`
	Changes []CommandChange `json:"changes"`
	// NotChecked says what the checkpoints did not cover.
	NotChecked []string `json:"not_checked,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}

// Overwrites returns the changes that replaced or deleted another writer's
// change.
func (r *CommandResult) Overwrites() []CommandChange {
	var out []CommandChange
	for _, c := range r.Changes {
		if c.Overwrote {
			out = append(out, c)
		}
	}
	return out
}

// BeginCommand checkpoints the workspace before the command text runs: when
// it returns, the content of every covered file is durable in the
// checkpoint store. End, after the command, records what it changed.
func (s *Session) BeginCommand(ctx context.Context, command string, opts *CommandOptions) (*Command, error) {
	w := s.w
	tool, id := "exec", strings.ToLower(rand.Text()[:12])
	if opts != nil && opts.Tool != "" {
		tool = opts.Tool
	}
	if opts != nil && opts.ID != "" {
		if !validCommandID(opts.ID) {
			return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("bad command id %q: use 1 to 64 of a-z, 0-9 and '-'", cutText(opts.ID, 80)), "", nil)
		}
		id = opts.ID
		if old, err := s.ResumeCommand(id); err == nil {
			if _, err := old.End(ctx); err != nil {
				return nil, err
			}
		}
	}
	cp, err := w.openCheckpoints()
	if err != nil {
		return nil, stateError("open checkpoints", err)
	}
	defer cp.close()
	lk, err := cp.lock(ctx, w)
	if err != nil {
		return nil, ioError("", err)
	}
	defer lk.Unlock()
	before, notChecked, err := cp.scan(ctx, w, cp.loadCache())
	if err != nil {
		return nil, err
	}
	pos, err := w.led.Last()
	if err != nil {
		return nil, readError("read ledger", err)
	}
	act := &activeCommand{ID: id, Session: s.name, Tool: tool, Command: cutText(command, maxCommandText),
		PID: os.Getpid(), Started: time.Now().UTC(), Ledger: pos, Before: before, NotCheck: notChecked}
	data, err := json.Marshal(act)
	if err != nil {
		return nil, err
	}
	// The objects are durable (scan); the active record need not be: a
	// command whose record a power cut took was never told to run.
	if err := cp.active.WriteFileVolatile(act.ID+".json", data, 0o600); err != nil {
		return nil, stateError("write checkpoint", err)
	}
	cp.saveCache(before)
	return &Command{s: s, act: act}, nil
}

// ResumeCommand returns the command id began (in this process or another,
// as a client's hooks do before and after its shell tool), for End.
func (s *Session) ResumeCommand(id string) (*Command, error) {
	cp, err := s.w.openCheckpoints()
	if err != nil {
		return nil, stateError("open checkpoints", err)
	}
	defer cp.close()
	if !validCommandID(id) {
		return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("bad command id %q", cutText(id, 80)), "", nil)
	}
	data, err := cp.active.ReadFile(id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(CodeNotFound, "", fmt.Sprintf("no command %s is in progress", id), "", nil)
	}
	if err != nil {
		return nil, stateError("read checkpoint", err)
	}
	var act activeCommand
	if err := json.Unmarshal(data, &act); err != nil || act.Before == nil {
		return nil, newError(CodeUnsafeState, "", fmt.Sprintf("%s/%s/active/%s.json does not parse", StateDir, checkpointDir, id), "remove it", err)
	}
	return &Command{s: s, act: &act}, nil
}

// End checkpoints the workspace after the command and records each file it
// created, changed or deleted (see the section comment). A command ends
// once; End on an ended command fails with NOT_FOUND.
func (c *Command) End(ctx context.Context) (*CommandResult, error) {
	s, w := c.s, c.s.w
	cp, err := w.openCheckpoints()
	if err != nil {
		return nil, stateError("open checkpoints", err)
	}
	defer cp.close()
	lk, err := cp.lock(ctx, w)
	if err != nil {
		return nil, ioError("", err)
	}
	defer lk.Unlock()
	if st, err := cp.active.Stat(c.act.ID + ".json"); err != nil || !st.Exists {
		return nil, newError(CodeNotFound, "", fmt.Sprintf("command %s has ended already", c.act.ID), "", nil)
	}
	after, notChecked, err := cp.scan(ctx, w, cp.loadCache())
	if err != nil {
		return nil, err
	}
	res := &CommandResult{ID: c.act.ID, Command: c.act.Command, Changes: []CommandChange{}}
	res.NotChecked = mergeNotChecked(c.act.NotCheck, notChecked)
	before := c.act.Before
	for p, a := range after.Files {
		b, ok := before.Files[p]
		switch {
		case !ok:
			res.Changes = append(res.Changes, CommandChange{Path: p, Op: "created", SHA256After: a.SHA256})
		case a.SHA256 != b.SHA256:
			res.Changes = append(res.Changes, CommandChange{Path: p, Op: "changed", SHA256Before: b.SHA256, SHA256After: a.SHA256})
		}
	}
	for p, b := range before.Files {
		if _, ok := after.Files[p]; !ok {
			res.Changes = append(res.Changes, CommandChange{Path: p, Op: "deleted", SHA256Before: b.SHA256})
		}
	}
	slices.SortFunc(res.Changes, func(x, y CommandChange) int { return strings.Compare(x.Path, y.Path) })

	// Changes another tool made while the command ran are in the ledger.
	others := map[string]*LedgerRecord{}
	if recs, _, err := w.led.OKAfter(c.act.Ledger); err == nil {
		for _, r := range recs {
			others[r.Path+"\x00"+r.SHA256After] = r
		}
	}
	args, _ := json.Marshal(map[string]string{"command": c.act.Command, "id": c.act.ID})
	var written []*recorded
	for i := range res.Changes {
		ch := &res.Changes[i]
		if r, ok := others[ch.Path+"\x00"+ch.SHA256After]; ok {
			ch.ChangedBy = fmt.Sprintf("%s %s (ledger record %d)", r.Session, r.Tool, r.Seq)
			continue
		}
		var data []byte
		if ch.Op != "created" {
			if data, err = cp.objects.ReadFile(ch.SHA256Before); err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: the checkpoint lost what the command displaced (%v)", ch.Path, err))
				continue
			}
		}
		v, err := w.hist.Save(ch.Path, data, ch.Op == "created", ch.SHA256Before, history.Meta{Op: c.act.Tool, Session: s.name})
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: saving what the command displaced to history failed: %v", ch.Path, err))
			continue
		}
		ch.BackupVersion = v.ID
		if bl, ok := s.baseline(ch.Path); ok && ch.Op != "created" && bl.SHA256 != ch.SHA256Before {
			ch.Overwrote = true
		}
		a := newAttempt(s, c.act.Tool, ch.Path, nil, nil)
		a.rec.Args = args
		a.rec.Observed = &ledger.FileState{Exists: ch.Op != "created", SHA256: ch.SHA256Before}
		if ch.Op != "created" {
			a.rec.Observed.Size = before.Files[ch.Path].Size
		}
		a.rec.SHA256Before = ch.SHA256Before
		r := &Result{Path: ch.Path, SHA256: ch.SHA256After, Created: ch.Op == "created", Deleted: ch.Op == "deleted",
			BackupVersion: v.ID, Strategy: "command"}
		if ch.Op != "deleted" {
			r.SizeBytes = after.Files[ch.Path].Size
		}
		written = append(written, w.record(a, r, nil))
		// The session's baseline follows the file.
		if ch.Op == "deleted" {
			err = s.dropBaseline(ch.Path)
		} else {
			e := after.Files[ch.Path]
			err = s.setBaseline("", Baseline{Path: ch.Path, SHA256: e.SHA256, Size: e.Size, MtimeMS: e.MtimeNS / 1e6, FullRead: true, CapturedAt: time.Now()})
		}
		if err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("the session could not record %s as read (%v): read it before changing it again", ch.Path, err))
		}
	}
	for _, rc := range written {
		if r, _ := rc.wait(); r != nil {
			res.Warnings = append(res.Warnings, r.Warnings...)
		}
	}
	cp.saveCache(after)
	if err := cp.active.Remove(c.act.ID + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("removing the command's checkpoint failed: %v", err))
	}
	cp.collect(after)
	w.afterCommit()
	return res, nil
}

func mergeNotChecked(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// checkpoints is the open checkpoint store.
type checkpoints struct {
	dir, objects, active *statedir.Dir
}

func (w *Workspace) openCheckpoints() (*checkpoints, error) {
	d, err := w.state.Sub(checkpointDir, true)
	if err != nil {
		return nil, err
	}
	cp := &checkpoints{dir: d}
	if cp.objects, err = d.Sub("objects", true); err == nil {
		cp.active, err = d.Sub("active", true)
	}
	if err != nil {
		cp.close()
		return nil, err
	}
	return cp, nil
}

func (cp *checkpoints) close() {
	for _, d := range []*statedir.Dir{cp.active, cp.objects, cp.dir} {
		if d != nil {
			d.Close()
		}
	}
}

func (cp *checkpoints) lock(ctx context.Context, w *Workspace) (*filelock.Lock, error) {
	return cp.dir.Lock(ctx, "lock", &filelock.Options{Timeout: w.opts.LockTimeout})
}

// cacheFile is the stat cache: the last checkpoint.
const cacheFile = "cache.json"

func (cp *checkpoints) loadCache() *cpManifest {
	data, err := cp.dir.ReadFile(cacheFile)
	if err != nil {
		return nil
	}
	var m cpManifest
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	return &m
}

// saveCache keeps m as the stat cache. It is only a cache: a lost or stale
// one makes the next scan read more files, never fewer.
func (cp *checkpoints) saveCache(m *cpManifest) {
	if data, err := json.Marshal(m); err == nil {
		cp.dir.WriteFileVolatile(cacheFile, data, 0o600)
	}
}

// scan checkpoints the covered files, reading only those whose stat differs
// from prev's (or is racy), storing each content not yet in the store, and
// making the store durable before it returns. notChecked says what it did
// not cover.
func (cp *checkpoints) scan(ctx context.Context, w *Workspace, prev *cpManifest) (*cpManifest, []string, error) {
	m := &cpManifest{StartNS: time.Now().UnixNano(), Files: map[string]cpEntry{}}
	notChecked := []string{"files a .gitignore ignores, symbolic links and special files are not checked"}
	var tooBig []string
	stored := 0
	var buf []byte
	var ferr error
	err := w.Walk(ctx, ".", func(f *WalkFile) bool {
		var st unix.Stat_t
		if err := unix.Fstatat(f.dirfd, path.Base(f.Path), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			return true // gone, or no longer a file
		}
		e := cpEntry{Size: st.Size, MtimeNS: st.Mtim.Nano(), CtimeNS: st.Ctim.Nano(), Ino: st.Ino, Mode: uint32(st.Mode)}
		if prev != nil {
			if p, ok := prev.Files[f.Path]; ok && p.sameStat(e) && p.MtimeNS < prev.StartNS-racyWindow && p.CtimeNS < prev.StartNS-racyWindow {
				e.SHA256 = p.SHA256
				m.Files[f.Path] = e
				return true
			}
		}
		if st.Size > w.opts.MaxFileSize {
			tooBig = append(tooBig, f.Path)
			return true
		}
		rf, err := f.Open()
		if err != nil {
			return true // gone since the stat
		}
		buf, err = rf.ReadAll(buf, w.opts.MaxFileSize)
		rf.Close()
		if err != nil {
			tooBig = append(tooBig, f.Path)
			return true
		}
		e.SHA256 = sha256Hex(buf)
		if st, err := cp.objects.Stat(e.SHA256); err != nil || !st.Exists {
			if err := cp.objects.WriteFileVolatile(e.SHA256, buf, 0o600); err != nil {
				ferr = stateError("store "+f.Path+" in the checkpoint", err)
				return false
			}
			stored++
		}
		m.Files[f.Path] = e
		return true
	})
	if err == nil {
		err = ferr
	}
	if err != nil {
		return nil, nil, err
	}
	if stored > 0 {
		// One flush for every object stored: what the command may
		// displace is durable before it runs.
		if err := syncFS(int(cp.objects.File().Fd())); err != nil {
			return nil, nil, stateError("sync the checkpoint", err)
		}
	}
	if len(tooBig) > 0 {
		msg := fmt.Sprintf("%d files over %d bytes are not checked", len(tooBig), w.opts.MaxFileSize)
		if len(tooBig) > maxNotChecked {
			tooBig = append(tooBig[:maxNotChecked], "...")
		}
		notChecked = append(notChecked, msg+": "+strings.Join(tooBig, ", "))
	}
	return m, notChecked, nil
}

// collect removes the stored contents that neither keep (the checkpoint
// just taken) nor an active command's first checkpoint names. The caller
// holds the checkpoint lock.
func (cp *checkpoints) collect(keep *cpManifest) {
	live := map[string]bool{}
	for _, e := range keep.Files {
		live[e.SHA256] = true
	}
	ents, err := cp.active.ReadDir()
	if err != nil {
		return
	}
	for _, e := range ents {
		data, err := cp.active.ReadFile(e.Name())
		if err != nil {
			continue
		}
		var act activeCommand
		if json.Unmarshal(data, &act) != nil || act.Before == nil {
			return // unreadable: keep everything
		}
		for _, f := range act.Before.Files {
			live[f.SHA256] = true
		}
	}
	objs, err := cp.objects.ReadDir()
	if err != nil {
		return
	}
	for _, o := range objs {
		if !live[o.Name()] && validSHA256(o.Name()) {
			cp.objects.Remove(o.Name())
		}
	}
}

func validCommandID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
