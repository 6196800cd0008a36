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
	"strings"
	"time"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/safeopen"
)

var verifyCmd = &command{
	name:    "verify",
	args:    "[--since SEQ|last] [--json]",
	summary: "check the ledger's hash chain and what recovery left in the state directory",
	help: `Verify checks that no ledger record was edited, deleted, reordered or
inserted: every record's hash must cover its content and the previous
record's hash. It also checks the ledger against its head anchor, which
names the last record committed, so records cut from the end are found,
and every history version against the record that saved it and against
its object's hash. It names the first bad sequence number and the reason:
a broken chain, records missing after the last one, or a torn final line
(an append that never completed).

It also checks the state directory (.editguard) for what "editguard
state" reports: every UNSAFE_STATE item (a state directory editguard did
not write for this user on this machine, an entry of the wrong type, a
transaction journal that is damaged or not this workspace's, a file a
transaction left holding neither its old nor its new content), and every
patch transaction left unfinished (its journal in .editguard/tx is still
there: its process died, or is running it right now), with what each of
its files holds now, so a half-applied patch is named.

It exits 0 when all of this is sound and says what it checked, and 1
when anything is not, after listing every finding.

Verify only reads the workspace: it repairs nothing, creates nothing and
takes no lock there, so what it reports stays there to be looked at. The
next command that opens the workspace rolls an unfinished transaction
forward or back (unless it is unsafe) and repairs a torn final line,
after saving it to .editguard/quarantine/.

A full verify reads every record, and every history version: about 13 s
for 200,000 records. When it finds the chain intact it remembers its
last record (seq and hash) in the user's cache directory, outside the
workspace. "verify --since last" then reads that record again and checks
that it still has the same content and hash, and checks the records
after it and the history versions they saved as a full verify does. It
does not read the records before the remembered one or the versions they
saved: it finds a rewrite of the chain that reaches the remembered
record (its hash covers every earlier hash), but not an earlier record
edited, removed or damaged in place, nor a damaged older history
version. --since SEQ checks records SEQ onwards and the versions they
saved, and nothing before SEQ at all. Only a full verify checks the
whole ledger. The state directory is checked in full either way.

With --json it prints {records, first, last} when all is sound (first:
the first record checked, last: the last one), and the error object
when not: for the ledger with seq, line and reason, for the state
directory UNSAFE_STATE with details unsafe and unfinished (each
transaction's tx, op, session, journal and files with their state:
before, after or neither).`,
}

func runVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(verifyCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
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
	if err := checkRoot(e.root); err != nil {
		return err
	}
	done := e.progress("verifying the ledger")
	check, err := editguard.CheckStateDir(e.root)
	if err != nil {
		done()
		return err
	}
	n, last, err := editguard.VerifyDirFrom(e.root, from)
	done()
	stateErr := reportState(e, check, err)
	var ve *editguard.LedgerVerifyError
	if errors.As(err, &ve) {
		msg := fmt.Sprintf("ledger verification failed at seq %d (line %d): %s", ve.Seq, ve.Line, ve.Reason)
		if from.Seq > 0 {
			msg = fmt.Sprintf("ledger verification from record %d failed at seq %d: %s", from.Seq+1, ve.Seq, ve.Reason)
			if from.Hash != "" && ve.Seq == from.Seq {
				msg += " (the ledger up to the last full verify's last record changed since, or the workspace was made again: run a full editguard verify)"
			}
		}
		ledgerErr := &editguard.Error{Code: editguard.CodeIO, Message: msg,
			Details: map[string]any{"seq": ve.Seq, "line": ve.Line, "reason": ve.Reason}, Err: err}
		if stateErr != nil {
			ledgerErr.Details["unsafe"], ledgerErr.Details["unfinished"] = stateErr.Details["unsafe"], stateErr.Details["unfinished"]
		}
		return ledgerErr
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
	if !e.json {
		switch {
		case from.Seq == 0:
			fmt.Fprintf(e.stdout, "ledger ok: %d records, hash chain intact up to the head anchor, every history version as its record says\n", n)
		case from.Hash != "":
			fmt.Fprintf(e.stdout, "ledger ok: record %d has the content and hash the last full verify found, and the %d records after it chain from it, with their history versions as they say; records 1 to %d were not read (a full verify checks them)\n", from.Seq, n, from.Seq-1)
		default:
			fmt.Fprintf(e.stdout, "ledger ok: records %d to %d, hash chain intact, their history versions as they say; records before %d not checked at all\n", from.Seq+1, last.Seq, from.Seq+1)
		}
	}
	if stateErr != nil {
		stateErr.Details["records"] = n
		return stateErr
	}
	if e.json {
		return e.printJSON(map[string]any{"records": n, "first": from.Seq + 1, "last": last.Seq})
	}
	fmt.Fprintln(e.stdout, "state ok: no transaction left unfinished and nothing unsafe in .editguard")
	return nil
}

// reportState prints what CheckStateDir found (as text; --json leaves it
// to the error) and returns it as an UNSAFE_STATE error, or nil when it
// found nothing. ledgerErr is the ledger's verification, which already
// says it when the whole state directory is not editguard's.
func reportState(e *env, check *editguard.StateCheck, ledgerErr error) *editguard.Error {
	var ge *editguard.Error
	foreign := errors.As(ledgerErr, &ge) && ge.Code == editguard.CodeUnsafeState
	var unsafe []editguard.RecoveryNote
	for _, u := range check.Unsafe {
		if !(foreign && u.Subject == editguard.StateDir) {
			unsafe = append(unsafe, u)
		}
	}
	if len(unsafe) == 0 && len(check.Unfinished) == 0 {
		return nil
	}
	if !e.json {
		for _, u := range unsafe {
			fmt.Fprintf(e.stdout, "UNSAFE_STATE: %s\n", escapeText(u.Message))
		}
		for _, t := range check.Unfinished {
			var files []string
			for _, f := range t.Files {
				files = append(files, quoteName(f.Path)+" "+map[string]string{
					"before":  "as the transaction found it",
					"after":   "as the transaction leaves it",
					"neither": "holding neither",
				}[f.State])
			}
			half := ""
			if t.HalfApplied() {
				half = "half applied: "
			}
			fmt.Fprintf(e.stdout, "unfinished: transaction %s (%s, session %s) did not finish, its journal %s is still there (its process died, or is running it now); %s%s\n",
				quoteName(t.ID), quoteName(t.Op), quoteName(t.Session), quoteName(t.Journal), half, strings.Join(files, ", "))
		}
	}
	return &editguard.Error{
		Code:         editguard.CodeUnsafeState,
		Message:      "the state directory holds " + stateCounts(len(unsafe), len(check.Unfinished)),
		Details:      map[string]any{"unsafe": unsafe, "unfinished": check.Unfinished},
		RecoveryHint: "run editguard state, which opens the workspace and so finishes what recovery can; look at what stays unsafe, then remove it",
	}
}

// stateCounts says how many unsafe items and unfinished transactions
// there are, naming only those there are.
func stateCounts(unsafe, unfinished int) string {
	var parts []string
	if unsafe > 0 {
		parts = append(parts, plural(unsafe, "unsafe item"))
	}
	if unfinished > 0 {
		parts = append(parts, plural(unfinished, "unfinished transaction"))
	}
	return strings.Join(parts, " and ")
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
