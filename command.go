//go:build unix

package editguard

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/engine"
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
//     not in .git or .editguard, not ignored by a .gitignore unless
//     Options.CheckpointInclude names it, as it names .env by default; at
//     most MaxFileSize) and makes the content of each recoverable before the
//     command may run. In a git working copy a file whose bytes are the
//     blob git's index lists for it is kept by git (see gitView); any other
//     content is copied, once, into a content-addressed store in
//     .editguard/checkpoints/objects, made durable with an fsync per object
//     when there are a few, else one syncfs. A stat cache (size, mtime,
//     ctime, inode, mode: the last checkpoint's manifest) spares the files
//     whose stat did not change since the last checkpoint from being read
//     again; a file whose mtime or ctime is within racyWindow of the scan
//     that cached it is read again regardless (git's racy-timestamp rule:
//     a change in the same clock tick leaves the stat as it was). Symbolic
//     links, directories, FIFOs, sockets and devices are never opened or
//     followed; a regular file over MaxFileSize is never read, only named
//     as not checked.
//   - End checkpoints again and compares: each file the command created,
//     changed or deleted gets its displaced content (or "did not exist")
//     saved in history and a ledger record (tool: the client's shell tool,
//     or "exec"; the command, cut; sha256 before and after; the history
//     version), as a tool's change does, and the session's baseline moves
//     to the file's new content. So log, history, restore and rewind treat
//     them like any other change. For a command begun with
//     CommandOptions.WriterUnknown (a client's shell tool, a command not
//     run isolated), two checkpoints cannot tell the command's changes
//     from those someone else made while it ran: each is recorded as made
//     by a writer unknown, the session's baseline follows it marked as
//     no read, and rewind leaves it unless forced. Only content counts: a change of mode
//     alone (chmod +x) is not a change, as history keeps contents, not
//     modes. A covered file replaced by a symbolic link, a directory or a
//     special file is deleted (its content is displaced; the result says
//     what took its place); a file still there but no longer covered (grown
//     past MaxFileSize, or now ignored) is changed to a content not checked.
//     When the ignore rules changed (a .gitignore, .git/info/exclude), a
//     file that appears unchanged since before the first checkpoint was
//     there all along, ignored: it is not a change; one that appears
//     changed is recorded as created, with a note that it may have been
//     there, ignored.
//   - A file the command replaced or deleted whose content before it was
//     not what this session last read or wrote (another writer's change) is
//     reported (Overwrote): the other writer's version is the one history
//     keeps as BackupVersion.
//   - A file the command replaced or deleted whose content no record of
//     this session wrote and git's HEAD does not hold (someone's uncommitted
//     work: git checkout -- f, git stash, rm over a person's change) is
//     reported too (Uncommitted), with the history version that keeps it;
//     command_lostwork.go has the rules.
//   - A change another editguard tool or command recorded while the command
//     ran is in the ledger already: it is named (ChangedBy), not recorded
//     twice. End follows each file from its content at the first checkpoint
//     through the ledger's records of it to its content now, and records
//     only the steps no record accounts for.
//
// Checkpoints take a lock (.editguard/checkpoints/lock) for their scan, so
// commands may overlap in time; each keeps its first checkpoint (a
// manifest, see checkpoint.go) named by
// .editguard/checkpoints/active/<id>.json until it ends, and the store keeps
// every object an active command or the last checkpoint names.
//
// Overlapping commands. Nothing tells which process changed a file, so when
// two commands are in progress at once a change made while both ran cannot
// be attributed. End splits its command's time at the first checkpoint of
// every command that began meanwhile (those checkpoints are still in
// active/): a change between two checkpoints while no other command was in
// progress is the command's; one made while another was is recorded once,
// by whichever command ends first, with ConcurrentWith naming the others,
// and the later one names that record (ChangedBy) and the same uncertainty.
// Every content a checkpoint saw is kept; a content that no checkpoint saw
// (another tool's write that the command then overwrote before it ended)
// cannot be, and the result says so (Note, Totals.NotInHistory).
//
// Commands whose end never comes. A command belongs to the process that
// began it, unless it was begun with an ID (its end is expected from
// another process, as a client's hook after its shell tool). BeginCommand,
// under the checkpoint lock, ends every command in progress whose process
// is gone (on this host) or that is older than its MaxAge (default
// DefaultCommandMaxAge): its changes up to this checkpoint are recorded,
// under its own session and tool, with strategy "command_unended" and the
// result's Unended set (Command.Recovered returns them), and its active
// record is removed. Baselines are not moved for such a command: its
// session never saw its result and must read the files again. A process
// killed during End leaves the record too: the records End wrote before
// are this command's own and cover their steps, so the next BeginCommand
// records only the rest (history may get a version twice).
//
// The command runs as the same user as editguard and can reach the
// checkpoint store. An object is read only up to MaxFileSize and used only
// if its content hashes to its name; an active record or a manifest only
// up to maxStateFile, and a manifest only if its checksum, lengths, paths
// and sums check out; a link in place of a directory of the store is
// refused (UNSAFE_STATE). What the command removed from the store is
// missing from history, and the result says so.
//
// Many files. Every change is recorded, however many: a command that
// creates or deletes 100,000 files gets 100,000 ledger records and history
// versions, as nothing else would let rewind and restore undo it. Past
// engine.FsyncObjects changes, history lines are written without an fsync each
// and made durable with one syncfs per recordBatch changes, before the
// ledger records naming them;
// the session's baselines are loaded and saved once. What grows with the
// count is bounded elsewhere: the result lists at most maxListedChanges
// changes (the overwrites and odd ones first) and counts all of them in
// Totals; a session gets at most maxNewBaselines baselines it did not have
// (a file without one must be read before it is changed, which is safe);
// warnings are cut at maxWarnings. The rest is linear: End's heap holds
// the two checkpoints and the steps, about a kilobyte a file; a ledger
// record is about a kilobyte with the command's text. A command recording
// more than ledger.SinceLimit of records leaves a command overlapping it
// unable to read the whole ledger since it began, which its result says.

const (
	checkpointDir = "checkpoints"
	// racyWindow is how close to a scan's start a file's mtime or ctime
	// must be for the next scan to read it again despite an equal stat.
	racyWindow = int64(2 * time.Second)
	// maxCommandText is how much of a command a ledger record keeps.
	maxCommandText = 1000
	// maxNotChecked is how many uncovered files a result names.
	maxNotChecked = 20
	// maxListedChanges is how many changes a CommandResult lists: at most
	// about 60 KB of JSON (paths up to their limit aside), however many
	// files the command touched. Totals counts them all; the ledger holds
	// every one.
	maxListedChanges = 200
	// maxNewBaselines is how many files a command adds to its session's
	// baselines (files the session had no baseline for).
	maxNewBaselines = 1000
	// maxWarnings is how many warnings a CommandResult keeps.
	maxWarnings = 20
	// recordBatch is how many changes End saves to history before they
	// are made durable (one syncfs past engine.FsyncObjects, where oneByOne
	// allows it) and their ledger
	// records are written.
	recordBatch = 1000
)

// DefaultCommandMaxAge is how long a command may stay in progress before
// the next BeginCommand ends it as unended, unless CommandOptions.MaxAge
// says otherwise.
const DefaultCommandMaxAge = 24 * time.Hour

// Strategies of the ledger records of a command's changes.
const (
	strategyCommand = "command"
	// strategyUnended: the command's end was not seen; a later
	// BeginCommand recorded what it had changed by then.
	strategyUnended = "command_unended"
)

// WriterUnknown reports whether r records a shell command's change made
// by a writer unknown: while the command ran, by the command or by
// someone else, as nothing told them apart (CommandChange.WriterUnknown,
// as the ledger keeps it).
func WriterUnknown(r *LedgerRecord) bool {
	if r.Outcome != "ok" || (r.Strategy != strategyCommand && r.Strategy != strategyUnended) || len(r.Args) == 0 {
		return false
	}
	var a commandArgs
	return json.Unmarshal(r.Args, &a) == nil && a.WriterUnknown
}

// unchecked is, in a file's state at a checkpoint, a regular file that the
// checkpoint did not read (over MaxFileSize, unreadable, or ignored). The
// other states are "" (no regular file) and the content's SHA-256.
const unchecked = "?"

// cpEntry is a covered file as a checkpoint found it. (The JSON names read
// the checkpoints of active records an earlier version wrote.)
type cpEntry struct {
	Size    int64  `json:"s"`
	MtimeNS int64  `json:"m"`
	CtimeNS int64  `json:"c"`
	Ino     uint64 `json:"i"`
	Mode    uint32 `json:"o"`
	SHA256  string `json:"h"`
	// Git is the blob git's index listed for the path when the content
	// was last checked against it ("" for none), and Backed says the
	// content is that blob, in git's objects: the store has no copy.
	Git    string `json:"-"`
	Backed bool   `json:"-"`
}

func (e cpEntry) sameStat(o cpEntry) bool {
	return e.Size == o.Size && e.MtimeNS == o.MtimeNS && e.CtimeNS == o.CtimeNS && e.Ino == o.Ino && e.Mode == o.Mode
}

// cpManifest is a checkpoint: every covered file, and when its scan began.
// Its files are a base it may share with other manifests and what differs
// from it (manifest.go): read them with file, allFiles and numFiles.
type cpManifest struct {
	StartNS int64
	// Unchecked are the regular files the scan met but did not read, in
	// path order.
	Unchecked []string
	// Exclude is a sum of .git/info/exclude and the include patterns
	// (checkpointCoverage): with the .gitignore files among the files,
	// what decided the coverage.
	Exclude string
	// Index is the checksum of the git index the files' Git fields were
	// checked against, "" if there was none.
	Index string

	// The files: base's, but for over (added or changed) and gone
	// (removed); n of them.
	base *fileBase
	over map[string]cpEntry
	gone map[string]struct{}
	n    int
	// sums, made on first use, is what the files name by content.
	sumsMu sync.Mutex
	sums   *manifestSums

	// changed and removed (in path order) are the files that differ from
	// from, the manifest in memory scanDirty made m from.
	changed, removed []string
	from             *cpManifest
}

// diffPaths calls fn once with every path of a file whose entry may
// differ between a and b: if b was made from a, those changed or removed;
// else those either changed from its base and, if their bases differ,
// those of the two bases' files (walked side by side in path order) that
// only one has or whose entries differ.
func diffPaths(a, b *cpManifest, fn func(p string)) {
	if b.from == a {
		for _, list := range [][]string{b.changed, b.removed} {
			for _, p := range list {
				fn(p)
			}
		}
		return
	}
	seen := map[string]bool{}
	for _, m := range []*cpManifest{a, b} {
		for p := range m.over {
			if !seen[p] {
				seen[p] = true
				fn(p)
			}
		}
		for p := range m.gone {
			if !seen[p] {
				seen[p] = true
				fn(p)
			}
		}
	}
	if a.base == b.base {
		return
	}
	x, y := a.base, b.base
	other := func(p string) {
		if len(seen) == 0 || !seen[p] {
			fn(p)
		}
	}
	i, j := 0, 0
	for i < x.len() && j < y.len() {
		p, q := x.path(i), y.path(j)
		switch {
		case p < q:
			other(p)
			i++
		case q < p:
			other(q)
			j++
		default:
			if !x.sameEntry(i, y, j) {
				other(p)
			}
			i++
			j++
		}
	}
	for ; i < x.len(); i++ {
		other(x.path(i))
	}
	for ; j < y.len(); j++ {
		other(y.path(j))
	}
}

// state is p's state at the checkpoint (see unchecked).
func (m *cpManifest) state(p string) string {
	if e, ok := m.file(p); ok {
		return e.SHA256
	}
	if _, ok := slices.BinarySearch(m.Unchecked, p); ok {
		return unchecked
	}
	return ""
}

// activeCommand is what .editguard/checkpoints/active/<id>.json holds.
type activeCommand struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Tool    string `json:"tool"`
	Command string `json:"command"`
	PID     int    `json:"pid"`
	Host    string `json:"host,omitempty"`
	// Owned says the command ends with process PID (on Host): once that
	// is gone, its end will not come.
	Owned    bool      `json:"owned,omitempty"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline,omitzero"`
	// Ledger is the ledger's last record before the first checkpoint's
	// scan, Scanned the last after it: a record between the two may
	// describe a change made before or after the scan read its file.
	Ledger  ledger.Position `json:"ledger"`
	Scanned ledger.Position `json:"scanned"`
	// StartNS is when the first checkpoint's scan began, and Manifest
	// names that checkpoint in manifests/.
	StartNS  int64    `json:"start_ns"`
	Manifest string   `json:"manifest"`
	NotCheck []string `json:"not_checked,omitempty"`
	// ManifestSum is the SHA-256 of the manifest as written, and Seal the
	// workspace's MAC of the record (sealFields): End and recovery act
	// only on a record that verifies, with the manifest it names.
	ManifestSum string `json:"manifest_sha256,omitempty"`
	Seal        string `json:"seal,omitempty"`

	// Before is the first checkpoint, loaded; Legacy the one an earlier
	// version wrote into the record.
	Before *cpManifest `json:"-"`
	Legacy *cpManifest `json:"before,omitempty"`

	// isolated, for a command EndIsolated ends, is what it put into the
	// tree: End records only those changes (command_isolate.go).
	isolated isolatedAttribution

	// Head is the commit git's HEAD named at the first checkpoint ("" for
	// none): what was committed then is not uncommitted work
	// (command_lostwork.go).
	Head string `json:"head,omitempty"`

	// Isolation, for a command run isolated, says where its overlay is
	// and which process it is, written before it starts (Command.Isolate):
	// recovery puts what it wrote into the tree as EndIsolated would
	// (command_isolate_recover_linux.go).
	Isolation *isolationRecord `json:"isolation,omitempty"`

	// WriterUnknown is CommandOptions.WriterUnknown.
	WriterUnknown bool `json:"writer_unknown,omitempty"`
}

func (a *activeCommand) name() string { return commandName(a.Session, a.Tool, a.ID) }

// sealFields is what an active record's seal covers: every field but the
// seal and the loaded manifest.
func (a *activeCommand) sealFields() []byte {
	c := *a
	c.Seal, c.Before, c.Legacy = "", nil, nil
	b, _ := json.Marshal(&c)
	return b
}

// commandName is how results and records name a command.
func commandName(session, tool, id string) string {
	if session == "" {
		return fmt.Sprintf("%s (command %s)", tool, id)
	}
	return fmt.Sprintf("%s %s (command %s)", session, tool, id)
}

// commandArgs are the Args of a command's ledger record.
type commandArgs struct {
	Command string `json:"command"`
	ID      string `json:"id"`
	// Started is when the command's first checkpoint began.
	Started time.Time `json:"started,omitzero"`
	// From and To are when the scans of the two checkpoints between which
	// the change was made began: a command's records are written when it
	// ends, and tell when their changes were made only this way.
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// ConcurrentWith names the other commands in progress while the
	// change was made.
	ConcurrentWith []string `json:"concurrent_with,omitempty"`
	Unended        bool     `json:"unended,omitempty"`
	// Unchecked says which side of the change was not read ("before" or
	// "after"); its sha256 in the record is then "".
	Unchecked string `json:"unchecked,omitempty"`
	// Overwrote is CommandChange.Overwrote: the command replaced or
	// deleted another writer's change, which the record's history
	// version keeps. The ledger says so, so that a reader of the ledger
	// alone (editguard ui) sees the lost update it caught.
	Overwrote bool `json:"overwrote,omitempty"`
	// WriterUnknown is CommandChange.WriterUnknown: the change was made
	// while the command ran, by the command or by someone else. Rewind
	// reads it here.
	WriterUnknown bool `json:"writer_unknown,omitempty"`
}

// CommandOptions control BeginCommand.
type CommandOptions struct {
	// Tool names the ledger records of the command's changes: the client's
	// shell tool (Bash, run_shell_command, shell) or, by default, "exec".
	Tool string
	// ID names the command, for ResumeCommand in another process (a
	// client's hook after its tool); by default a random one. It is 1 to
	// 64 of a-z, 0-9 and '-'. A command of that id still in progress is
	// ended first (recorded as unended), as its after-hook never came. A
	// command begun with an ID does not end with the process that began
	// it: only MaxAge bounds it.
	ID string
	// MaxAge is how long the command may stay in progress before a later
	// BeginCommand ends it as unended; 0 means DefaultCommandMaxAge.
	MaxAge time.Duration
	// Owner, with ID, is the process the command belongs to when another
	// begins it on its behalf (a hook server, for an editguard exec): the
	// command ends with that process, on this host, as one begun without
	// an ID ends with the process that began it. 0: none (ID alone).
	Owner int
	// WriterUnknown says that nothing tells the command's writes from
	// those of others writing in the tree while it runs: a client's shell
	// tool beside a person's editor, a command run in the tree rather than
	// isolated. A change End finds that no ledger record accounts for (and
	// that isolation, when the command ran isolated after all, does not
	// attribute) is then recorded as made while the command ran by a
	// writer unknown (CommandChange.WriterUnknown): it is not a read of
	// the session's, and Rewind refuses to undo it unless forced.
	// Without it every such change is the command's.
	WriterUnknown bool
}

// A Command is a command between two checkpoints (see BeginCommand).
type Command struct {
	s         *Session
	act       *activeCommand
	recovered []*CommandResult
}

// ID is the command's id, which names its checkpoint until it ends.
func (c *Command) ID() string { return c.act.ID }

// Recovered returns what BeginCommand recorded of the commands in progress
// whose end it found would never come (see the section comment).
func (c *Command) Recovered() []*CommandResult { return c.recovered }

// CommandChange is one file a command created, changed or deleted. A file
// changed in steps (another writer's change in between, or a checkpoint of
// another command) has one CommandChange per step.
type CommandChange struct {
	Path string `json:"path"`
	Op   string `json:"op"` // created, changed, deleted
	// SHA256Before and SHA256After are the contents; "" for a side that
	// did not exist or was not checked (Note says which).
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
	// Uncommitted is set when the command replaced or deleted content that
	// no record of this session wrote and that git's HEAD does not hold
	// (see command_lostwork.go): someone's uncommitted work, which
	// BackupVersion keeps. An overwrite is not marked again.
	Uncommitted bool `json:"uncommitted,omitempty"`
	// ChangedBy names the ledger records of another tool's or command's
	// change that made this same change while the command ran; it is not
	// recorded again.
	ChangedBy string `json:"changed_by,omitempty"`
	// ConcurrentWith names the other commands in progress while this
	// change was made: any of them may have made it, so its attribution is
	// uncertain.
	ConcurrentWith []string `json:"concurrent_with,omitempty"`
	// Note says what is out of the ordinary: a side not checked, what
	// took a deleted file's place, a displaced content history lacks.
	Note string `json:"note,omitempty"`
	// NotInHistory is set when what the change displaced is not in
	// history: no checkpoint saw it.
	NotInHistory bool `json:"not_in_history,omitempty"`
	// WriterUnknown is set when the change was made while the command
	// ran and nothing tells whether the command or someone else (a
	// person's editor, another program) made it (a command begun with
	// CommandOptions.WriterUnknown that did not run isolated). It is
	// recorded, under the command's session and tool, as such; the
	// session's baseline follows it marked as no read (a change of the
	// file by the session needs a read first, NOT_READ with reason
	// writer_unknown, and a later command that starts from this content
	// did not overwrite anyone's), and Rewind refuses to undo it unless
	// forced.
	WriterUnknown bool `json:"writer_unknown,omitempty"`
	// ReadBefore, for a change by a writer unknown, is set when the
	// session had read or written the file before the command: that read
	// no longer holds, and the session must read the file again.
	ReadBefore bool `json:"read_before,omitempty"`
}

// CommandTotals counts a command's changes, listed or not.
type CommandTotals struct {
	Created int `json:"created"`
	Changed int `json:"changed"`
	Deleted int `json:"deleted"`
	// Recorded is how many this End recorded in the ledger; ChangedBy how
	// many were recorded already.
	Recorded  int `json:"recorded"`
	ChangedBy int `json:"changed_by"`
	// Concurrent is how many were made while another command was in
	// progress (attribution uncertain).
	Concurrent   int `json:"concurrent"`
	Overwrote    int `json:"overwrote"`
	Uncommitted  int `json:"uncommitted"`
	NotInHistory int `json:"not_in_history"`
	// WriterUnknown is how many were made by a writer unknown.
	WriterUnknown int `json:"writer_unknown"`
}

// CommandResult is what a command changed, as End found it.
type CommandResult struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Command string `json:"command"`
	// Unended says the command's end was never seen: its process died or
	// it outlived its MaxAge, and a later BeginCommand recorded what it had
	// changed by then.
	Unended bool `json:"unended,omitempty"`
	// Changes lists at most maxListedChanges changes in path order: every
	// overwrite, discard of uncommitted work and odd change first, then
	// the others. Totals counts them
	// all and Unlisted those left out; the ledger has every one.
	Changes  []CommandChange `json:"changes"`
	Totals   CommandTotals   `json:"totals"`
	Unlisted int             `json:"unlisted,omitempty"`
	// NotChecked says what the checkpoints did not cover.
	NotChecked []string `json:"not_checked,omitempty"`
	// Conflicts are the changes of an isolated command not put into the
	// tree, as someone else had changed the file meanwhile (EndIsolated);
	// at most maxListedChanges, and a warning counts the rest.
	Conflicts []CommandConflict `json:"conflicts,omitempty"`
	Warnings  []string          `json:"warnings,omitempty"`

	warned int
}

func (r *CommandResult) warn(format string, args ...any) {
	r.warned++
	switch {
	case r.warned < maxWarnings:
		r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
	case r.warned == maxWarnings:
		r.Warnings = append(r.Warnings, "more warnings left out")
	}
}

// Overwrites returns the listed changes that replaced or deleted another
// writer's change (Totals.Overwrote counts them all).
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
// Commands in progress whose end will not come are ended first (see
// Command.Recovered).
func (s *Session) BeginCommand(ctx context.Context, command string, opts *CommandOptions) (*Command, error) {
	w := s.w
	tool, id, owned, maxAge := opExec, strings.ToLower(rand.Text()[:12]), true, DefaultCommandMaxAge
	if opts != nil && opts.Tool != "" {
		tool = opts.Tool
	}
	if opts != nil && opts.ID != "" {
		if !validCommandID(opts.ID) {
			return nil, newError(CodeInvalidArgument, "", fmt.Sprintf("bad command id %q: use 1 to 64 of a-z, 0-9 and '-'", cutText(opts.ID, 80)), "", nil)
		}
		id, owned = opts.ID, false
	}
	pid := os.Getpid()
	if opts != nil && opts.ID != "" && opts.Owner > 0 {
		pid, owned = opts.Owner, true
	}
	if opts != nil && opts.MaxAge > 0 {
		maxAge = opts.MaxAge
	}
	w.watchForCommand()
	cp, unlock, err := w.lockCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	pos, err := w.led.Last()
	if err != nil {
		return nil, readError("read ledger", err)
	}
	// An isolated command to recover has its changes put into the tree
	// first, so that the checkpoint below sees them.
	isolated := w.applyUnendedIsolated(cp, id)
	cache, cacheName := cp.loadCache()
	before, notChecked, mark, err := cp.checkpoint(ctx, w, cache, cacheName)
	if err != nil {
		return nil, err
	}
	recovered := w.recoverCommands(cp, id, before, pos, notChecked, isolated)
	scanned, err := w.led.Last()
	if err != nil {
		return nil, readError("read ledger", err)
	}
	manifest, sum, err := cp.saveManifest(before)
	if err != nil {
		return nil, stateError("write checkpoint", err)
	}
	cp.remember(manifest, sum, before, mark)
	host, _ := os.Hostname()
	now := time.Now().UTC()
	act := &activeCommand{ID: id, Session: s.name, Tool: tool, Command: cutText(command, maxCommandText),
		PID: pid, Host: host, Owned: owned, Started: now, Deadline: now.Add(maxAge),
		Ledger: pos, Scanned: scanned, StartNS: before.StartNS, Manifest: manifest, Before: before, NotCheck: notChecked,
		ManifestSum: sum, Head: w.headCommit(cp), WriterUnknown: opts != nil && opts.WriterUnknown}
	act.Seal = cp.mac("command", act.sealFields())
	data, err := json.Marshal(act)
	if err != nil {
		return nil, err
	}
	// The objects are durable (scan); the active record and its manifest
	// need not be: a command whose record a power cut took was never told
	// to run.
	if err := cp.active.WriteFileVolatile(act.ID+".json", data, 0o600); err != nil {
		cp.manifests.Remove(manifest)
		return nil, stateError("write checkpoint", err)
	}
	cp.setLast(manifest)
	cp.sweepManifests()
	if len(recovered) > 0 || cache == nil {
		// Recovered commands' contents, and whatever a store without a
		// stat cache holds, are collected from the whole store.
		cp.collect(before, nil, true)
		cp.dir.Remove("cache.json") // an earlier version's stat cache
	} else {
		// The contents changed since the last checkpoint (by anyone).
		cp.collect(before, replaced(cache, before), false)
	}
	if len(recovered) > 0 {
		w.afterCommit()
	}
	return &Command{s: s, act: act, recovered: recovered}, nil
}

// recoverCommands ends, against the checkpoint cur just taken (pos being
// the ledger's last record before its scan), every command in progress
// whose end will not come: one of the id about to begin, one whose owning
// process is gone, one past its deadline. An isolated command of this
// host is ended only if its changes were put into the tree before cur
// (isolated, by applyUnendedIsolated). The caller holds the lock.
func (w *Workspace) recoverCommands(cp *checkpoints, id string, cur *cpManifest, pos ledger.Position, notChecked []string, isolated map[string]*isolatedRecovery) []*CommandResult {
	heads, err := cp.activeRecords()
	if err != nil {
		return nil // unreadable: nothing is ended
	}
	host, _ := os.Hostname()
	now := time.Now()
	var out []*CommandResult
	for _, h := range heads {
		ir := isolated[h.ID]
		if h.Isolation != nil && h.Host == host {
			if ir == nil {
				continue // still running, or not this process's to end
			}
		} else if !commandOver(h, id, now, host) {
			continue
		}
		act, err := cp.readActive(h.ID)
		if err != nil {
			continue // unreadable: left for a person (collect keeps its objects)
		}
		if ir != nil {
			act.isolated = ir.applied
		}
		res := w.finishCommand(cp, w.NewSession(act.Session), act, cur, pos, notChecked, true)
		if err := cp.active.Remove(act.ID + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			res.warn("removing the command's checkpoint failed: %v", err)
		}
		ir.finish(res)
		out = append(out, res)
	}
	return out
}

// commandOver reports whether the command of the active record h will not
// end on its own: it has the id about to begin, its deadline passed, or
// it is owned by a process on this host that is gone.
func commandOver(h *activeCommand, id string, now time.Time, host string) bool {
	deadline := h.Deadline
	if deadline.IsZero() {
		deadline = h.Started.Add(DefaultCommandMaxAge)
	}
	return h.ID == id || !now.Before(deadline) || h.Owned && h.Host == host && !processAlive(h.PID)
}

// processAlive reports whether process pid exists (a process of another
// user counts; a zombie too).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
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
	act, err := cp.readActive(id)
	if err != nil {
		return nil, err
	}
	return &Command{s: s, act: act}, nil
}

// maxStateFile bounds what End and BeginCommand read of a file in the
// checkpoint store other than an object (an active record, the stat
// cache): about 1.5 million files' entries. The command runs as the same
// user and could put a huge file there.
const maxStateFile = 256 << 20

// readBounded reads the regular file name in d, failing past max bytes.
func readBounded(d *statedir.Dir, name string, buf []byte, max int64) ([]byte, error) {
	f, err := d.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size() > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	if int64(cap(buf)) < f.Size()+1 {
		buf = make([]byte, 0, f.Size()+1)
	}
	return readFDInto(buf[:0], f.Fd(), max)
}

// End checkpoints the workspace after the command and records each file it
// created, changed or deleted (see the section comment). A command ends
// once; End on an ended command fails with NOT_FOUND.
func (c *Command) End(ctx context.Context) (*CommandResult, error) {
	s, w := c.s, c.s.w
	cp, unlock, err := w.lockCheckpoints(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The record must still be this command's: a later BeginCommand may
	// have ended it (unended) and another of the same id begun.
	cur, err := cp.readActiveHead(c.act.ID + ".json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, stateError("read checkpoint", err)
	}
	if cur == nil || cur.ID != c.act.ID || !cur.Started.Equal(c.act.Started) || cur.StartNS != c.act.StartNS {
		return nil, newError(CodeNotFound, "", fmt.Sprintf("command %s has ended already", c.act.ID),
			"a command ends once; a later BeginCommand ends one whose process is gone or whose MaxAge passed", nil)
	}
	pos, err := w.led.Last()
	if err != nil {
		return nil, readError("read ledger", err)
	}
	// The second checkpoint's new contents are what the next command may
	// displace: durable before End returns, flushed beside the history
	// versions finishCommand saves (the two sets of fsyncs commit
	// together), not before them.
	cp.deferFlush = true
	after, notChecked, mark, err := cp.checkpoint(ctx, w, c.act.Before, c.act.Manifest)
	cp.deferFlush = false
	if err != nil {
		return nil, err
	}
	flushed := make(chan error, 1)
	if f := cp.pending; f != nil {
		cp.pending = nil
		go func() { flushed <- f() }()
	} else {
		flushed <- nil
	}
	res := w.finishCommand(cp, s, c.act, after, pos, notChecked, false)
	if err := <-flushed; err != nil {
		// Not the stat cache, then: the next checkpoint reads and
		// stores those files again.
		res.warn("making the checkpoint durable failed: %v; the next command's checkpoint reads the files again", err)
	} else if manifest, sum, err := cp.saveManifest(after); err == nil {
		cp.remember(manifest, sum, after, mark)
		cp.setLast(manifest)
	}
	if err := cp.active.Remove(c.act.ID + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		res.warn("removing the command's checkpoint failed: %v", err)
	}
	cp.sweepManifests()
	// The contents the command displaced are in history now.
	cp.collect(after, replaced(c.act.Before, after), false)
	w.afterCommit()
	return res, nil
}

// replaced returns the stored contents of a's files that b no longer has.
func replaced(a, b *cpManifest) []string {
	var out []string
	diffPaths(a, b, func(p string) {
		if e, ok := a.file(p); ok && !e.Backed && b.state(p) != e.SHA256 {
			out = append(out, e.SHA256)
		}
	})
	return out
}

// cpPoint is one checkpoint in a command's time: its first, one of another
// command that began meanwhile, or its last.
type cpPoint struct {
	m       *cpManifest
	ledger  uint64 // the ledger's last seq before its scan
	scanned uint64 // after it; 0: none yet (the last checkpoint)
}

// otherCommand is a command in progress at some time during another's.
type otherCommand struct {
	name       string
	start, end int64 // its time, as Unix ns; end 0: in progress
}

// ledgerStep is a record of a change of one file, as a step from one state
// to another (see unchecked).
type ledgerStep struct {
	seq           uint64
	before, after string
	session       string
	name          string // how ChangedBy names it
	command       string // the other command that recorded it, if any
	own           bool   // recorded by this command (an End cut short)
	other         bool   // recorded by another session
	// from and to bound when a command's recorded change was made (Unix
	// ns); 0 for another tool's, made when it was recorded.
	from, to int64
}

// step is one change of a file End found: rec nil for one no record
// accounts for, which End records.
type step struct {
	path       string
	from, to   string
	fromSize   int64
	toSize     int64
	fromGit    string // the blob that holds from, if git does
	rec        *ledgerStep
	concurrent []string
	note       string
	byOther    bool // from is what another writer's record left
	unknown    bool // no record accounts for it, and its writer is not known (markUnknown)
	first      bool // from is the file's state at the command's first checkpoint
	last       bool // to is the file's state now
	// between: when the scans of the checkpoints around the step began.
	between [2]int64
}

// finishCommand records what act's command changed up to the checkpoint
// after (pos: the ledger's last record before its scan), as s, and returns
// the result. unended says the command's end was not seen. The caller holds
// the checkpoint lock and removes act's record.
func (w *Workspace) finishCommand(cp *checkpoints, s *Session, act *activeCommand, after *cpManifest, pos ledger.Position, notChecked []string, unended bool) *CommandResult {
	res := &CommandResult{ID: act.ID, Session: act.Session, Command: act.Command, Unended: unended, Changes: []CommandChange{}}
	res.NotChecked = mergeNotChecked(act.NotCheck, notChecked)

	mids, others := commandsDuring(cp, act, after)
	byPath, ended := w.ledgerSteps(s, act, res)
	for _, oc := range ended {
		if !slices.ContainsFunc(others, func(o otherCommand) bool { return o.name == oc.name }) {
			others = append(others, *oc)
		}
	}

	steps := act.markUnknown(act.attribute(w.commandSteps(cp, act, after, pos, mids, others, byPath)))
	slices.SortStableFunc(steps, func(x, y step) int { return strings.Compare(x.path, y.path) })
	w.recordSteps(cp, s, act, steps, res, unended)
	return res
}

// markUnknown marks each step of steps no record accounts for as made by a
// writer unknown, for a command begun with WriterUnknown whose changes
// isolation did not attribute (attribute).
func (act *activeCommand) markUnknown(steps []step) []step {
	if !act.WriterUnknown || act.isolated != nil {
		return steps
	}
	for i := range steps {
		steps[i].unknown = steps[i].rec == nil
	}
	return steps
}

// commandsDuring returns the other commands in progress, as others, to
// tell which ran alongside each step; and, as mids, those that began in
// act's time (after its first checkpoint, before after): their first
// checkpoints fall between act's, so its steps go checkpoint to checkpoint
// through them.
func commandsDuring(cp *checkpoints, act *activeCommand, after *cpManifest) (mids []string, others []otherCommand) {
	heads, _ := cp.activeRecords()
	for _, h := range heads {
		if h.ID == act.ID {
			continue
		}
		others = append(others, otherCommand{name: h.name(), start: h.StartNS})
		if h.StartNS > act.StartNS && h.StartNS < after.StartNS {
			mids = append(mids, h.ID)
		}
	}
	return mids, others
}

// ledgerSteps returns the records of changes since act's first checkpoint,
// by file; those of other commands also tell when those commands ran,
// returned as ended by name. A ledger that could not be read since the
// first checkpoint is warned of in res.
func (w *Workspace) ledgerSteps(s *Session, act *activeCommand, res *CommandResult) (byPath map[string][]*ledgerStep, ended map[string]*otherCommand) {
	recs, anchored, err := w.led.OKAfter(act.Ledger)
	switch {
	case err != nil:
		res.warn("reading the ledger since the command began failed (%v): a change another tool recorded meanwhile may be recorded again here", err)
	case !anchored:
		res.warn("the ledger grew by more than %d MiB since the command began: a change another tool recorded meanwhile may be recorded again here", ledger.SinceLimit>>20)
	}
	byPath = map[string][]*ledgerStep{}
	ended = map[string]*otherCommand{}
	for _, r := range recs {
		byPath[r.Path] = append(byPath[r.Path], newLedgerStep(r, s.name, act.ID, ended))
	}
	return byPath, ended
}

// newLedgerStep returns r as a step, as seen by the command actID of
// session. A command's record also tells which states it could not check,
// when its change was made and which command made it; the time of another
// command's is noted in ended.
func newLedgerStep(r *ledger.Record, session, actID string, ended map[string]*otherCommand) *ledgerStep {
	ls := &ledgerStep{seq: r.Seq, before: r.SHA256Before, after: r.SHA256After, session: r.Session,
		name: fmt.Sprintf("%s %s (ledger record %d)", r.Session, r.Tool, r.Seq), other: r.Session != session}
	if r.Strategy != strategyCommand && r.Strategy != strategyUnended {
		return ls
	}
	var a commandArgs
	if json.Unmarshal(r.Args, &a) != nil {
		return ls
	}
	switch a.Unchecked {
	case "before":
		ls.before = unchecked
	case "after":
		ls.after = unchecked
	}
	if !a.From.IsZero() && !a.To.IsZero() {
		ls.from, ls.to = a.From.UnixNano(), a.To.UnixNano()
	}
	if a.ID == actID {
		ls.own, ls.other = true, false
		return ls
	}
	ls.command = commandName(r.Session, r.Tool, a.ID)
	noteEnded(ended, ls.command, &a, r)
	return ls
}

// noteEnded widens the time of the other command name in ended to cover
// its record r (with args a), adding it if it is not there yet.
func noteEnded(ended map[string]*otherCommand, name string, a *commandArgs, r *ledger.Record) {
	oc := ended[name]
	if oc == nil {
		oc = &otherCommand{name: name}
		if !a.Started.IsZero() {
			oc.start = a.Started.UnixNano()
		}
		ended[name] = oc
	}
	// It ran until its last checkpoint began.
	end := r.Time
	if !a.To.IsZero() {
		end = a.To
	}
	oc.end = max(oc.end, end.UnixNano())
}

// commandSteps returns the steps of act's command, checkpoint to
// checkpoint: from its first through mids to after (pos: the ledger's last
// record before its scan). Only two checkpoints' files are in memory at a
// time besides the first.
func (w *Workspace) commandSteps(cp *checkpoints, act *activeCommand, after *cpManifest, pos ledger.Position, mids []string, others []otherCommand, byPath map[string][]*ledgerStep) []step {
	var steps []step
	a := &cpPoint{m: act.Before, ledger: act.Ledger.Seq, scanned: act.Scanned.Seq}
	for first := true; ; first = false {
		b := &cpPoint{m: after, ledger: pos.Seq}
		for b.m == after && len(mids) > 0 {
			mid, err := cp.readActive(mids[0])
			mids = mids[1:]
			if err == nil { // else it ended meanwhile: its records tell its changes
				b = &cpPoint{m: mid.Before, ledger: mid.Ledger.Seq, scanned: mid.Scanned.Seq}
			}
		}
		steps = w.pairSteps(steps, a, b, first, b.m == after, byPath, concurrentWith(others, a, b))
		if b.m == after {
			break
		}
		a = b
	}
	return steps
}

// concurrentWith returns the names of the commands of others in progress
// at some time between checkpoints a and b, sorted.
func concurrentWith(others []otherCommand, a, b *cpPoint) []string {
	var concurrent []string
	for _, o := range others {
		if o.start < b.m.StartNS && (o.end == 0 || o.end > a.m.StartNS) {
			concurrent = append(concurrent, o.name)
		}
	}
	slices.Sort(concurrent)
	return concurrent
}

// pairSteps appends the steps of the files between checkpoints a and b
// (a the command's first if first, b the last if last) to steps.
func (w *Workspace) pairSteps(steps []step, a, b *cpPoint, first, last bool, byPath map[string][]*ledgerStep, concurrent []string) []step {
	pr := &stepPair{a: a, b: b, first: first, last: last, concurrent: concurrent}
	paths := pr.paths(byPath)
	// Files appearing may have been there all along, ignored, if the
	// ignore rules changed.
	rulesChanged := a.m.Exclude != b.m.Exclude ||
		slices.ContainsFunc(paths, func(p string) bool { return path.Base(p) == ".gitignore" })
	var root *os.File
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	for _, p := range paths {
		x, y := a.m.state(p), b.m.state(p)
		note := ""
		if last && x != "" && y == "" {
			// Gone from the walk: see what is there now.
			if root == nil {
				root, _ = w.root.OpenFile(".", os.O_RDONLY|engine.ODirectory, 0)
			}
			y, note = goneState(root, p)
		}
		if x == "" && y != "" && y != unchecked && rulesChanged {
			if e, _ := b.m.file(p); e.CtimeNS < a.m.StartNS-racyWindow {
				continue // there, unchanged, all along: ignored before
			}
			note = "the ignore rules changed: it may have been there before, ignored and not checked"
		}
		n := len(steps)
		steps = chainSteps(steps, p, x, y, recordsInRange(byPath[p], a, b), a, b)
		pr.fill(steps[n:], p, x, y, note)
	}
	return steps
}

// stepPair is the pair of checkpoints pairSteps builds steps between: a the
// command's first if first, b its last if last, and the other commands in
// progress between them.
type stepPair struct {
	a, b        *cpPoint
	first, last bool
	concurrent  []string
}

// paths returns, in order, the files that differ between the pair's
// checkpoints and those with records in the pair's range: the files that
// may have steps.
func (pr *stepPair) paths(byPath map[string][]*ledgerStep) []string {
	a, b := pr.a, pr.b
	paths := map[string]bool{}
	diffPaths(a.m, b.m, func(p string) {
		if a.m.state(p) != b.m.state(p) {
			paths[p] = true
		}
	})
	for _, p := range a.m.Unchecked {
		if b.m.state(p) != unchecked {
			paths[p] = true
		}
	}
	for _, p := range b.m.Unchecked {
		if a.m.state(p) != unchecked {
			paths[p] = true
		}
	}
	for p, rs := range byPath {
		if !paths[p] && slices.ContainsFunc(rs, func(r *ledgerStep) bool { return inRange(r, a, b) }) {
			paths[p] = true
		}
	}
	return slices.Sorted(maps.Keys(paths))
}

// goneState returns p's state at the last checkpoint, whose walk no longer
// met it, from what is at p now under root (nil: not open, nothing known),
// and a note saying what is there: a regular file still there is one no
// longer covered, whose content was not checked; anything else (nothing, a
// link, a directory, a special file) leaves the file deleted.
func goneState(root *os.File, p string) (y, note string) {
	if root == nil {
		return "", ""
	}
	regular, note := kindAt(root, p)
	if regular {
		return unchecked, "still there but no longer covered (ignored or unreadable): its new content was not checked"
	}
	return "", note
}

// recordsInRange returns the records of rs that may describe a change
// between checkpoints a and b (see inRange), in order.
func recordsInRange(rs []*ledgerStep, a, b *cpPoint) []*ledgerStep {
	var out []*ledgerStep
	for _, r := range rs {
		if inRange(r, a, b) {
			out = append(out, r)
		}
	}
	return out
}

// fill fills in what chainSteps leaves out of sts, the steps it made of p
// from x (its state at the pair's first checkpoint) to y (at its second):
// when they were made; whether they start at the command's first
// checkpoint or end at its last; the sizes of their contents and the git
// blob of the one they displace, as the checkpoints found them; and the
// commands that may have made them. A step no record accounts for gets the
// pair's concurrent commands (and the note about y, if it ends at y); one
// another command recorded gets those and that command.
func (pr *stepPair) fill(sts []step, p, x, y, note string) {
	a, b := pr.a, pr.b
	for i := range sts {
		st := &sts[i]
		st.between = [2]int64{a.m.StartNS, b.m.StartNS}
		st.first, st.last = pr.first && i == 0 && st.from == x, pr.last && i == len(sts)-1
		if e, ok := a.m.file(p); ok && st.from == e.SHA256 {
			st.fromSize = e.Size
			if e.Backed {
				st.fromGit = e.Git
			}
		}
		if e, ok := b.m.file(p); ok && st.to == e.SHA256 {
			st.toSize = e.Size
		}
		if st.rec == nil {
			st.concurrent = pr.concurrent
			if st.to == y {
				st.note = note
			}
		} else if st.rec.command != "" {
			st.concurrent = append(slices.Clone(pr.concurrent), st.rec.command)
			slices.Sort(st.concurrent)
			st.concurrent = slices.Compact(st.concurrent)
		}
	}
}

// inRange reports whether the record r may describe a change between
// checkpoints a and b. A tool's record is written when its change is made:
// it follows a's scan's start and precedes b's scan's end. A command's is
// written when it ends: its checkpoints' time overlaps a to b. (Scans take
// the lock: one whose start precedes a's start has ended before it.)
func inRange(r *ledgerStep, a, b *cpPoint) bool {
	if r.to != 0 {
		return r.to > a.m.StartNS && r.from < b.m.StartNS
	}
	return r.seq > a.ledger && (b.scanned == 0 || r.seq <= b.scanned)
}

// seenBy reports whether a's scan may have seen r's change already, and
// unseenBy whether b's may not have seen it yet.
func seenBy(r *ledgerStep, a *cpPoint) bool {
	if r.to != 0 {
		return r.from < a.m.StartNS
	}
	return r.seq <= a.scanned
}

func unseenBy(r *ledgerStep, b *cpPoint) bool {
	if r.to != 0 {
		return r.to > b.m.StartNS
	}
	return b.scanned == 0 || r.seq > b.ledger
}

// chainSteps appends the steps that take path p from x (its state at a) to
// y (at b), given rs, the records of p in the pair's range: each record is
// a step, and each gap between them (a state a record did not start from)
// is a step no record accounts for. Records that a's scan may have seen
// already, or b's scan not yet, are dropped first.
func chainSteps(steps []step, p, x, y string, rs []*ledgerStep, a, b *cpPoint) []step {
	// A record a's scan may have seen that left x was seen by it.
	cut := -1
	for i, r := range rs {
		if seenBy(r, a) && r.after == x {
			cut = i
		}
	}
	rs = rs[cut+1:]
	// A record b's scan may not have seen that starts from y was not.
	for i, r := range rs {
		if unseenBy(r, b) && r.before == y {
			rs = rs[:i]
			break
		}
	}
	cur, byOther := x, false
	for _, r := range rs {
		if r.before != cur && !(cur == unchecked && r.before == unchecked) {
			steps = append(steps, step{path: p, from: cur, to: r.before, byOther: byOther})
		}
		steps = append(steps, step{path: p, from: r.before, to: r.after, rec: r})
		cur, byOther = r.after, r.other
	}
	if cur != y && !(cur == unchecked && y == unchecked) {
		steps = append(steps, step{path: p, from: cur, to: y, byOther: byOther})
	}
	return steps
}

// kindAt looks at p under the root open as root, following no symbolic
// link, and reports whether a regular file is there, or else what is
// ("" for nothing).
func kindAt(root *os.File, p string) (regular bool, what string) {
	parts := strings.Split(p, "/")
	fd := int(root.Fd())
	for _, part := range parts[:len(parts)-1] {
		sub, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if fd != int(root.Fd()) {
			unix.Close(fd)
		}
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return false, ""
			}
			return false, "a directory above it was replaced by something else"
		}
		fd = sub
	}
	var st unix.Stat_t
	err := unix.Fstatat(fd, parts[len(parts)-1], &st, unix.AT_SYMLINK_NOFOLLOW)
	if fd != int(root.Fd()) {
		unix.Close(fd)
	}
	if err != nil {
		return false, ""
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return true, ""
	case unix.S_IFLNK:
		return false, "replaced by a symbolic link"
	case unix.S_IFDIR:
		return false, "replaced by a directory"
	default:
		return false, "replaced by a special file"
	}
}

// recordSteps records the steps no record accounts for, in batches, and
// fills in res.
func (w *Workspace) recordSteps(cp *checkpoints, s *Session, act *activeCommand, steps []step, res *CommandResult, unended bool) {
	r := &stepRecorder{w: w, cp: cp, s: s, act: act, res: res, unended: unended,
		strategy: strategyCommand, follow: map[string]step{}}
	if unended {
		r.strategy = strategyUnended
	} else {
		r.bases, r.read = commandBases(s, steps)
		r.lost = w.uncommittedWork(cp, s, act, steps, r.overwrote)
	}
	for lo := 0; lo < len(steps); lo += recordBatch {
		r.batch(lo, steps[lo:min(lo+recordBatch, len(steps))])
	}
	r.finish()
}

// stepRecorder is what recordSteps keeps from one batch to the next.
type stepRecorder struct {
	w        *Workspace
	cp       *checkpoints
	s        *Session
	act      *activeCommand
	res      *CommandResult
	unended  bool
	strategy string // of the records written
	// bases: the session's baselines (see commandBases); none for an
	// unended command.
	bases map[string]string
	// read: the files of bases whose baseline is a read (not the result
	// of a change by a writer unknown).
	read map[string]bool
	// lost: the steps that discard uncommitted work (uncommittedWork);
	// none for an unended command.
	lost map[lostKey]bool
	// follow: the files whose baselines move to the command's result.
	follow map[string]step
	// The changes listed, by their index in steps.
	important, plain []listedChange
	buf              []byte // reused for the contents the steps displaced
}

// listedChange is a change a CommandResult lists, and the index of its
// step in End's steps, which orders the list.
type listedChange struct {
	i  int
	ch CommandChange
}

// commandBases returns the session's baselines of the files the command
// changed from its first checkpoint on, read once: whether the command
// overwrote another writer's change; and which of them are reads.
func commandBases(s *Session, steps []step) (bases map[string]string, read map[string]bool) {
	bases, read = map[string]string{}, map[string]bool{}
	var keys []string
	for _, st := range steps {
		if st.first && st.rec == nil {
			keys = append(keys, st.path)
		}
	}
	for p, b := range s.baselines(keys) {
		bases[p] = b.SHA256
		read[p] = !b.WriterUnknown
	}
	return bases, read
}

// batch records the steps of one batch, lo the index in steps of its
// first. Its order is a guarantee: what the steps displaced is saved to
// history and made durable (save) before the ledger records naming those
// versions are written (record), so that a record never names a version
// a power cut can take.
func (r *stepRecorder) batch(lo int, batch []step) {
	changes, saves := r.describe(batch)
	r.save(batch, changes, saves)
	written := r.record(lo, batch, changes)
	// One fsync covers the batch's records; each is then linked to
	// its history version.
	for _, rc := range written {
		if rr, _ := rc.wait(); rr != nil {
			for _, wn := range rr.Warnings {
				r.res.warn("%s", wn)
			}
		}
	}
}

// describe returns the change each step of batch makes (see change), and
// the indexes of the steps whose displaced content history is to keep:
// those no record accounts for whose content before was checked.
func (r *stepRecorder) describe(batch []step) (changes []CommandChange, saves []int) {
	changes = make([]CommandChange, len(batch))
	for i := range batch {
		st := &batch[i]
		changes[i] = r.change(st)
		if st.rec == nil && st.from != unchecked {
			saves = append(saves, i)
		}
	}
	return changes, saves
}

// change returns the change st makes, as the result lists it: for a step
// a record accounts for, the record that made it; for another, a side not
// checked and whether it overwrote another writer's change (its content
// before is not the session's baseline of the file, or is what another
// writer's record left).
func (r *stepRecorder) change(st *step) CommandChange {
	ch := CommandChange{Path: st.path, Op: "changed", ConcurrentWith: st.concurrent, Note: st.note}
	switch {
	case st.from == "":
		ch.Op = "created"
	case st.to == "":
		ch.Op = "deleted"
	}
	if st.from != unchecked {
		ch.SHA256Before = st.from
	}
	if st.to != unchecked {
		ch.SHA256After = st.to
	}
	if st.rec != nil {
		ch.ChangedBy = st.rec.name
		return ch
	}
	switch {
	case st.from == unchecked:
		ch.Note = joinNote(ch.Note, "its content before was not checked (over the size limit, unreadable or ignored): history does not hold it")
		ch.NotInHistory = true
	case st.to == unchecked && ch.Note == "":
		ch.Note = "its new content is over the size limit or unreadable and was not checked"
	}
	ch.Overwrote = r.overwrote(st)
	ch.Uncommitted = !ch.Overwrote && r.lost[lostKey{st.path, st.from}]
	ch.WriterUnknown = st.unknown
	ch.ReadBefore = st.unknown && st.first && r.read[st.path]
	return ch
}

// overwrote reports whether st, a step no record accounts for, replaced or
// deleted another writer's change: its content before is not the
// session's baseline of the file, or is what another writer's record left.
func (r *stepRecorder) overwrote(st *step) bool {
	if bl, ok := r.bases[st.path]; ok && st.first && st.from != "" && bl != st.from {
		return true
	}
	return st.byOther && st.from != ""
}

// save saves to history what each step of batch that saves names
// displaced, filling in its change, and makes the versions durable before
// it returns: the records naming them are written next.
func (r *stepRecorder) save(batch []step, changes []CommandChange, saves []int) {
	// What each step displaced goes to history, each index line
	// written without an fsync (Lazy), all made durable together
	// before the records naming them are written: a few by
	// SyncIndexes (an fsync of each index file, issued at once, and
	// one of the index directory, not one per new index), which pay
	// for their own bytes; many by one syncfs, which pays for every
	// dirty page of the file system.
	oneByOne := engine.OneByOne(len(saves), int(r.w.histDir.File().Fd()))
	var paths []string
	for _, i := range saves {
		if r.saveOne(&batch[i], &changes[i], true) {
			paths = append(paths, batch[i].path)
		}
	}
	var err error
	if oneByOne {
		err = r.w.hist.SyncIndexes(paths)
	} else if len(paths) > 0 {
		err = engine.SyncFS(int(r.w.histDir.File().Fd()))
	}
	if err != nil {
		// The records below then name versions a power cut may take.
		for _, i := range saves {
			if changes[i].BackupVersion != "" {
				changes[i].Note = joinNote(changes[i].Note, "history's copy of what it displaced was not made durable")
			}
		}
		r.res.warn("flushing history failed: %v", err)
	}
}

// saveOne saves what st displaced to history (lazy: its index line
// without an fsync) and sets ch's BackupVersion to the version; when the
// content is found nowhere (the checkpoint store, git, history) or the
// save fails, ch says history does not hold it, and so does a warning.
// It reports whether it saved a version.
func (r *stepRecorder) saveOne(st *step, ch *CommandChange, lazy bool) bool {
	var data []byte
	if st.from != "" {
		if data, r.buf = r.w.displaced(r.cp, st.path, st.from, st.fromGit, r.buf); data == nil {
			ch.NotInHistory = true
			if st.fromGit != "" {
				ch.Note = joinNote(ch.Note, fmt.Sprintf("git held the content it displaced (blob %s) and no longer does (pruned, or the repository changed): history does not hold it", shortSum(st.fromGit)))
				r.res.warn("%s: the content %s it displaced was in git's blob %s, which git no longer holds; it is not in history", st.path, shortSum(st.from), shortSum(st.fromGit))
				return false
			}
			ch.Note = joinNote(ch.Note, "no checkpoint saw the content it displaced (another writer's, replaced before the command ended): history does not hold it")
			r.res.warn("%s: the content %s it displaced was never checkpointed and is not in history", st.path, shortSum(st.from))
			return false
		}
	}
	v, err := r.w.hist.Save(st.path, data, st.from == "", st.from, history.Meta{Op: r.act.Tool, Session: r.s.name, Lazy: lazy})
	if err != nil {
		ch.NotInHistory = true
		r.res.warn("%s: saving what the command displaced to history failed: %v", st.path, err)
		return false
	}
	ch.BackupVersion = v.ID
	return true
}

// record writes the ledger record of each step of batch no record accounts
// for, without waiting for its fsync, and returns them; lo is the index in
// steps of batch's first. It also moves follow along (for an ended
// command, a file's baseline follows its last step if this End recorded
// it) and counts and lists each change.
func (r *stepRecorder) record(lo int, batch []step, changes []CommandChange) []*recorded {
	var written []*recorded
	for i := range batch {
		st, ch := &batch[i], &changes[i]
		if st.rec == nil {
			written = append(written, r.write(st, ch))
		}
		if !r.unended {
			if st.rec == nil && st.last {
				r.follow[st.path] = *st
			} else {
				delete(r.follow, st.path)
			}
		}
		r.res.count(ch, st.rec == nil)
		r.list(lo+i, ch)
	}
	return written
}

// write writes the ledger record of st, whose change is ch (its sides,
// its history version), as the command's tool in its session, and returns
// it without waiting for its fsync.
func (r *stepRecorder) write(st *step, ch *CommandChange) *recorded {
	act := r.act
	args := commandArgs{Command: act.Command, ID: act.ID, Started: time.Unix(0, act.Before.StartNS).UTC(),
		From: time.Unix(0, st.between[0]).UTC(), To: time.Unix(0, st.between[1]).UTC(),
		ConcurrentWith: st.concurrent, Unended: r.unended, Overwrote: ch.Overwrote, WriterUnknown: st.unknown}
	switch {
	case st.from == unchecked:
		args.Unchecked = "before"
	case st.to == unchecked:
		args.Unchecked = "after"
	}
	a := newAttempt(r.s, act.Tool, st.path, nil, nil)
	a.rec.Args, _ = json.Marshal(&args)
	a.rec.Observed = &ledger.FileState{Exists: st.from != "", SHA256: ch.SHA256Before, Size: st.fromSize}
	a.rec.SHA256Before = ch.SHA256Before
	res := &Result{Path: st.path, SHA256: ch.SHA256After, SizeBytes: st.toSize, Created: st.from == "", Deleted: st.to == "",
		BackupVersion: ch.BackupVersion, Strategy: r.strategy}
	return r.w.record(a, res, nil)
}

// list keeps ch, the change of steps[i], for the result's list while there
// is room: the overwrites and odd changes in one list, the others in
// another, so that the odd ones are not crowded out.
func (r *stepRecorder) list(i int, ch *CommandChange) {
	if ch.Overwrote || ch.Uncommitted || ch.Note != "" || len(ch.ConcurrentWith) > 0 || ch.NotInHistory {
		if len(r.important) < maxListedChanges {
			r.important = append(r.important, listedChange{i, *ch})
		}
	} else if len(r.plain) < maxListedChanges {
		r.plain = append(r.plain, listedChange{i, *ch})
	}
}

// finish fills in res's list (the odd changes first, then the others as
// room allows, in step order) and count of changes left out of it, and
// moves the session's baselines to the command's results.
func (r *stepRecorder) finish() {
	res := r.res
	all := append(r.important, r.plain[:min(len(r.plain), maxListedChanges-len(r.important))]...)
	slices.SortFunc(all, func(x, y listedChange) int { return cmp.Compare(x.i, y.i) })
	for _, l := range all {
		res.Changes = append(res.Changes, l.ch)
	}
	res.Unlisted = res.Totals.Created + res.Totals.Changed + res.Totals.Deleted - len(all)
	if len(r.follow) > 0 {
		r.w.followBaselines(r.s, r.follow, res)
	}
}

func (res *CommandResult) count(ch *CommandChange, recorded bool) {
	t := &res.Totals
	switch ch.Op {
	case "created":
		t.Created++
	case "deleted":
		t.Deleted++
	default:
		t.Changed++
	}
	if recorded {
		t.Recorded++
	} else {
		t.ChangedBy++
	}
	if len(ch.ConcurrentWith) > 0 {
		t.Concurrent++
	}
	if ch.Overwrote {
		t.Overwrote++
	}
	if ch.Uncommitted {
		t.Uncommitted++
	}
	if ch.NotInHistory {
		t.NotInHistory++
	}
	if ch.WriterUnknown {
		t.WriterUnknown++
	}
}

// displaced returns the content whose SHA-256 is sum, from the checkpoint
// store, git's objects (blob, if a checkpoint found it there) or else p's
// history, checked against sum; nil if none has it.
func (w *Workspace) displaced(cp *checkpoints, p, sum, blob string, buf []byte) ([]byte, []byte) {
	if !validSHA256(sum) {
		return nil, buf
	}
	// The command could reach the store: an object is read only up to
	// the size a checkpoint stores.
	if data, err := readBounded(cp.objects, sum, buf, w.opts.MaxFileSize); err == nil {
		if sha256Hex(data) == sum {
			return data, data
		}
		buf = data
	}
	if blob != "" {
		var data []byte
		if data, buf = cp.git(w).read(blob, sum, buf, w.opts.MaxFileSize); data != nil {
			return data, buf
		}
	}
	if data, err := w.hist.LoadObject(p, sum); err == nil {
		return data, buf
	}
	return nil, buf
}

// followBaselines moves s's baselines to the command's results, in one
// update: at most maxNewBaselines files s had none for get one. A result
// by a writer unknown is marked so (baseline.WriterUnknown: it is not a
// read: a change of the file needs a read first), but still tells a
// later command that overwrites someone's change made after it.
func (w *Workspace) followBaselines(s *Session, follow map[string]step, res *CommandResult) {
	now, added, skipped := time.Now(), 0, 0
	err := s.update(func(e baselineEditor) error {
		for _, p := range slices.Sorted(func(yield func(string) bool) {
			for p := range follow {
				if !yield(p) {
					return
				}
			}
		}) {
			st := follow[p]
			if st.to == "" || st.to == unchecked {
				if err := e.drop(p); err != nil {
					return err
				}
				continue
			}
			_, had := e.get(p)
			switch {
			case had || added < maxNewBaselines:
				if !had {
					added++
				}
				if err := e.set(p, baseline{Path: p, SHA256: st.to, Size: st.toSize, FullRead: true, CapturedAt: now, WriterUnknown: st.unknown}); err != nil {
					return err
				}
			case !st.unknown: // a change by a writer unknown is no read anyway
				skipped++
			}
		}
		return nil
	})
	if err != nil {
		res.warn("the session could not record the command's files as read (%v): read them before changing them again", err)
	} else if skipped > 0 {
		res.warn("%d files the command created or changed are not recorded as read by the session (at most %d are): read them before changing them", skipped, maxNewBaselines)
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func shortSum(s string) string { return s[:min(12, len(s))] }

func mergeNotChecked(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
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

// validSHA256 reports whether s is a SHA-256 as sha256Hex writes it: 64
// lowercase hexadecimal digits.
func validSHA256(s string) bool { return len(s) == 64 && lowerHex(s) }

// lowerHex reports whether s holds only 0-9 and a-f.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isLowerHex[s[i]] {
			return false
		}
	}
	return true
}

var isLowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()
