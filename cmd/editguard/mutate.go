package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/editguard/editguard"
)

// mutationFlags are the flags write, edit and restore share.
type mutationFlags struct {
	expectSHA256 string
	expectMtime  optInt64
	expectSize   optInt64
	requireAll   bool
	dryRun       bool
	yes          bool
}

// optInt64 is an integer flag that tells "not given" from 0.
type optInt64 struct{ v *int64 }

func (o *optInt64) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

func (o *optInt64) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	o.v = &n
	return nil
}

func (m *mutationFlags) add(fs *flag.FlagSet, e *env) {
	fs.StringVar(&m.expectSHA256, "expect-sha256", "", "commit only if the file's SHA-256 is `H` (instead of the session's last read)")
	fs.Var(&m.expectMtime, "expect-mtime-ms", "commit only if the file's modification time is `MS` milliseconds since 1970 (as read --json prints)")
	fs.Var(&m.expectSize, "expect-size", "commit only if the file is `N` bytes long")
	fs.BoolVar(&m.requireAll, "require-all", false, "require --expect-sha256, --expect-mtime-ms and --expect-size all three")
	fs.BoolVar(&m.dryRun, "dry-run", false, "show the change, write nothing")
	fs.BoolVar(&m.yes, "yes", false, "do not ask for confirmation at a terminal")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
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
	expects := m.expectSHA256 != "" || m.expectMtime.v != nil || m.expectSize.v != nil
	if !expects && !m.requireAll && !mustNotExist {
		return nil, nil
	}
	if m.expectSHA256 != "" {
		if b, err := hex.DecodeString(m.expectSHA256); err != nil || len(b) != 32 {
			return nil, usagef(cmd, "--expect-sha256 needs 64 hexadecimal digits, got %q", m.expectSHA256)
		}
	}
	if m.requireAll && (m.expectSHA256 == "" || m.expectMtime.v == nil || m.expectSize.v == nil) {
		return nil, usagef(cmd, "--require-all needs --expect-sha256, --expect-mtime-ms and --expect-size")
	}
	if mustNotExist && expects {
		return nil, usagef(cmd, "--must-not-exist cannot be combined with --expect-* flags")
	}
	return &editguard.Precondition{
		ExpectedSHA256:    m.expectSHA256,
		ExpectedMtimeMS:   m.expectMtime.v,
		ExpectedSizeBytes: m.expectSize.v,
		RequireAll:        m.requireAll,
		MustNotExist:      mustNotExist,
	}, nil
}

// printResult reports a committed or previewed change.
func printResult(e *env, verb string, r *editguard.Result) error {
	if e.json {
		return e.printJSON(r)
	}
	if r.DryRun {
		writeDiff(e.stdout, r.Diff, false)
		fmt.Fprintf(e.stderr, "dry run: %s not changed\n", quoteName(r.Path))
		return nil
	}
	if r.Created {
		verb = "created"
	}
	extra := ""
	if r.Replacements > 1 {
		extra = fmt.Sprintf(", %d replacements", r.Replacements)
	}
	if r.Merged {
		extra += ", merged over a change made since your read"
	}
	if _, err := fmt.Fprintf(e.stdout, "%s %s (%d bytes%s, sha256 %s)\n", verb, quoteName(r.Path), r.SizeBytes, extra, r.SHA256); err != nil {
		return err
	}
	if r.Merged {
		// What the other writer changed, kept under this edit.
		fmt.Fprintf(e.stderr, "editguard: %s had changed since your read; the edit was applied on top of that change, which is kept:\n", quoteName(r.Path))
		writeDiff(e.stderr, r.ExternalDiff, false)
	}
	return nil
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
