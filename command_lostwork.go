//go:build unix

package editguard

import (
	"github.com/editguard/editguard/internal/gitobj"
)

// Uncommitted work a command discards.
//
// A command that replaces or deletes a file the session read, after
// someone else changed it, overwrote their change (CommandChange.Overwrote).
// A command can as well discard work the session never saw: git checkout
// -- f, git stash, git reset --hard, rm, a generator writing over a file,
// each over a person's uncommitted change. End marks such a change
// Uncommitted when all of these hold:
//
//   - the change is this command's (no record accounts for it) and
//     displaced a content a checkpoint read (not a file it created, not
//     one over the size limit);
//   - it is not an overwrite: that is told already;
//   - no record of the session wrote that content to the file (its own
//     writes, and the changes of its earlier commands, are its own to
//     discard), nor did an earlier step of this same command;
//   - git's HEAD does not hold it: the blob HEAD's tree lists at the path,
//     when the command began or when it ended, is not that content (HEAD
//     at the beginning keeps a git checkout of another branch or a git
//     reset --hard HEAD~1 from counting the committed contents they
//     replace; HEAD at the end keeps a git commit followed by a discard
//     from counting what was just committed). A file HEAD does not list
//     (untracked, or only staged) is not committed either: deleted or
//     replaced, its content is lost work unless the session wrote it,
//     which is the one copy git would never have had. Content that only
//     git's index holds (staged, not committed) counts as uncommitted,
//     since git reset --hard and git stash discard it from the index too.
//
// Only a repository the checkpoints' git view reads (a .git directory at
// the root, SHA-1, refs in files or packed-refs) is judged; without one
// (no repository, the root below a repository's top, a linked worktree, a
// reftable repository), no change is marked: there is no HEAD to tell
// committed work from uncommitted. An unborn branch (no commit yet) has
// an empty HEAD: every content is uncommitted. An unended command's
// changes are not judged: nobody is told its result.
//
// The content is in history either way (BackupVersion): the result names
// the version, and the faces tell the model how to restore it.

// lostKey names a step's displaced content: its path and SHA-256.
type lostKey struct{ path, sum string }

// headCommit returns the commit git's HEAD names now, in hexadecimal; ""
// for none (no repository the git view reads, an unborn branch, an error).
func (w *Workspace) headCommit(cp *checkpoints) string {
	g := cp.git(w)
	if g.repo == nil {
		return ""
	}
	id, ok, err := g.repo.Head()
	if err != nil || !ok {
		return ""
	}
	return id.String()
}

// headTrees returns the trees of the commits HEAD named when act's command
// began and names now, and false when HEAD does not read (nothing is then
// judged). An unborn branch gives no tree, and true.
func (w *Workspace) headTrees(cp *checkpoints, act *activeCommand) ([]gitobj.ID, bool) {
	g := cp.git(w)
	if g.repo == nil {
		return nil, false
	}
	now, born, err := g.repo.Head()
	if err != nil {
		return nil, false
	}
	var commits []gitobj.ID
	if born {
		commits = append(commits, now)
	}
	if id, ok := gitobj.ParseID(act.Head); ok && id != now {
		commits = append(commits, id)
	}
	var trees []gitobj.ID
	for _, c := range commits {
		tree, err := g.repo.CommitTree(c)
		if err != nil {
			continue // a commit git pruned meanwhile: the other still counts
		}
		trees = append(trees, tree)
	}
	if len(trees) == 0 && born {
		return nil, false // HEAD names a commit that does not read
	}
	return trees, true
}

// uncommittedWork returns the steps of steps (by path and displaced
// content) that discard uncommitted work nobody in s wrote, as the
// section comment defines it; overwrote tells the steps that overwrote
// another writer's change.
func (w *Workspace) uncommittedWork(cp *checkpoints, s *Session, act *activeCommand, steps []step, overwrote func(*step) bool) map[lostKey]bool {
	own := map[lostKey]bool{} // contents earlier steps of this command left
	var cands []*step
	for i := range steps {
		st := &steps[i]
		if st.rec != nil {
			continue
		}
		if st.to != "" && st.to != unchecked {
			own[lostKey{st.path, st.to}] = true
		}
		if st.from != "" && st.from != unchecked && !overwrote(st) {
			cands = append(cands, st)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	trees, ok := w.headTrees(cp, act)
	if !ok {
		return nil
	}
	g := cp.git(w)
	lookup := g.repo.Trees()
	lost := map[lostKey]bool{}
	var buf []byte
	for _, st := range cands {
		k := lostKey{st.path, st.from}
		if own[k] {
			continue
		}
		var blobs []gitobj.ID
		for _, tree := range trees {
			e, found, err := lookup.Lookup(tree, st.path)
			if err != nil {
				return nil // a tree that does not read: nothing is judged
			}
			if found && e.IsFile() {
				blobs = append(blobs, e.ID)
			}
		}
		if len(blobs) > 0 {
			id, ok := gitobj.ParseID(st.fromGit)
			if !ok {
				// Not the index's blob: its blob id is the content's.
				var data []byte
				if data, buf = w.displaced(cp, st.path, st.from, "", buf); data == nil {
					continue // not in history either, which the result says
				}
				id = gitobj.BlobID(data)
			}
			if containsID(blobs, id) {
				continue // committed
			}
		}
		lost[k] = true
	}
	if len(lost) > 0 {
		w.dropOwnWrites(s, lost)
	}
	return lost
}

func containsID(ids []gitobj.ID, id gitobj.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// dropOwnWrites removes from lost the contents a record of s wrote to
// their file: the session's own work, its to discard. A ledger that does
// not read leaves lost as it is.
func (w *Workspace) dropOwnWrites(s *Session, lost map[lostKey]bool) {
	w.Log(LogFilter{Session: s.name}, func(r *LedgerRecord) error {
		if r.Outcome == "ok" && r.SHA256After != "" {
			delete(lost, lostKey{r.Path, r.SHA256After})
		}
		return nil
	})
}

// UncommittedWork returns the listed changes that discarded uncommitted
// work nobody in the session wrote (Totals.Uncommitted counts them all).
func (r *CommandResult) UncommittedWork() []CommandChange {
	var out []CommandChange
	for _, c := range r.Changes {
		if c.Uncommitted {
			out = append(out, c)
		}
	}
	return out
}
