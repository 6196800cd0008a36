package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/safeopen"
)

var verifyCmd = &command{
	name:    "verify",
	args:    "[--since SEQ|last] [--json]",
	summary: "check the ledger's hash chain",
	help: `Verify checks that no ledger record was edited, deleted, reordered or
inserted: every record's hash must cover its content and the previous
record's hash. It also checks the ledger against its head anchor, which
names the last record committed, so records cut from the end are found. It
prints the number of records and exits 0, or names the first bad sequence
number and the reason and exits 1: a broken chain, records missing after
the last one, or a torn final line (an append that never completed).

Verify only reads the workspace: it repairs nothing and creates nothing
there, so what it reports stays there to be looked at. The next write repairs a torn final
line, after saving it to .editguard/quarantine/.

A full verify reads every record, and every history version against the
record that saved it: about 13 s for 200,000 records. When it finds the
chain intact it remembers its last record (seq and hash) in the user's
cache directory, outside the workspace, and "verify --since last" then
checks only what came after: the remembered record must still have its
hash, which, since every record's hash covers the one before it, proves
every record up to it unchanged, and the records and history versions
after it are checked as a full verify checks them. --since SEQ checks
records SEQ onwards and the versions they saved, and nothing before SEQ
at all. A full verify stays the only check of the whole ledger.

With --json it prints {records, first, last} when the chain is intact
(first: the first record checked, last: the last one), and the error
object (with seq, line and reason) when it is not.`,
}

func runVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(verifyCmd.name)
	fs.BoolVar(&e.json, "json", false, "print the result as JSON")
	since := fs.String("since", "", "check from record `SEQ` on, or from the last full verify's last record (last)")
	pos, err := parseCommand(e, verifyCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(verifyCmd.name, "verify takes no arguments, got %q", pos)
	}
	var from editguard.LedgerMark
	switch *since {
	case "":
	case "last":
		if from, err = readVerifiedMark(e.root); err != nil {
			return err
		}
	default:
		seq, err := strconv.ParseUint(*since, 10, 64)
		if err != nil || seq == 0 {
			return usagef(verifyCmd.name, "--since takes a record's seq (1 or more) or last, not %q", *since)
		}
		from.Seq = seq - 1
	}
	done := e.progress("verifying the ledger")
	n, last, err := editguard.VerifyDirFrom(e.root, from)
	done()
	var ve *editguard.LedgerVerifyError
	if errors.As(err, &ve) {
		msg := fmt.Sprintf("ledger verification failed at seq %d (line %d): %s", ve.Seq, ve.Line, ve.Reason)
		if from.Seq > 0 {
			msg = fmt.Sprintf("ledger verification from record %d failed at seq %d: %s", from.Seq+1, ve.Seq, ve.Reason)
			if from.Hash != "" && ve.Seq == from.Seq {
				msg += " (the ledger up to the last full verify's last record changed since, or the workspace was made again: run a full editguard verify)"
			}
		}
		return &editguard.Error{Code: editguard.CodeIO, Message: msg,
			Details: map[string]any{"seq": ve.Seq, "line": ve.Line, "reason": ve.Reason}, Err: err}
	}
	if err != nil {
		return err
	}
	if *since == "" || *since == "last" {
		// The prefix up to last is proven: a full verify, or one from a
		// mark that a full verify left.
		if err := writeVerifiedMark(e.root, last); err != nil {
			fmt.Fprintf(e.stderr, "editguard: could not remember the last record checked (%v): verify --since last will need a full verify first\n", err)
		}
	}
	if e.json {
		return e.printJSON(map[string]any{"records": n, "first": from.Seq + 1, "last": last.Seq})
	}
	switch {
	case from.Seq == 0:
		fmt.Fprintf(e.stdout, "ledger ok: %d records, hash chain intact\n", n)
	case from.Hash != "":
		fmt.Fprintf(e.stdout, "ledger ok: record %d unchanged since the last full verify, and %d records after it, hash chain intact\n", from.Seq, n)
	default:
		fmt.Fprintf(e.stdout, "ledger ok: records %d to %d, hash chain intact (records before %d not checked)\n", from.Seq+1, last.Seq, from.Seq+1)
	}
	return nil
}

// verifiedMark is what a verify that proved the ledger up to a record
// remembers of it, in the user's cache directory: a workspace's own state
// directory could ship a forged one.
type verifiedMark struct {
	Root string `json:"root"`
	editguard.LedgerMark
	Time string `json:"time"`
}

// verifiedMarkPath is where the mark of the workspace at root is kept:
// CACHE/editguard/verified/HASH.json, HASH naming root's real path.
func verifiedMarkPath(root string) (real, path string, err error) {
	if real, err = filepath.EvalSymlinks(root); err != nil {
		return "", "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256([]byte(real))
	return real, filepath.Join(cache, "editguard", "verified", hex.EncodeToString(sum[:12])+".json"), nil
}

// readVerifiedMark returns the mark a verify left for root.
func readVerifiedMark(root string) (editguard.LedgerMark, error) {
	real, path, err := verifiedMarkPath(root)
	if err != nil {
		return editguard.LedgerMark{}, err
	}
	data, err := safeopen.ReadFile(path, 1<<20) // a FIFO there is no mark, and does not block
	var m verifiedMark
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil || m.Root != real || m.Seq == 0 || m.Hash == "" {
		return editguard.LedgerMark{}, &editguard.Error{Code: editguard.CodeNotFound,
			Message:      "no full verify of this workspace is remembered here, so there is nothing to check from",
			Details:      map[string]any{"mark": path},
			RecoveryHint: "run editguard verify (without --since) once; later runs of verify --since last check only what came after it"}
	}
	return m.LedgerMark, nil
}

// writeVerifiedMark remembers last as the end of what is proven of root's
// ledger (nothing, for a ledger with no record), replacing the file by
// rename.
func writeVerifiedMark(root string, last editguard.LedgerMark) error {
	if last.Seq == 0 {
		return nil
	}
	real, path, err := verifiedMarkPath(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(verifiedMark{Root: real, LedgerMark: last, Time: time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mark-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
