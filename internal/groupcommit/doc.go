// Package groupcommit lets the commits of one process share their
// fsyncs: the gate (Gate), which lets commits through in batches, and the
// shared directory fsyncs (DirSyncs). It is the part of editguard's commit
// engine that knows nothing of files' contents, history or the ledger.
//
// A change costs fsyncs of three kinds (docs/RELIABILITY.md has the table): its
// new content under the temporary name and its intent in the ledger before
// the swap, and the directory after it. Each fsync is a device flush here,
// and concurrent ones do not merge: a flush is issued per fsync call. The
// temporary file is the change's own, but the ledger and the directory are
// shared, and one fsync of either covers every change written to it before
// the fsync began. So the commits of a process go through a gate before
// their fsyncs: the gate lets them through in batches, and a batch's
// intents share one ledger fsync and its swaps one fsync of each
// directory.
//
// A batch of several commits shares the new contents' flush as well: each
// temporary file was written before its commit arrived, so one syncfs(2)
// of their file system, begun once the batch opens, makes all of them
// durable (Pass.SyncTemp), where each would otherwise pay an fsync of its own.
// A syncfs costs what is dirty on the whole file system, other programs'
// writes included, so a batch shares one only while the machine holds
// little dirty data (maxDirty); a commit that goes through alone keeps
// its own fsync.
//
// The gate waits only when there are commits to wait for. A commit that
// arrives with no other commit in progress, after a batch of one, goes
// through at once: a lone agent never waits. Once commits overlap (another
// commit is in progress when one arrives, or the last batch had several),
// a batch collects arrivals for gateWait and then opens. A batch of one
// ends that: load that falls away costs one wait. A commit in progress
// counts from when it holds its file's lock: one waiting for that lock
// may wait for a commit at the gate.
//
// After the swap, a batch's directory fsync waits for the batch's other
// swaps (at most swapWait): one fsync then covers them all.
//
// The waits are bounded, and a commit waiting at the gate holds its file's
// lock and nothing else. The gate changes when fsyncs start and, for a
// batch's temporary files, which call makes them durable, never their
// order or what is durable before a swap.
//
// Which fsync buys which guarantee, and the order of a commit's steps, are
// in docs/ARCHITECTURE.md.
package groupcommit
