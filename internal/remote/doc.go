// Package remote shares a workspace's guarded changes through a git
// remote: Publish lands the files the ledger says were changed and not yet
// published on a remote branch as one commit, and Pull brings the changes
// made upstream into the working tree through guarded writes. Both run
// the git program; the model they follow is docs/DISTRIBUTED.md.
//
// The root package's Session.Publish and Session.Pull call them for a
// session: what they change and record is that session's, through the same
// locks, checks and ledger as every other change. What they need of the
// session and its workspace (the sync state in .editguard, the ledger, a
// snapshot of several files under their locks, a change recorded under the
// tool name "pull") the root package passes in as a Host (host.go); this
// package does not import the root package.
package remote
