package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/editguard/editguard"
)

var verifyCmd = &command{
	name:    "verify",
	args:    "[--json]",
	summary: "check the ledger's hash chain",
	help: `Verify checks that no ledger record was edited, deleted, reordered or
inserted: every record's hash must cover its content and the previous
record's hash. It also checks the ledger against its head anchor, which
names the last record committed, so records cut from the end are found. It
prints the number of records and exits 0, or names the first bad sequence
number and the reason and exits 1: a broken chain, records missing after
the last one, or a torn final line (an append that never completed).

Verify only reads: it repairs nothing and creates nothing, so what it
reports stays there to be looked at. The next write repairs a torn final
line, after saving it to .editguard/quarantine/.

With --json it prints {records} when the chain is intact, and the error
object (with seq, line and reason) when it is not.`,
}

func runVerify(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(verifyCmd.name)
	fs.BoolVar(&e.json, "json", false, "print the result as JSON")
	pos, err := parseCommand(e, verifyCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(verifyCmd.name, "verify takes no arguments, got %q", pos)
	}
	done := e.progress("verifying the ledger")
	n, err := editguard.VerifyDir(e.root)
	done()
	var ve *editguard.LedgerVerifyError
	if errors.As(err, &ve) {
		return &editguard.Error{Code: editguard.CodeIO,
			Message: fmt.Sprintf("ledger verification failed at seq %d (line %d): %s", ve.Seq, ve.Line, ve.Reason),
			Details: map[string]any{"seq": ve.Seq, "line": ve.Line, "reason": ve.Reason}, Err: err}
	}
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]any{"records": n})
	}
	fmt.Fprintf(e.stdout, "ledger ok: %d records, hash chain intact\n", n)
	return nil
}
