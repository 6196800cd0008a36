package engine

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/rawpath"
	"github.com/editguard/editguard/internal/statedir"
	"github.com/editguard/editguard/internal/userkey"
)

// A Journal is the durable record of a transaction in progress, in
// .editguard/tx/<id>.json: each name, what it held (and the history version
// that keeps it) and what the transaction puts there, the position of the
// ledger's end when it was written, and a MAC under the workspace key. It
// exists from just before the first file is replaced until just after the
// transaction's ledger records are durable. A journal found at Open
// belongs to a transaction that did not finish: if its records follow the
// journal's ledger position, every file was in place before the first was
// written, and the transaction is rolled forward (a record still missing
// is appended, marked recovered); if none does, it is rolled back.
// Recovery acts only on a journal whose MAC verifies and whose files are
// each at their before or after state; anything else is kept and reported.
type Journal struct {
	ID         string        `json:"tx"`
	Op         string        `json:"op"` // apply_patch or undo_patch
	Session    string        `json:"session"`
	LedgerSeq  uint64        `json:"ledger_seq"`
	LedgerHash string        `json:"ledger_hash"`
	Files      []JournalFile `json:"files"`
	MAC        string        `json:"mac,omitempty"`
}

// JournalFile is one name of a transaction.
type JournalFile struct {
	Path         string `json:"path"` // resolved
	BeforeExists bool   `json:"before_exists"`
	BeforeSHA256 string `json:"before_sha256,omitempty"`
	Version      string `json:"version"` // history version of the before content
	AfterExists  bool   `json:"after_exists"`
	AfterSHA256  string `json:"after_sha256,omitempty"`
}

// journalFileJSON is JournalFile's stored form: a path that is not UTF-8
// as its readable form and its exact bytes in hex (internal/rawpath), so
// that recovery acts on the name the transaction changed, and the MAC,
// computed over this form, verifies after a read.
type journalFileJSON struct {
	Path         string `json:"path"`
	PathHex      string `json:"path_hex,omitempty"`
	BeforeExists bool   `json:"before_exists"`
	BeforeSHA256 string `json:"before_sha256,omitempty"`
	Version      string `json:"version"`
	AfterExists  bool   `json:"after_exists"`
	AfterSHA256  string `json:"after_sha256,omitempty"`
}

func (f JournalFile) MarshalJSON() ([]byte, error) {
	w := journalFileJSON{BeforeExists: f.BeforeExists, BeforeSHA256: f.BeforeSHA256, Version: f.Version, AfterExists: f.AfterExists, AfterSHA256: f.AfterSHA256}
	w.Path, w.PathHex = rawpath.Split(f.Path)
	return json.Marshal(&w)
}

func (f *JournalFile) UnmarshalJSON(b []byte) error {
	var w journalFileJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	p, err := rawpath.Join(w.Path, w.PathHex)
	if err != nil {
		return err
	}
	*f = JournalFile{Path: p, BeforeExists: w.BeforeExists, BeforeSHA256: w.BeforeSHA256, Version: w.Version, AfterExists: w.AfterExists, AfterSHA256: w.AfterSHA256}
	return nil
}

// JournalDir is the journals' directory in .editguard.
const JournalDir = "tx"

// journalLock is held while a journal is written, so that recovery, which
// takes it too, can tell a temporary file a writer died with from one being
// written.
const journalLock = "journal.lock"

// JournalMAC returns the MAC of j without its MAC field.
func (e *Engine) JournalMAC(j *Journal) string { return journalMAC(e.cfg.Key, j) }

// journalMAC returns the MAC of j without its MAC field under the
// workspace key key.
func journalMAC(key []byte, j *Journal) string {
	c := *j
	c.MAC = ""
	b, _ := json.Marshal(&c)
	return hex.EncodeToString(userkey.Derive(key, "journal", b))
}

// strategy is what the ledger records of j's transaction name as their
// strategy.
func (j *Journal) strategy() string { return "transaction " + j.ID }

// writeJournal writes j durably, with the ledger's end and its MAC.
func (e *Engine) writeJournal(j *Journal) error {
	last, err := e.cfg.Led.Last()
	if err != nil {
		return err
	}
	j.LedgerSeq, j.LedgerHash = last.Seq, last.Hash
	j.MAC = e.JournalMAC(j)
	d, err := e.cfg.State.Sub(JournalDir, true)
	if err != nil {
		return err
	}
	defer d.Close()
	l, err := d.Lock(context.Background(), journalLock, &filelock.Options{Timeout: e.cfg.LockTimeout})
	if err != nil {
		return err
	}
	defer l.Unlock()
	data, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	// WriteFile is durable: the file and the directory entry are fsynced.
	return d.WriteFile(j.ID+".json", data, 0o644)
}

// removeJournal deletes a journal durably: for a transaction whose files
// are all in place and whose records are durable, this ends it.
func (e *Engine) removeJournal(id string) error {
	d, err := e.cfg.State.Sub(JournalDir, false)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(id + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return d.Sync()
}

// journalPresent reports whether the journal name is still in the
// journal directory: a transaction that finishes removes its own.
func (e *Engine) journalPresent(name string) (bool, error) {
	d, err := e.cfg.State.Sub(JournalDir, false)
	if err != nil {
		return false, err
	}
	st, err := d.Stat(name)
	d.Close()
	if err != nil {
		return false, err
	}
	return st.Exists, nil
}

// A FoundJournal is a journal a crash left behind: its file's name, and
// either the journal, authentic, or Unsafe, why it is not acted upon.
type FoundJournal struct {
	Name    string
	Journal *Journal
	Unsafe  string
}

// journals returns the journals in the journal directory, in name order.
// It first removes the temporary files of journals whose writer died
// (under the lock a writer holds): no file was changed yet, since a
// journal is in place before the first one is. A journal that cannot be
// read, does not parse, or whose MAC does not verify is returned with
// Unsafe set: state this workspace did not write is never acted upon.
func (e *Engine) journals() ([]FoundJournal, error) {
	d, err := e.cfg.State.Sub(JournalDir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if l, err := d.Lock(context.Background(), journalLock, &filelock.Options{Timeout: e.cfg.LockTimeout}); err == nil {
		if ents, err := d.ReadDir(); err == nil {
			for _, ent := range ents {
				if atomicfile.IsTemp(ent.Name()) {
					d.Remove(ent.Name())
				}
			}
		}
		l.Unlock()
	}
	ents, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	return readJournals(d, ents, e.cfg.Key), nil
}

// ReadJournals returns the journals in the journal directory d, in name
// order, as journals does, under the workspace key key, reading only: it
// removes no temporary file (one is a journal not yet in place, so no file
// was changed yet) and takes no lock. A journal it returns may belong to a
// transaction still running.
func ReadJournals(d *statedir.Dir, key []byte) ([]FoundJournal, error) {
	ents, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	return readJournals(d, ents, key), nil
}

// readJournals reads the journals among the entries ents of d.
func readJournals(d interface {
	ReadFile(string) ([]byte, error)
}, ents []fs.DirEntry, key []byte) []FoundJournal {
	var out []FoundJournal
	for _, ent := range ents {
		id, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || strings.HasPrefix(id, ".") {
			continue
		}
		out = append(out, readJournal(d, ent.Name(), id, key))
	}
	return out
}

// readJournal reads the journal name, of the transaction id, from d.
func readJournal(d interface {
	ReadFile(string) ([]byte, error)
}, name, id string, key []byte) FoundJournal {
	f := FoundJournal{Name: name}
	data, err := d.ReadFile(name)
	if err != nil {
		f.Unsafe = "cannot be read (" + err.Error() + ")"
		return f
	}
	var j Journal
	switch {
	case json.Unmarshal(data, &j) != nil || j.ID != id:
		// A journal is written whole and durably, under a temporary
		// name first: one that does not parse was damaged after it was
		// written.
		f.Unsafe = "does not parse as a transaction journal (damaged or truncated)"
	case j.MAC == "" || !hmac.Equal([]byte(j.MAC), []byte(journalMAC(key, &j))):
		f.Unsafe = "was not written by editguard in this workspace (its MAC does not verify)"
	default:
		f.Journal = &j
	}
	return f
}
