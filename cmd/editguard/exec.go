package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hookwire"
)

var execCmd = &command{
	name:    "exec",
	args:    "[--tool NAME] [--json] [--isolate auto|on|off] -- CMD [ARGS...]",
	summary: "run a command between two checkpoints; record every file it changed",
	help: `Exec runs CMD with its arguments (no shell: use "sh -c '...'" for one) between
two checkpoints of the workspace. Before it runs, the content of every
covered file is made recoverable; after, each file it created, changed or
deleted is recorded like a tool's change: what it displaced goes to
history, the ledger gets a record with the command, and the session's
reads follow the new contents. So log, history, restore and rewind
--session cover it.

Covered: every regular file that find_files would list (not in .git or
.editguard, not ignored by a .gitignore) up to the file size limit; the
summary says what was not checked.

The command runs in the current directory, which must be the workspace
root or under it (else exec refuses before running anything: the
command's relative names would reach files it does not cover), with the
terminal's stdin, stdout and stderr; editguard's summary goes to stderr
(--json: to stdout, after the command's output).

Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT reach the command, and exec
waits for it to end, then records what it changed. When a standard
stream is a terminal, the command shares exec's process group, as any
command a shell runs does: the terminal's Ctrl-C and Ctrl-\ and its
hangup reach both, and exec forwards only SIGTERM, which is sent to one
process (a SIGINT, SIGHUP or SIGQUIT sent to exec's process alone is not
passed on). Otherwise the command runs in a process group of its own,
and exec forwards each of the four signals it receives to that group.

The exit status is the command's: 128 plus the signal's number when a
signal killed it, as a shell reports it. If the command succeeded but replaced or
deleted a file whose content was not what this session last read or wrote
(someone else had changed it), exec names the files and the history
versions that keep the other writer's content, and exits 5. So it does
when the command discarded uncommitted work this session did not write:
content no record of the session wrote and git's HEAD does not hold
(git checkout -- f, git stash, git reset --hard or rm over a person's
change, an untracked file of theirs deleted); judged only in a
repository whose .git directory is at the root (--json: "uncommitted"
on each such change, and in the totals).

Checkpoints read only what changed when a change journal vouches for it:
the hook server's, when one serves the workspace, else one exec starts
for the command's time (then only the second checkpoint is from it).
EDITGUARD_NO_WATCH=1 makes both full scans. When the hook server runs the
same editguard program with the same global options and keeps a journal,
exec asks it to take both checkpoints (it holds the last one in memory);
the command still runs here, and what is recorded is the same. --json
says who took them ("checkpoints_by": "hook server", "exec", or "hook
server, then exec" when the server went away while the command ran).

On Linux the command runs isolated (--isolate=auto, the default, or
$EDITGUARD_ISOLATE): in a user and mount namespace where an overlay
covers the workspace root, so it sees the same paths and files but its
writes reach the tree only when it ends, and only they are recorded as
its changes. A file someone else changes meanwhile keeps their version:
it is not recorded, the session's reads do not move to it, and rewind
does not undo it; if the command changed that file too, its version is
not put in place but kept in a file exec names, and exec exits 3. A user
other than root keeps their uid, with no capability; other users' ids
show as 65534. Where isolation cannot be set up (no user namespaces or
overlayfs, a file system mounted inside the tree, not Linux), exec says so once and runs the command in the
tree as above; --isolate=on refuses instead, --isolate=off never
isolates.

--tool names the ledger records' tool (default "exec").`,
}

func runExec(ctx context.Context, e *env, args []string) error {
	i := slices.Index(args, "--")
	if i < 0 {
		i = len(args) // no command: only -h, which prints the help, is valid
	}
	argv := args[min(i+1, len(args)):]
	fs := newFlagSet(execCmd.name)
	tool := fs.String("tool", "exec", "the tool named in the ledger records")
	jsonOut := fs.Bool("json", e.json, "print the summary as JSON on stdout")
	isolate := fs.String("isolate", isolateDefault(), "run the command isolated: `MODE` auto, on or off (default: $EDITGUARD_ISOLATE, else auto)")
	pos, err := parseCommand(e, execCmd, fs, args[:i])
	if err != nil {
		return err
	}
	if i == len(args) {
		return usagef(execCmd.name, "exec needs -- before the command: editguard exec -- CMD [ARGS...]")
	}
	if len(pos) != 0 || len(argv) == 0 {
		return usagef(execCmd.name, "usage: editguard exec [--tool NAME] [--json] [--isolate auto|on|off] -- CMD [ARGS...]")
	}
	e.json = *jsonOut
	if *isolate != "auto" && *isolate != "on" && *isolate != "off" {
		return usagef(execCmd.name, "--isolate is auto, on or off, not %q", *isolate)
	}
	line := shellLine(argv)
	var (
		c   commandEnder
		sc  *serverCommand
		pre *preparedIsolation
	)
	// The hook server takes the checkpoints when it can (execserve.go);
	// else exec takes them itself. Either way, the isolation's helper
	// starts first, and sets up while they are taken.
	id := ""
	if checkWorkingDir(e.root) == nil {
		if root, err := hookwire.RealRoot(e.root); err == nil {
			pre = prepareIsolation(e, root, argv, *isolate)
		}
		if sc, id = beginOnServer(ctx, e, line, *tool); sc != nil {
			c = sc
		}
	}
	if c == nil {
		lc, root, err := beginHere(ctx, e, line, *tool, id)
		if err != nil {
			pre.cancel()
			return err
		}
		c = lc
		if pre == nil {
			pre = prepareIsolation(e, root, argv, *isolate)
		}
	}
	status, res, err := runIsolatable(ctx, e, c, pre, argv, *isolate)
	if err != nil {
		return err
	}
	by := "exec"
	switch {
	case sc != nil && sc.endedHere:
		by = "hook server, then exec"
	case sc != nil:
		by = "hook server"
	}
	if *jsonOut {
		out := map[string]any{"status": "ok", "exit_status": status, "result": res, "checkpoints_by": by}
		if err := json.NewEncoder(e.stdout).Encode(out); err != nil {
			return err
		}
	} else {
		printCommandResult(e, res)
		printConflicts(e, res)
	}
	switch {
	case status != 0:
		return exitStatus(status)
	case res.Totals.Overwrote > 0 || res.Totals.Uncommitted > 0:
		return exitStatus(exitOverwrote)
	case len(res.Conflicts) > 0:
		return exitStatus(exitConflict)
	}
	return nil
}

// beginHere begins the command line in the workspace, as exec's own
// (the hook server did not take it), and returns it with the workspace's
// root; id is the one the server was asked to begin it under, if it was
// ("": none).
func beginHere(ctx context.Context, e *env, line, tool, id string) (*editguard.Command, string, error) {
	s, err := e.session()
	if err != nil {
		return nil, "", err
	}
	if err := checkWorkingDir(e.root); err != nil {
		return nil, "", err
	}
	ws, err := e.workspace()
	if err != nil {
		return nil, "", err
	}
	commandJournal(e, ws)
	// Isolated, the command's changes are told from anyone else's; run
	// in the tree, nothing tells them apart.
	opts := &editguard.CommandOptions{Tool: tool, WriterUnknown: true}
	if id != "" {
		// The server may have begun it: begun again here, it is
		// ended first.
		opts.ID, opts.Owner = id, os.Getpid()
	}
	c, err := s.BeginCommand(ctx, line, opts)
	if err == nil {
		tellRecovered(e, c.Recovered())
	}
	return c, ws.Dir(), err
}

// tellRecovered says on stderr which earlier commands beginning this one
// found unended (their process gone, or past their maximum age) and
// ended: what each had changed is recorded now, as theirs.
func tellRecovered(e *env, recovered []*editguard.CommandResult) {
	for _, r := range recovered {
		fmt.Fprintf(e.stderr, "editguard: exec: an earlier command of session %s never reported its end (%s); what it had changed is recorded now: %d change(s), which editguard log lists\n",
			quoteName(r.Session), quoteNameCut(r.Command, 120), r.Totals.Created+r.Totals.Changed+r.Totals.Deleted)
	}
}

// execSignals are the signals exec passes on to the command.
var execSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// runCommand runs argv, passing the signals exec receives on to it (see
// the help), and returns its exit status as a shell reports it: 128 plus
// the signal's number if one killed it, 127 if it could not be started.
//
// exec catches the signals rather than ignoring them: an ignored signal
// stays ignored in a program started after it, a caught one is reset to
// its default there, so the command gets its Ctrl-C as it would from a
// shell while exec lives on to record what it changed.
func runCommand(e *env, argv []string) int {
	status, err := waitCommand(e, exec.Command(argv[0], argv[1:]...), nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "editguard: exec: %s\n", escapeText(err.Error()))
		return 127
	}
	return status
}

// waitCommand runs cmd as runCommand runs its command (its streams are
// exec's, its process group as the help says, with the signals passed
// on), calls started, if set, with its pid once it started, and returns
// its exit status; err is why it could not be started.
func waitCommand(e *env, cmd *exec.Cmd, started func(pid int)) (status int, err error) {
	shared := prepareCommand(e, cmd)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, execSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	return forwardUntilExit(e, cmd, sigs, shared)
}

// prepareCommand gives cmd exec's streams and, unless they share a
// terminal (the result), a process group of its own.
func prepareCommand(e *env, cmd *exec.Cmd) (shared bool) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	shared = onTerminal(e)
	if !shared {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Setpgid = true
	}
	return shared
}

// waitStarted is waitCommand for cmd, prepared by prepareCommand and
// started already: the signals exec receives from now on are passed on to
// it, and caught is called once they are.
func waitStarted(e *env, cmd *exec.Cmd, caught func()) (status int, err error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, execSignals...)
	defer signal.Stop(sigs)
	caught()
	return forwardUntilExit(e, cmd, sigs, onTerminal(e))
}

// forwardUntilExit passes the signals sigs receives on to the started
// cmd until it exits, and returns its exit status as waitCommand does.
func forwardUntilExit(e *env, cmd *exec.Cmd, sigs chan os.Signal, shared bool) (status int, err error) {
	done := make(chan struct{})
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		for {
			select {
			case sig := <-sigs:
				forwardSignal(cmd.Process.Pid, sig.(syscall.Signal), shared)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	<-forwarded
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	case err != nil:
		fmt.Fprintf(e.stderr, "editguard: exec: %s\n", escapeText(err.Error()))
		return 127, nil
	}
	return 0, nil
}

// forwardSignal passes sig on to the command pid: to its process group
// when it has one of its own; when it shares exec's, only SIGTERM, since
// the terminal sends the others to the whole group, the command included.
func forwardSignal(pid int, sig syscall.Signal, shared bool) {
	switch {
	case !shared:
		syscall.Kill(-pid, sig)
	case sig == syscall.SIGTERM:
		syscall.Kill(pid, sig)
	}
}

// onTerminal reports whether one of exec's standard streams is a
// terminal: the command then stays in exec's process group, where the
// terminal's job control (Ctrl-C, Ctrl-Z, reading the keyboard) treats it
// as a shell's command.
func onTerminal(e *env) bool {
	for _, s := range []any{e.stdin, e.stdout, e.stderr} {
		if f, ok := s.(*os.File); ok && isTerminal(f) {
			return true
		}
	}
	return false
}

// checkWorkingDir refuses a command run from outside the workspace root:
// the names it gives relative to the current directory would reach files
// no checkpoint covers, and nothing it changed there would be recorded.
func checkWorkingDir(root string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	realWD, err := filepath.EvalSymlinks(wd)
	if err != nil {
		return err
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	realRoot, err := filepath.EvalSymlinks(absRoot)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(realRoot, realWD); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	return &editguard.Error{
		Code:         editguard.CodeInvalidArgument,
		Message:      fmt.Sprintf("the working directory %s is outside the workspace root %s; run from inside it or pass --root; the command was not run", quoteName(wd), quoteName(absRoot)),
		Details:      map[string]any{"working_directory": wd, "root": absRoot},
		RecoveryHint: "cd into the workspace, or give --root the directory the command works in",
	}
}

func printCommandResult(e *env, res *editguard.CommandResult) {
	if n := res.Totals.Recorded; n > 0 {
		fmt.Fprintf(e.stderr, "editguard: recorded %d file(s) the command changed:", n)
		shown := 0
		for _, c := range res.Changes {
			if c.ChangedBy != "" {
				continue
			}
			if shown == 20 {
				break
			}
			fmt.Fprintf(e.stderr, " %s %s;", c.Op, quoteName(c.Path))
			shown++
		}
		if shown < n {
			fmt.Fprintf(e.stderr, " ... and %d more (editguard log lists them all)", n-shown)
		}
		fmt.Fprintln(e.stderr)
	}
	if n := res.Totals.Concurrent; n > 0 {
		fmt.Fprintf(e.stderr, "editguard: %d of them were made while another command was running: which command made them is uncertain\n", n)
	}
	if n := res.Totals.WriterUnknown; n > 0 {
		fmt.Fprintf(e.stderr, "editguard: the command ran in the tree, not isolated: %d of them may be someone else's, made while it ran (recorded as writer unknown; read them before changing them, and rewind leaves them unless --force)\n", n)
	}
	for _, c := range res.Overwrites() {
		verb := map[string]string{"changed": "replaced", "deleted": "deleted"}[c.Op]
		if c.NotInHistory {
			fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, which someone else had changed since this session read it; their version was not seen by a checkpoint and is not in history\n", verb, quoteName(c.Path))
			continue
		}
		fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, which someone else had changed since this session read it; their version is kept: editguard restore %s %s\n",
			verb, quoteName(c.Path), shellQuote(pathArg(c.Path)), c.BackupVersion)
	}
	for _, c := range res.UncommittedWork() {
		verb := map[string]string{"changed": "replaced", "deleted": "deleted"}[c.Op]
		if c.NotInHistory {
			fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, discarding uncommitted work this session did not write; it is not in history\n", verb, quoteName(c.Path))
			continue
		}
		fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, discarding uncommitted work this session did not write; it is kept: editguard restore %s %s\n",
			verb, quoteName(c.Path), shellQuote(pathArg(c.Path)), c.BackupVersion)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "editguard: warning: %s\n", escapeText(w))
	}
}

// shellLine renders argv as one shell command line, for the ledger.
func shellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

// commandJournal gives the workspace a change journal for the command:
// the hook server's, when one serves the root, so that both checkpoints
// read only what changed since the server's last; else one of its own,
// started now (its watches added while BeginCommand reads the last
// manifest), so that the second does (see editguard's journal.go).
// EDITGUARD_NO_WATCH=1 leaves it without: both scan in full.
func commandJournal(e *env, ws *editguard.Workspace) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		return
	}
	if j := hookServerJournal(e.root); j != nil {
		ws.SetChangeJournal(j)
		return
	}
	ws.StartWatch()
}
