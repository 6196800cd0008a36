// Package remote shares a workspace's guarded changes through a git
// remote: Publish lands the files the ledger says were changed and not yet
// published on a remote branch as one commit, and Pull brings the changes
// made upstream into the working tree through guarded writes. Both run
// the git program; the model they follow is docs/DISTRIBUTED.md.
//
// Both run for a session of the root package: what they change and
// record is that session's, through the same locks, checks and ledger as
// every other change. What they need of the workspace beyond its public
// API (the sync state in .editguard, a snapshot of several files under
// their locks, a change recorded under the tool name "pull") the root
// package provides through internal/hostlink; host.go lists it.
package remote
