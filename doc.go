// Package editguard gives AI coding agents file tools that cannot lose
// anyone's work.
//
// # Guarantees
//
//  1. No lost update: a Write, Edit or Restore of an existing file commits
//     only if the file's bytes are exactly those the session last read (or
//     the Precondition states), decided by SHA-256 under a lock, right
//     before the commit.
//  2. No false conflict: a touch, or a rewrite with identical bytes, is not
//     a conflict; mtime and size never prove a file unchanged.
//  3. No torn file: the new content goes to a temporary file that is
//     fsynced and swapped in atomically; a reader or a crash sees the old
//     content or the new.
//  4. Nothing unrecoverable: every content a change displaces (including
//     "did not exist") is saved durably in history first, and so are bytes
//     another program wrote into a file while editguard replaced it.
//  5. Everything accounted for: every attempt, accepted or refused, is
//     appended to a hash-chained ledger.
//
// # Concurrency
//
// A Workspace and its Sessions are safe for concurrent use. A change of a
// file holds the file's lock (a striped lock file in .editguard/locks) from
// before it observes the file to its ledger record, so the changes of one
// file are ordered across goroutines and processes; and, only around the
// swap, an flock on the file's directory, which every editguard process
// shares whichever root it opened (a workspace nested in another, or
// reached through another path), so the check that the name still holds
// the observed file and the swap are one step (see internal/engine/locks.go). Readers
// take no lock. A program that writes without editguard is detected when it
// wrote before the swap (on Linux, the displaced bytes are re-hashed after a
// renameat2 exchange, and the swap undone if they differ).
//
// # Trust
//
// Repository content is untrusted, including any .editguard directory it
// ships: editguard reaches its state without following symlinks, refuses
// (UNSAFE_STATE) entries it did not make, and acts only on state
// authenticated with a per-user key kept outside every workspace (a state
// directory without its owner stamp is refused whole; see trust.go).
// Paths are resolved inside the root; symlinks that leave it are refused,
// and nothing outside the root is ever changed. See SECURITY.md.
//
// # Platforms
//
// editguard runs on Linux and other Unix systems. Linux gets the
// exchange-and-verify commit; elsewhere the swap is a rename(2).
package editguard
