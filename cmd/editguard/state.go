package main

import (
	"context"
	"fmt"

	"github.com/editguard/editguard"
)

var stateCmd = &command{
	name:    "state",
	args:    "[--set-aside] [--json]",
	summary: "check that .editguard is editguard's own; set aside one that is not",
	help: `State checks the workspace's state directory (.editguard): editguard acts
only on state it wrote for this user on this machine, which it proves with
a key kept outside every workspace (~/.local/state/editguard/key, or in
$EDITGUARD_STATE_HOME). A .editguard that
came with a repository (committed with "git add -f", or in an archive) is
refused by every command with UNSAFE_STATE, and nothing in it is acted upon.

With --set-aside, such a directory is moved, whole and untouched, into
.editguard/untrusted-<time>/, and editguard starts afresh. Nothing is
deleted: look at it, and remove it when done.

It also lists what recovery at open found and could not act on (a journal
it cannot verify, a file that holds neither what a transaction found nor
what it put there), which stays until a person removes it, and
editguard's own temporary files in the workspace (.NAME.<tag>.egtmp,
which listings leave out): the new content of a change whose writer
stopped before it finished, kept in history and removed by the next change
to NAME.

It ends the shell commands whose end will not come (their process is gone
or their time is up), as the next command would: what each changed is
recorded; for one exec ran isolated and was killed while it ran, its
changes are put into the tree first, and changes others made meanwhile
are not recorded as its own.`,
}

func runState(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(stateCmd.name)
	setAside := fs.Bool("set-aside", false, "move a state directory editguard did not write into .editguard/untrusted-<time>/")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, stateCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(stateCmd.name, "state takes no arguments, got %q", pos)
	}
	if err := checkRoot(e.root); err != nil {
		return err
	}
	ws, err := editguard.Open(e.root, e.options(&editguard.Options{SetAsideUntrusted: *setAside}))
	if err != nil {
		return err
	}
	defer ws.Close()
	rec := ws.Recovery()
	warnings, problems := messages(rec.Warnings), messages(rec.Problems)
	temps, err := ws.TempFiles(ctx)
	if err != nil {
		return err
	}
	if temps == nil {
		temps = []string{}
	}
	for _, p := range temps {
		target := editguard.TempTarget(p)
		warnings = append(warnings, fmt.Sprintf("%s is editguard's temporary file for %s: the new content of a change whose writer stopped before it finished (or of one in progress now); the next change to %s keeps its bytes in history and removes it", p, target, target))
	}
	recovered, err := ws.RecoverCommands(ctx)
	if err != nil {
		return err
	}
	for _, r := range recovered {
		warnings = append(warnings, recoveredCommandNote(r)...)
	}
	res := map[string]any{"trusted": true, "warnings": warnings, "problems": problems, "rolled_back": rec.RolledBack, "temporary_files": temps}
	if len(recovered) > 0 {
		res["recovered_commands"] = recovered
	}
	if e.json {
		return e.printJSON(res)
	}
	for _, m := range append(warnings, problems...) {
		fmt.Fprintln(e.stdout, escapeText(m))
	}
	if len(warnings) == 0 && len(problems) == 0 {
		fmt.Fprintln(e.stdout, "state ok: .editguard is editguard's own, recovery has nothing left to do, and no temporary file of editguard's is left")
	}
	return nil
}

// messages returns what each note tells a person.
func messages(notes []editguard.RecoveryNote) []string {
	if len(notes) == 0 {
		return nil
	}
	m := make([]string, len(notes))
	for i, n := range notes {
		m[i] = n.Message
	}
	return m
}

// recoveredCommandNote tells a person what the recovery of a command whose
// end never came did.
func recoveredCommandNote(r *editguard.CommandResult) []string {
	outside := 0
	for _, c := range r.Changes {
		if c.ChangedBy == editguard.OutsideChange {
			outside++
		}
	}
	out := []string{fmt.Sprintf("ended command %s (%s), whose end never came: %d change(s) recorded as its own (editguard log lists them), %d made by someone else meanwhile not recorded",
		r.ID, escapeText(r.Command), r.Totals.Recorded, outside)}
	for _, c := range r.Conflicts {
		line := fmt.Sprintf("command %s %s %s, but someone else had changed it meanwhile: their version stays", r.ID, c.Op, quoteName(c.Path))
		if c.Kept != "" {
			line += "; the command's is kept at " + quoteName(c.Kept)
		}
		out = append(out, line)
	}
	for _, w := range r.Warnings {
		out = append(out, fmt.Sprintf("command %s: %s", r.ID, escapeText(w)))
	}
	return out
}
