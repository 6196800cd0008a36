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
// Each command lives in its own file; the table commandTable, in
// commands.go, lists them all in the order help shows them. The program is
// one more client of the editguard library: main only calls run, which
// takes its arguments and standard streams as values so that tests drive
// it in-process.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
)

// Exit codes. Scripts and agents branch on them.
const (
	exitOK       = 0 // success
	exitError    = 1 // any failure not listed below
	exitUsage    = 2 // the command line could not be understood
	exitConflict = 3 // NOT_READ or STALE_FILE: read the file again, then redo the change
	exitRejected = 4 // the person at the terminal declined the change
	// exitOverwrote ends an exec whose command succeeded but replaced or
	// deleted another writer's change, or uncommitted work the session did
	// not write (kept in history).
	exitOverwrote = 5
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

// env is what a command runs with: the global flags, the standard streams,
// and the workspace and session, opened on first use.
type env struct {
	root        string // --root
	sessionName string // --session
	maxFileSize size   // --max-file-size; 0: the library's default
	historyAge  age    // --history-max-age; 0: versions kept whatever their age

	stdin          io.Reader
	stdout, stderr io.Writer

	// json is --json, global or the command's own: the answer, a failure
	// included, is a JSON object on stdout.
	json bool

	// collect, if set, is handed each command's flag set by parseCommand,
	// which then stops the command before it does anything: completion
	// and man learn the flags this way (flagSets).
	collect func(*flag.FlagSet)

	version bool // --version

	command string // the name of the command that runs

	color   colorMode // --color
	noPager bool      // --no-pager
	pager   *pager    // the pager stdout goes through, if any (pager.go)

	// names is --names; "": the workspace's own (.editguard/names).
	names namePolicy

	ws   *editguard.Workspace
	sess *editguard.Session

	// answered, when set, collects work that may wait until the answer
	// has reached the client (see afterAnswer).
	answered *[]func()
}

// afterAnswer runs f once the command's answer has reached its client: at
// once, unless e collects such work (the hook server runs it after
// answering).
func (e *env) afterAnswer(f func()) {
	if e.answered == nil {
		f()
		return
	}
	*e.answered = append(*e.answered, f)
}

// workspace opens the workspace.
func (e *env) workspace() (*editguard.Workspace, error) {
	if e.ws != nil {
		return e.ws, nil
	}
	if err := checkRoot(e.root); err != nil {
		return nil, err
	}
	ws, err := editguard.Open(e.root, e.options(nil))
	if err != nil {
		return nil, err
	}
	rec := ws.Recovery()
	for _, id := range rec.RolledBack {
		fmt.Fprintf(e.stderr, "editguard: rolled back patch transaction %s, which a crash interrupted: its files are as before it\n", quoteName(id))
	}
	for _, n := range append(rec.Problems, rec.Warnings...) {
		fmt.Fprintf(e.stderr, "editguard: warning: %s\n", escapeText(n.Message))
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

// checkRoot reports a --root that names no directory as one clear error,
// before the library would fail on it with a file system message.
func checkRoot(root string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return &editguard.Error{
			Code:         editguard.CodeNotFound,
			Message:      fmt.Sprintf("root %s does not exist", abs),
			Details:      map[string]any{"root": abs},
			RecoveryHint: "give --root an existing directory (the default is the current directory)",
			Err:          err,
		}
	case err != nil:
		return nil // let the library report it with its own code
	case !fi.IsDir():
		return &editguard.Error{
			Code:         editguard.CodeInvalidArgument,
			Message:      fmt.Sprintf("root %s is not a directory", abs),
			Details:      map[string]any{"root": abs},
			RecoveryHint: "give --root the directory that holds the files, not a file in it",
		}
	}
	return nil
}

func (e *env) close() {
	e.closePager()
	if e.ws != nil {
		e.ws.Close()
	}
}

// printJSON prints v as indented JSON. An object that has no "status" gets
// "status": "ok" first, so that every answer says whether it is a success
// (a failure's is {"status": CODE, "error": {"code": CODE, ...}}).
func (e *env) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	if len(b) > 1 && b[0] == '{' {
		var keys map[string]json.RawMessage
		if json.Unmarshal(b, &keys) == nil && keys["status"] == nil {
			sep := ","
			if len(keys) == 0 {
				sep = ""
			}
			b = append([]byte(`{"status":"ok"`+sep), b[1:]...)
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	_, err := e.stdout.Write(out.Bytes())
	return err
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

// arguments says how many arguments a command line gave: "1 argument",
// "3 arguments".
func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// exitStatus ends a command that has printed its own report with that exit
// code: rewind when some files were refused and the others rewound, pull
// with conflicts.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

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
	if len(args) > 0 && args[0] == isolateEntry {
		return isolateHelper(args[1:], stderr) // exec's, in its namespaces
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	defer e.close()
	e.root, e.sessionName = ".", defaultSession
	fs := flag.NewFlagSet("editguard", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	e.addGlobalFlags(fs)
	if err := fs.Parse(args); err != nil {
		e.json = e.json || askedJSON(args)
		if errors.Is(err, flag.ErrHelp) {
			if e.json {
				return report(e, helpJSON(e, nil, nil))
			}
			printUsage(stdout)
			return exitOK
		}
		return report(e, &usageError{msg: flagError(err)})
	}
	if e.version {
		return report(e, printVersion(e))
	}
	rest := fs.Args()
	if len(rest) == 0 {
		if e.json {
			return report(e, usagef("", "give a command: editguard [global flags] <command> [arguments]"))
		}
		printUsage(stderr)
		return exitUsage
	}
	c, ok := commands[rest[0]]
	if !ok {
		e.json = e.json || askedJSON(rest[1:])
		return report(e, usagef("", "unknown command %q%s", rest[0], didYouMean(rest[0])))
	}
	e.command = c.name
	return report(e, c.run(ctx, e, rest[1:]))
}

// askedJSON reports whether the command line args asks for --json before
// any "--". It is read only where the flags could not be parsed (a bad
// flag, -h), so that the answer still comes as JSON; a parsed command line
// says it through the flag.
func askedJSON(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true", "--json=1", "-json=1":
			return true
		}
	}
	return false
}

// globalUsage holds the usage texts of editguard's own flags. They may also
// follow the command name ("editguard read a.go --root src"): every
// command's flag set accepts them too, unless the command has a flag of the
// same name (log --session filters by session).
var globalUsage = map[string]string{
	"root":            "workspace root `DIR`",
	"session":         "session `NAME` whose reads guard later changes",
	"version":         "print editguard's version and exit",
	"names":           "what a change does with a new name that is not portable: `POLICY` warn, refuse or off (default: the word in .editguard/names, else warn)",
	"max-file-size":   "the largest file editguard reads, writes or keeps, as `SIZE`: bytes, or with KiB, MiB or GiB (default 64MiB)",
	"history-max-age": "retire history versions older than `AGE` (such as 30d or 12h), but each file's newest (default: keep them whatever their age)",
	"color":           "colour diffs: `WHEN` auto (on a terminal, unless NO_COLOR is set), always or never",
	"no-pager":        "do not send long output (log, history, diff) through a pager on a terminal",
	"json":            "print the answer as one JSON object on stdout, with \"status\": \"ok\" or the error's code",
}

// options returns o, or new Options, with the global flags' settings.
func (e *env) options(o *editguard.Options) *editguard.Options {
	if o == nil {
		o = &editguard.Options{}
	}
	if e.maxFileSize > 0 {
		o.MaxFileSize = int64(e.maxFileSize)
	}
	if e.names != "" {
		o.Names = string(e.names)
	}
	if e.historyAge > 0 {
		o.HistoryMaxAge = time.Duration(e.historyAge)
	}
	return o
}

// size is a flag's number of bytes, written as a whole number of bytes or
// with the suffix KiB, MiB or GiB (also K, M, G: the same powers of two).
type size int64

func (z *size) String() string {
	if z == nil || *z == 0 {
		return ""
	}
	return strconv.FormatInt(int64(*z), 10)
}

func (z *size) Set(s string) error {
	num, unit := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, unit = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || n > (1<<62)/unit {
		return fmt.Errorf("want a size above zero in bytes, or with KiB, MiB or GiB, got %q", s)
	}
	*z = size(n * unit)
	return nil
}

// age is a flag's duration, written as Go writes one (12h, 90m) or as a
// whole number of days (30d).
type age time.Duration

func (a *age) String() string {
	if a == nil || *a == 0 {
		return ""
	}
	return time.Duration(*a).String()
}

func (a *age) Set(s string) error {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 1 || n > 100*365 {
			return fmt.Errorf("want a number of days such as 30d, got %q", s)
		}
		*a = age(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want an age above zero such as 30d, 12h or 90m, got %q", s)
	}
	*a = age(d)
	return nil
}

// namePolicy is the --names flag: a name policy of the library.
type namePolicy string

func (n *namePolicy) String() string {
	if n == nil {
		return ""
	}
	return string(*n)
}

func (n *namePolicy) Set(s string) error {
	switch s {
	case editguard.NamesWarn, editguard.NamesRefuse, editguard.NamesOff:
		*n = namePolicy(s)
		return nil
	}
	return fmt.Errorf("want warn, refuse or off, got %q", s)
}

// addGlobalFlags defines the global flags in fs, writing to e; the current
// values are the defaults, so a flag given after the command overrides one
// given before it.
func (e *env) addGlobalFlags(fs *flag.FlagSet) {
	if fs.Lookup("root") == nil {
		fs.StringVar(&e.root, "root", e.root, globalUsage["root"])
	}
	if fs.Lookup("session") == nil {
		fs.StringVar(&e.sessionName, "session", e.sessionName, globalUsage["session"])
	}
	if fs.Lookup("version") == nil {
		fs.BoolVar(&e.version, "version", e.version, globalUsage["version"])
	}
	if fs.Lookup("max-file-size") == nil {
		fs.Var(&e.maxFileSize, "max-file-size", globalUsage["max-file-size"])
	}
	if fs.Lookup("names") == nil {
		fs.Var(&e.names, "names", globalUsage["names"])
	}
	if fs.Lookup("history-max-age") == nil {
		fs.Var(&e.historyAge, "history-max-age", globalUsage["history-max-age"])
	}
	if fs.Lookup("color") == nil {
		fs.Var(&e.color, "color", globalUsage["color"])
	}
	if fs.Lookup("no-pager") == nil {
		fs.BoolVar(&e.noPager, "no-pager", e.noPager, globalUsage["no-pager"])
	}
	if fs.Lookup("json") == nil {
		fs.BoolVar(&e.json, "json", e.json, globalUsage["json"])
	}
}

// flagSpelling finds the flag names in the flag package's messages, which
// spell them with one dash. It is compiled on the first bad command line.
var flagSpelling = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`((?:defined|argument): |for flag |for )-([A-Za-z][A-Za-z0-9-]*)`)
})

// flagError returns the message of a flag parsing error with flags spelled
// as the help spells them, "--name" ("-n" for one letter).
func flagError(err error) string {
	re := flagSpelling()
	return re.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := re.FindStringSubmatch(m)
		return sub[1] + flagDash(sub[2])
	})
}

// usageCode is the status and code of a --json answer to a command line
// that could not be understood (exit 2).
const usageCode = "USAGE"

// report prints err, if any, and maps it to an exit code. Errors of the
// library keep their structure: with --json they are printed as
// {"status": CODE, "error": {...}} on stdout, the error the same object
// the library returns; a usage error is {"status": "USAGE", "error":
// {"code": "USAGE", "message": ..., "usage": ...}}. The message is also
// printed on stderr, for the person at the terminal.
func report(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errHelp) {
		return exitOK
	}
	var st exitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		if e.json {
			usage := "editguard [global flags] <command> [arguments]"
			if c, ok := commands[ue.cmd]; ok {
				usage = "editguard " + strings.TrimSpace(c.name+" "+c.args)
			}
			e.printJSON(struct {
				Status string            `json:"status"`
				Error  map[string]string `json:"error"`
			}{usageCode, map[string]string{"code": usageCode, "message": ue.msg, "usage": usage}})
		}
		fmt.Fprintf(e.stderr, "editguard: %s\n", escapeText(ue.msg))
		if c, ok := commands[ue.cmd]; ok {
			fmt.Fprintf(e.stderr, "usage: editguard %s\nRun 'editguard help %s' for details.\n", strings.TrimSpace(c.name+" "+c.args), c.name)
		} else {
			fmt.Fprintln(e.stderr, "Run 'editguard help' for usage.")
		}
		return exitUsage
	}
	var ge *editguard.Error
	if !errors.As(err, &ge) {
		ge = &editguard.Error{Code: editguard.CodeIO, Message: strings.TrimPrefix(err.Error(), "editguard: "), Err: err}
	}
	if e.json {
		e.printJSON(struct {
			Status string           `json:"status"`
			Error  *editguard.Error `json:"error"`
		}{string(ge.Code), ge})
	}
	shown := ge
	if ge.Code == editguard.CodePermission && readsOnly[e.command] && strings.Contains(ge.Message, "not writable") {
		// The library says it of any denied open; a read is denied reading.
		c := *ge
		c.Message = "permission denied: this user may not read the file"
		shown = &c
	}
	fmt.Fprintf(e.stderr, "editguard: %s\n", errorText(shown))
	closestLines(e.stderr, ge)
	if c, ok := ge.Details["changes"].(string); ok {
		fmt.Fprint(e.stderr, escapeLines(c))
	}
	if vs, ok := ge.Details["versions"].([]string); ok && len(vs) > 0 {
		fmt.Fprintf(e.stderr, "versions: %s\n", escapeText(strings.Join(vs, ", ")))
	}
	if h := e.hint(ge); h != "" {
		fmt.Fprintf(e.stderr, "hint: %s\n", escapeText(h))
	}
	return exitCode(ge)
}

// errorText is how a terminal is told the error e: as e.Error() says it,
// with the path it names quoted and its message escaped (quote.go).
func errorText(e *editguard.Error) string {
	if p, ok := e.Details["path"].(string); ok {
		return fmt.Sprintf("%s: %s: %s", e.Code, quoteNameCut(p, maxErrPath), escapeText(e.Message))
	}
	return escapeText(e.Error())
}

// maxErrPath is the most of a path an error message prints, as the
// library cuts one in Error.
const maxErrPath = 200

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
			return nil, usagef(fs.Name(), "%s", flagError(err))
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
	fmt.Fprintf(w, "usage: editguard [--root DIR] [--session NAME] %s\n\n%s\n", strings.TrimSpace(c.name+" "+c.args), strings.TrimSpace(c.help))
	if fs != nil {
		var b strings.Builder
		printFlags(&b, fs)
		if b.Len() > 0 {
			fmt.Fprintf(w, "\nFlags:\n%s", b.String())
		}
	}
}

// flagDash is how help spells the flag name: "--name", or "-n" for one
// letter, as git, rg and gh spell theirs (the flag package takes either).
func flagDash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// printFlags lists the flags of fs other than the global ones, spelled
// "--name" (one letter: "-n") as everywhere else in editguard's help.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if u, ok := globalUsage[f.Name]; ok && u == f.Usage {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  " + flagDash(f.Name)
		if name != "" {
			line += " " + name
		}
		switch f.DefValue {
		case "", "0", "false", "[]":
		default:
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
	})
}

// parseCommand parses args for c, printing its help for -h. The global
// flags are accepted among the command's own.
func parseCommand(e *env, c *command, fs *flag.FlagSet, args []string) ([]string, error) {
	e.addGlobalFlags(fs)
	if e.collect != nil {
		e.collect(fs)
		return nil, errHelp
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		e.json = e.json || askedJSON(args)
	}
	if errors.Is(err, flag.ErrHelp) {
		if e.json {
			return nil, helpJSON(e, c, fs)
		}
		commandHelp(e.stdout, c, fs)
		return nil, errHelp
	}
	if err == nil && e.version {
		printVersion(e)
		return nil, errHelp
	}
	if err == nil && e.json {
		if why, ok := noJSON[c.name]; ok {
			return nil, usagef(c.name, "%s: --json does not apply", why)
		}
	}
	return pos, err
}

// noJSON is the commands whose output cannot be one JSON answer, and why.
var noJSON = map[string]string{
	"serve": "serve answers MCP requests until its client goes",
	"hook":  "hook answers its client in the client's own JSON",
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `editguard reads, writes and edits files without losing anyone's work.

usage: editguard [--root DIR] [--session NAME] <command> [arguments]

Global flags (before or after the command):
  --root DIR       workspace root (default: the current directory)
  --session NAME   session whose reads guard later changes (default "cli-uid<UID>");
                   kept in DIR/.editguard/sessions/, so separate invocations
                   with the same name share what was read
  --version        print editguard's version and exit
  --max-file-size SIZE
                   the largest file editguard reads whole, writes or keeps:
                   bytes, or with KiB, MiB or GiB (default 64MiB)
  --names warn|refuse|off
                   what a change does with a new file or directory name that
                   is not portable (Windows-reserved, <>:"|?*\, a trailing dot
                   or space, a case twin): warn (default), refuse, or off;
                   the default is the word in DIR/.editguard/names, else warn
  --history-max-age AGE
                   retire history versions older than AGE (30d, 12h, 90m),
                   but each file's newest; beside the 50 versions per file
                   and 1 GiB in all kept (default: no age limit)
  --color auto|always|never
                   colour diffs: auto (default) on a terminal unless NO_COLOR
                   is set
  --no-pager       print log, history and diff straight to the terminal, not
                   through $EDITGUARD_PAGER, $PAGER or less
  --json           the answer as one JSON object on stdout, with "status"
                   "ok" or the error's code (USAGE for a command line that
                   could not be understood): {"status": "ok", ...},
                   {"status": "NO_MATCH", "error": {"code": ...}}

Commands:
`)
	for _, c := range commandList {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Names: a file name, session or command that holds a control character
(ESC, newline, tab...), DEL, a C1 control, a Unicode format or separator
character (bidirectional overrides, zero-width characters), a byte that
is not UTF-8, '"' or '\' is printed in double quotes with C escapes:
\n, \t, \", \\, and octal for any other byte (\033, \351). Printable
non-ASCII stays as it is. --json, find -z and tree -z give the exact
names. A PATH argument that starts with "-" follows "--" or "./".

Exit codes: 0 ok, 1 error, 2 usage, 3 conflict (NOT_READ, STALE_FILE:
read the file again, then redo the change), 4 declined at the prompt,
5 (exec) the command overwrote someone else's change or discarded
uncommitted work, kept in history.
The exit codes are the same with --json.

Run 'editguard help <command>' for details of one command.
`)
}
