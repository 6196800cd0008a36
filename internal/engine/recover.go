package engine

import (
	"errors"
	"fmt"
)

// Recovery at Open. A process killed, or a power cut, in the middle of a
// change leaves state behind; Open finishes what it can before the
// workspace serves any call. Its steps are numbered as docs/ARCHITECTURE.md
// §5 names them: steps 1-4 are the root package's (Workspace.openState:
// the state directory, its trust, its files, and the ledger, which cuts a
// torn final line); then Recover runs the rest, in this order:
//
//  5. History catch-up (CatchUp, histsync.go): versions a power cut took
//     from history, whose sealed intents carry their bytes or name their
//     object, are saved again, so that every outcome recorded below names
//     a version that exists.
//  6. Intents without an outcome (resolveIntents): each sealed one whose
//     writer is gone gets its outcome, judged from the file
//     (resolveIntent, resolve.go).
//  7. Transactions a crash interrupted (recoverTransactions): each sealed
//     journal whose files a change may reach is rolled forward if any of
//     its records was written, else back (recoverTx, txrecover.go).
//
// What recovery acts on it checks first: an intent only if its seal
// verifies, a journal only if its MAC does, both under the workspace's key,
// so state shipped in a repository is never acted upon. Each step takes
// the same locks as a change, and a change recovery makes goes to history
// and the ledger like any other. What it cannot or will not do is reported
// (Note) and left for the next Open or for a person.
//
// Two sweeps run outside Open: a leftover temporary file of a crashed
// commit is saved and removed by the next commit of that file (sweepTemp),
// and displaced files parked during a commit are removed in the background
// and at Close (SweepParked).

// Opener opens the files recovery acts on as the workspace opens a
// change's file, so that recovery reaches no file a change could not.
type Opener interface {
	// OpenTarget resolves p inside the root and opens its parent.
	OpenTarget(p string) (*Target, error)
	// Changeable returns an error if policy protects t from changes.
	Changeable(t *Target) error
}

// NoteKind says what a recovery Note is.
type NoteKind int

const (
	// Foreign is an intent whose seal does not verify: recovery left its
	// file alone.
	Foreign NoteKind = iota
	// Unsafe is a journal recovery will not act on (not MACed by this
	// workspace, damaged, naming a path a change may not reach, or a
	// file changed since the crash), kept for a person.
	Unsafe
	// Retry is a transaction whose recovery failed with Err; its journal
	// is kept for the next Open.
	Retry
)

// A Note is one thing recovery reports. Subject is the ledger record's
// sequence number (Foreign), the journal's entry in the state directory
// (Unsafe), or the transaction's id (Retry); Why says what was found.
type Note struct {
	Kind    NoteKind
	Subject string
	Why     string
	Err     error
}

// Recovered is what Recover did and found.
type Recovered struct {
	RolledBack []string // the transactions rolled back, by id
	Notes      []Note
}

// Recover runs recovery's steps 5-7 above, opening files through o. Its
// error is the failure to list the journals; what one intent or one
// journal could not do is a Note.
func (e *Engine) Recover(o Opener, op string) (Recovered, error) {
	var r Recovered
	e.CatchUp(true)
	e.resolveIntents(o, &r)
	err := e.recoverTransactions(o, op, &r)
	return r, err
}

// resolveIntents appends an outcome for each intent near the end of the
// ledger that has none and whose writer is gone. It is best effort: an
// intent it cannot resolve now stays in the ledger, still naming the
// change, for the next Open.
func (e *Engine) resolveIntents(o Opener, r *Recovered) {
	open, err := e.cfg.Led.Unresolved(0)
	if err != nil {
		return
	}
	for _, in := range open {
		if !e.sealed(in) {
			r.Notes = append(r.Notes, Note{Kind: Foreign, Subject: fmt.Sprint(in.Seq),
				Why: fmt.Sprintf("ledger record %d is an intent that editguard did not write (its seal does not verify): recovery left %s alone", in.Seq, in.Path)})
			continue
		}
		t, err := o.OpenTarget(in.Path)
		if err != nil {
			continue
		}
		e.resolveIntent(in, t)
		t.Close()
	}
}

// recoverTransactions finishes the transactions whose journals a crash
// left in the state directory's JournalDir, under the locks of their
// files, rolling each forward or back (recoverTx), and removes their
// journals; a rollback's changes are recorded under op. A journal it
// cannot act on safely is kept and noted.
func (e *Engine) recoverTransactions(o Opener, op string, r *Recovered) error {
	found, err := e.journals()
	if err != nil {
		return err
	}
	for _, f := range found {
		entry := JournalDir + "/" + f.Name
		if f.Journal == nil {
			r.Notes = append(r.Notes, Note{Kind: Unsafe, Subject: entry, Why: f.Unsafe})
			continue
		}
		rolled, err := e.recoverOne(o, f.Name, f.Journal, op)
		var ue *unsafeJournalError
		switch {
		case errors.As(err, &ue):
			r.Notes = append(r.Notes, Note{Kind: Unsafe, Subject: entry, Why: ue.Why})
		case err != nil:
			r.Notes = append(r.Notes, Note{Kind: Retry, Subject: f.Journal.ID, Err: err})
		case rolled:
			r.RolledBack = append(r.RolledBack, f.Journal.ID)
		}
	}
	return nil
}

// recoverOne finishes the transaction of the journal name (recoverTx) once
// its files are open as a change would open them. rolled reports a
// rollback.
func (e *Engine) recoverOne(o Opener, name string, j *Journal, op string) (rolled bool, err error) {
	files, err := journalTargets(o, j)
	defer func() {
		for _, t := range files {
			t.Close()
		}
	}()
	if err != nil {
		return false, err
	}
	return e.recoverTx(name, j, files, op)
}

// journalTargets opens the files the journal j names, in its order, and
// refuses (unsafeJournalError) one a change may not reach. It returns the
// files opened so far even with an error, for the caller to close.
func journalTargets(o Opener, j *Journal) ([]*Target, error) {
	var files []*Target
	unsafe := func(format string, args ...any) error {
		return &unsafeJournalError{Why: fmt.Sprintf(format, args...)}
	}
	for _, jf := range j.Files {
		// The same resolution and policy as a tool's change: inside the
		// root, through no symlink, never a protected path.
		t, err := o.OpenTarget(jf.Path)
		if err != nil {
			return files, unsafe("names %q, which a change may not reach (%v)", jf.Path, err)
		}
		files = append(files, t)
		if t.Resolved != jf.Path {
			return files, unsafe("names %q, which now leads through a symbolic link", jf.Path)
		}
		if err := o.Changeable(t); err != nil {
			return files, unsafe("names %q, which policy protects from changes", jf.Path)
		}
	}
	return files, nil
}
