package main

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"os"

	"github.com/editguard/editguard"
)

// mutationFlags are the flags write and edit share.
type mutationFlags struct {
	expectSHA256 string
	dryRun       bool
	yes          bool
}

func (m *mutationFlags) add(fs *flag.FlagSet, e *env) {
	fs.StringVar(&m.expectSHA256, "expect-sha256", "", "commit only if the file's SHA-256 is `H` (instead of the session's last read)")
	fs.BoolVar(&m.dryRun, "dry-run", false, "show the change, write nothing")
	fs.BoolVar(&m.yes, "yes", false, "do not ask for confirmation at a terminal")
	fs.BoolVar(&e.json, "json", false, "print the result as JSON")
}

// askOnTerminal makes s ask the person at the terminal before committing,
// when standard input is a terminal and neither --yes nor --dry-run is set.
func (m *mutationFlags) askOnTerminal(e *env, s *editguard.Session) {
	if in, ok := e.stdin.(*os.File); ok && !m.yes && !m.dryRun && isTerminal(in) {
		s.SetApprover(newPrompter(e, in))
	}
}

// precondition returns the explicit precondition the flags state, or nil to
// let the session's baseline decide.
func (m *mutationFlags) precondition(cmd string, mustNotExist bool) (*editguard.Precondition, error) {
	if m.expectSHA256 == "" && !mustNotExist {
		return nil, nil
	}
	if m.expectSHA256 != "" {
		if b, err := hex.DecodeString(m.expectSHA256); err != nil || len(b) != 32 {
			return nil, usagef(cmd, "--expect-sha256 needs 64 hexadecimal digits, got %q", m.expectSHA256)
		}
	}
	return &editguard.Precondition{ExpectedSHA256: m.expectSHA256, MustNotExist: mustNotExist}, nil
}

// printResult reports a committed or previewed change.
func printResult(e *env, verb string, r *editguard.Result) error {
	if e.json {
		return e.printJSON(r)
	}
	if r.DryRun {
		writeDiff(e.stdout, r.Diff, false)
		fmt.Fprintf(e.stderr, "dry run: %s not changed\n", r.Path)
		return nil
	}
	if r.Created {
		verb = "created"
	}
	extra := ""
	if r.Replacements > 1 {
		extra = fmt.Sprintf(", %d replacements", r.Replacements)
	}
	_, err := fmt.Fprintf(e.stdout, "%s %s (%d bytes%s, sha256 %s)\n", verb, r.Path, r.SizeBytes, extra, r.SHA256)
	return err
}

// openTTY opens the controlling terminal for a question when standard input
// is taken by content. It returns nil if there is none.
func openTTY() *os.File {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil || !isTerminal(f) {
		if f != nil {
			f.Close()
		}
		return nil
	}
	return f
}

func newPrompter(e *env, in *os.File) *prompter {
	return &prompter{in: bufio.NewReader(in), out: e.stderr, color: useColor(e)}
}
