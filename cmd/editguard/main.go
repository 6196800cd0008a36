// Command editguard reads, writes and edits files without losing anyone's
// work: a change is committed only if the file is still what this session
// last read, atomically, under a per-file lock shared with every other
// editguard process working on the same root.
//
// Usage:
//
//	editguard [--root DIR] [--session NAME] <command> [arguments]
//
// Run "editguard help" for the list of commands.
//
// Each command lives in its own file and registers itself in the command
// table from an init function (see register), so adding a file adds a
// command. The program is one more client of the editguard library: main
// only calls run, which takes its arguments and standard streams as values
// so that tests drive it in-process.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/editguard/editguard"
)

// Exit codes. Scripts and agents branch on them.
const (
	exitOK       = 0 // success
	exitError    = 1 // any failure not listed below
	exitUsage    = 2 // the command line could not be understood
	exitConflict = 3 // NOT_READ or STALE_FILE: read the file again, then redo the change
	exitRejected = 4 // the person at the terminal declined the change
)

// defaultSession is the session name used without --session: one per user
// ("cli-uid1000"), so that one user's read never approves another user's
// stale write. Baselines of a
// named session persist under .editguard/sessions/, so a shell-only agent
// that reads in one invocation and edits in the next is protected the same
// way as an agent that keeps a process alive.
var defaultSession = fmt.Sprintf("cli-uid%d", os.Getuid())

// A command is one subcommand of editguard.
type command struct {
	name    string
	args    string // argument synopsis for help, e.g. "PATH [--json]"
	summary string // one line for the command list
	help    string // longer description printed by "editguard help NAME"
	// run executes the command with the arguments that follow its name.
	run func(ctx context.Context, e *env, args []string) error
}

// commands is the command table, filled by register.
var commands = map[string]*command{}

// register adds c to the command table. It is called from init functions,
// one per command file.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("editguard: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// env is what a command runs with: the global flags, the standard streams,
// and the workspace and session, opened on first use.
type env struct {
	root        string // --root
	sessionName string // --session

	stdin          io.Reader
	stdout, stderr io.Writer

	// json is set by a command that was given --json, so that a failure is
	// printed as a JSON object on stdout too.
	json bool

	ws   *editguard.Workspace
	sess *editguard.Session
}

// workspace opens the workspace.
func (e *env) workspace() (*editguard.Workspace, error) {
	if e.ws != nil {
		return e.ws, nil
	}
	ws, err := editguard.Open(e.root, nil)
	if err != nil {
		return nil, err
	}
	e.ws = ws
	return ws, nil
}

// session opens the workspace and the persistent session.
func (e *env) session() (*editguard.Session, error) {
	if e.sess != nil {
		return e.sess, nil
	}
	ws, err := e.workspace()
	if err != nil {
		return nil, err
	}
	s, err := ws.OpenSession(e.sessionName)
	if err != nil {
		return nil, err
	}
	e.sess = s
	return s, nil
}

func (e *env) close() {
	if e.ws != nil {
		e.ws.Close()
	}
}

// printJSON writes v as indented JSON on stdout.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// usageError is a command line that could not be understood (exit 2).
type usageError struct {
	cmd string // the command whose usage to print; "" for the global one
	msg string
}

func (u *usageError) Error() string { return u.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// errHelp reports that help was asked for and printed (exit 0).
var errHelp = errors.New("help requested")

// main leaves SIGINT at its default: an interrupted commit is harmless (the
// target keeps its old or its new content), and a prompt waiting for an
// answer must die on Ctrl-C rather than wait for a context nobody checks.
func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the editguard command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	defer e.close()
	fs := flag.NewFlagSet("editguard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&e.root, "root", ".", "workspace root `DIR`")
	fs.StringVar(&e.sessionName, "session", defaultSession, "session `NAME` whose reads guard later changes")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return exitOK
		}
		return report(e, &usageError{msg: err.Error()})
	}
	rest := fs.Args()
	if len(rest) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	c, ok := commands[rest[0]]
	if !ok {
		return report(e, usagef("", "unknown command %q", rest[0]))
	}
	return report(e, c.run(ctx, e, rest[1:]))
}

// report prints err, if any, and maps it to an exit code. Errors of the
// library keep their structure: with --json they are printed as
// {"error": {...}} on stdout, the same object the library returns.
func report(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "editguard: %s\n", ue.msg)
		if c, ok := commands[ue.cmd]; ok {
			fmt.Fprintf(e.stderr, "usage: editguard %s %s\nRun 'editguard help %s' for details.\n", c.name, c.args, c.name)
		} else {
			fmt.Fprintln(e.stderr, "Run 'editguard help' for usage.")
		}
		return exitUsage
	}
	var ge *editguard.Error
	if !errors.As(err, &ge) {
		ge = &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Err: err}
	}
	if e.json {
		e.printJSON(map[string]any{"error": ge})
	}
	fmt.Fprintf(e.stderr, "editguard: %v\n", ge)
	if c, ok := ge.Details["changes"].(string); ok {
		fmt.Fprint(e.stderr, c)
	}
	if vs, ok := ge.Details["versions"].([]string); ok && len(vs) > 0 {
		fmt.Fprintf(e.stderr, "versions: %s\n", strings.Join(vs, ", "))
	}
	if ge.RecoveryHint != "" {
		fmt.Fprintf(e.stderr, "hint: %s\n", ge.RecoveryHint)
	}
	return exitCode(ge)
}

func exitCode(e *editguard.Error) int {
	switch e.Code {
	case editguard.CodeNotRead, editguard.CodeStaleFile:
		return exitConflict
	case editguard.CodeRejected:
		return exitRejected
	}
	return exitError
}

// parseArgs parses a command's flags, which may come before or after its
// positional arguments ("edit a.go --old x" and "edit --old x a.go" alike),
// and returns the positional arguments. "--" ends the flags.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef(fs.Name(), "%v", err)
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if n := len(consumed); n > 0 && consumed[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagWasSet reports whether the flag name was given on the command line,
// which tells an empty --old from no --old at all.
func flagWasSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// newFlagSet returns the flag set of command name.
func newFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ContinueOnError)
}

// commandHelp prints the help of command c to w.
func commandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: editguard [--root DIR] [--session NAME] %s %s\n\n%s\n", c.name, c.args, strings.TrimSpace(c.help))
	if fs != nil {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// parseCommand parses args for c, printing its help for -h.
func parseCommand(e *env, c *command, fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		commandHelp(e.stdout, c, fs)
		return nil, errHelp
	}
	return pos, err
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `editguard reads, writes and edits files without losing anyone's work.

usage: editguard [--root DIR] [--session NAME] <command> [arguments]

Global flags (before the command):
  --root DIR       workspace root (default: the current directory)
  --session NAME   session whose reads guard later changes (default "cli-uid<UID>");
                   kept in DIR/.editguard/sessions/, so separate invocations
                   with the same name share what was read

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Exit codes: 0 ok, 1 error, 2 usage, 3 conflict (NOT_READ, STALE_FILE:
read the file again, then redo the change), 4 declined at the prompt.
With --json, results and failures ({"error": {...}}) are JSON on stdout.

Run 'editguard help <command>' for details of one command.
`)
}
