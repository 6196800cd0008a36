// Package engine holds the parts of editguard's commit protocol that need
// nothing of a session: how a change reaches its file (OpenTarget,
// Observe), the locks that order changes (file stripes, a
// directory's commit lock), the temporary names of new contents, a large
// file held under a lease, a single file's change from its lock to its
// outcome record (Run: its steps, Step, are numbered in run.go; the
// snapshot and swap in single.go, the swap itself commit, straight-line
// over atomicfile.Staged), a move and a transaction the same way (RunMove
// and RunTx, set.go; a transaction's own steps, commitTx, in tx.go), a
// transaction's journal and its rollback, a change's intent and its
// outcome record in the ledger (writeIntent, WriteOutcome), the files a
// swap takes off their names (parked files), the catch-up of history
// lines saved lazily, when many files share one syncfs, and recovery at
// Open (Recover). What a change may do is the session's decision, which
// Run, RunMove and RunTx ask of a Decider, MoveDecider or TxDecider that
// the root package implements; this package does what every change does
// the same way.
//
// Errors are returned as they happened (to the deciders through their
// Fail, Swapped and Moved); the root package turns them into its *Error in
// one file (errors.go there), telling apart the engine's
// TooLargeError, ChangedError, PathError (History, Sweep or Journal set
// for what a change keeps beside the file), SwapError, ErrReplaced and
// ErrOutsideRoot, and atomicfile's ErrExist, ErrRaced, ErrCrossDevice and
// ErrNotDir; its ioError, which every such mapping ends in, tells apart
// atomicfile's ErrNotWritable and ErrOwner. Recover reports what it would
// not or could not do as Notes.
package engine

import (
	"os"
	"sync"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/groupcommit"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/statedir"
)

// Config is what an Engine works with: the workspace's root and state
// directory, its history and ledger, its keys, and its limits.
type Config struct {
	Root    *os.Root
	RootDir *os.File // the root directory, open
	State   *statedir.Dir
	HistDir *statedir.Dir // .editguard/history
	Hist    *history.Store
	Led     *ledger.Ledger
	// Key is the workspace key, which seals intents (intent.go); TempKey,
	// derived from it, names temporary files (temp.go). No repository
	// can know either.
	Key         []byte
	TempKey     []byte
	MaxFileSize int64
	LockTimeout time.Duration
	// Background counts the background work Close waits for (a sweep of
	// parked files).
	Background *sync.WaitGroup
}

// Engine is the commit machinery of one open workspace.
type Engine struct {
	cfg          Config
	hook         atomicfile.Hook
	fileLocksDir *statedir.Dir
	fileLocks    *statedir.Locks
	parks        *parks
	// dirSyncs shares directory fsyncs between concurrent commits
	// (commit).
	dirSyncs groupcommit.DirSyncs
	// hsync schedules the catch-up of lazily saved versions (histsync.go).
	hsync histSync
	// finals are the background fsyncs of outcome records whose intent is
	// durable, and finalsDue is rung to hurry them (outcome.go).
	finals    Running
	finalsDue alarm
}

// Open opens the directories the engine keeps in the state directory:
// locks/ (the file locks) and displaced/ (parked files).
func Open(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg}
	if err := e.openParks(); err != nil {
		return nil, err
	}
	if err := e.openFileLocks(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close sweeps the parked files that are due and closes what Open
// opened.
func (e *Engine) Close() error {
	var err error
	if e.parks != nil {
		e.SweepParked(false)
		err = e.parks.dir.Close()
	}
	if cerr := e.closeFileLocks(); err == nil {
		err = cerr
	}
	return err
}

// SetHook installs a fault-injection hook on the directory of every later
// target (tests only); nil removes it.
func (e *Engine) SetHook(h atomicfile.Hook) { e.hook = h }

// parkDir is where a swap parks the file it takes off a name.
func (e *Engine) parkDir() *atomicfile.Dir { return e.parks.at }
