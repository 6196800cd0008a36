package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/editguard/editguard"
)

var execCmd = &command{
	name:    "exec",
	args:    "[--tool NAME] [--json] -- CMD [ARGS...]",
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

The command runs in the current directory, with the terminal's stdin,
stdout and stderr; editguard's
summary goes to stderr (--json: to stdout, after the command's output).
The exit status is the command's. If the command succeeded but replaced or
deleted a file whose content was not what this session last read or wrote
(someone else had changed it), exec names the files and the history
versions that keep the other writer's content, and exits 5.

Checkpoints read only what changed when a change journal vouches for it:
the hook server's, when one serves the workspace, else one exec starts
for the command's time (then only the second checkpoint is from it).
EDITGUARD_NO_WATCH=1 makes both full scans.

--tool names the ledger records' tool (default "exec").`,
}

func runExec(ctx context.Context, e *env, args []string) error {
	i := slices.Index(args, "--")
	if i < 0 {
		return usagef(execCmd.name, "exec needs -- before the command: editguard exec -- CMD [ARGS...]")
	}
	argv := args[i+1:]
	fs := newFlagSet(execCmd.name)
	tool := fs.String("tool", "exec", "the tool named in the ledger records")
	jsonOut := fs.Bool("json", false, "print the summary as JSON on stdout")
	pos, err := parseCommand(e, execCmd, fs, args[:i])
	if err != nil {
		return err
	}
	if len(pos) != 0 || len(argv) == 0 {
		return usagef(execCmd.name, "usage: editguard exec [--tool NAME] [--json] -- CMD [ARGS...]")
	}
	e.json = *jsonOut
	s, err := e.session()
	if err != nil {
		return err
	}
	if ws, err := e.workspace(); err == nil {
		commandJournal(e, ws)
	}
	c, err := s.BeginCommand(ctx, shellLine(argv), &editguard.CommandOptions{Tool: *tool})
	if err != nil {
		return err
	}
	// The command gets the terminal's signals; exec waits for it and
	// records what it did, whatever ended it.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Reset(syscall.SIGINT, syscall.SIGQUIT)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	runErr := cmd.Run()
	status := 0
	var ee *exec.ExitError
	switch {
	case errors.As(runErr, &ee):
		status = ee.ExitCode()
		if status < 0 {
			status = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
	case runErr != nil:
		fmt.Fprintf(e.stderr, "editguard: exec: %v\n", runErr)
		status = 127
	}
	res, err := c.End(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	if *jsonOut {
		out := map[string]any{"status": "ok", "exit_status": status, "result": res}
		if err := json.NewEncoder(e.stdout).Encode(out); err != nil {
			return err
		}
	} else {
		printCommandResult(e, res)
	}
	switch {
	case status != 0:
		return exitStatus(status)
	case len(res.Overwrites()) > 0:
		return exitStatus(exitOverwrote)
	}
	return nil
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
			fmt.Fprintf(e.stderr, " %s %s;", c.Op, c.Path)
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
	for _, c := range res.Overwrites() {
		verb := map[string]string{"changed": "replaced", "deleted": "deleted"}[c.Op]
		if c.NotInHistory {
			fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, which someone else had changed since this session read it; their version was not seen by a checkpoint and is not in history\n", verb, c.Path)
			continue
		}
		fmt.Fprintf(e.stderr, "editguard: warning: the command %s %s, which someone else had changed since this session read it; their version is kept: editguard restore %s %s\n",
			verb, c.Path, shellQuote(c.Path), c.BackupVersion)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "editguard: warning: %s\n", w)
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
// started now, so that the second does (see editguard's journal.go).
// EDITGUARD_NO_WATCH=1 leaves it without: both scan in full.
func commandJournal(e *env, ws *editguard.Workspace) {
	if os.Getenv(editguard.NoWatchEnv) == "1" {
		return
	}
	if j := hookServerJournal(e.root); j != nil {
		ws.SetChangeJournal(j)
		return
	}
	ws.Watch()
}
