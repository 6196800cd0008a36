package main

import (
	"context"
	"fmt"

	"github.com/editguard/editguard"
)

var pullCmd = &command{
	name:    "pull",
	args:    "[--remote NAME] [--branch NAME] [--discard-local] [--json]",
	summary: "bring upstream changes of a shared git branch into the working tree",
	help: `Pull fetches the remote branch and brings each file changed upstream since
the working tree's base (the branch head of the last pull; before the
first, the merge base of HEAD and the branch) into the working tree, as a
guarded write:

  - a file not changed here since the base takes upstream's content; what
    it held goes to history, and sessions that read it must read it again;
  - a file changed here too (published or not) is left as it is and listed
    as a conflict (exit 3). With --discard-local it takes upstream's content
    instead, and the local content goes to history: "editguard history
    PATH" lists it and "editguard restore" brings it back.

Nothing is merged inside a file, and no local change is lost. Git's HEAD,
index and branches are left alone: "git status" keeps comparing with the
commit you checked out. See docs/DISTRIBUTED.md.`,
}

func runPull(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(pullCmd.name)
	var o editguard.PullOptions
	fs.StringVar(&o.Remote, "remote", "origin", "the git remote `NAME` (or URL)")
	fs.StringVar(&o.Branch, "branch", "", "the remote branch `NAME` (default: the current branch)")
	fs.BoolVar(&o.DiscardLocal, "discard-local", false, "take upstream's content for files changed here too (theirs go to history)")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, pullCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(pullCmd.name, "pull takes no arguments, got %q", pos)
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	r, err := s.Pull(ctx, &o) // no progress line: a pull may ask the person at the terminal
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printJSON(r); err != nil {
			return err
		}
	} else {
		printPull(e, r)
	}
	if len(r.Conflicts) > 0 {
		return exitStatus(exitConflict)
	}
	return nil
}

func printPull(e *env, r *editguard.PullResult) {
	fmt.Fprintf(e.stdout, "pulled %s/%s at %s", r.Remote, r.Branch, short(r.Head))
	if r.OldBase != "" && r.OldBase != r.Head {
		fmt.Fprintf(e.stdout, " (from %s)", short(r.OldBase))
	}
	fmt.Fprintf(e.stdout, ": %s updated, %s\n", plural(len(r.Updated), "file"), plural(len(r.Conflicts), "conflict"))
	for _, f := range r.Updated {
		line := fmt.Sprintf("  %-9s %s", f.Op, quoteName(f.Path))
		if f.BackupVersion != "" && f.Op != "added" {
			line += " (was kept as history " + f.BackupVersion + ")"
		}
		if f.Discarded {
			line += ", local change discarded"
		}
		fmt.Fprintln(e.stdout, line)
	}
	for _, c := range r.Conflicts {
		why := "changed here and upstream; left as it is"
		switch c.Reason {
		case "changed_both":
		case "unsupported":
			why = "a symlink, submodule or directory on one side; left as it is"
		default:
			why = c.Reason
			if c.Error != nil {
				why = c.Error.Error()
			}
		}
		fmt.Fprintf(e.stderr, "conflict: %s: %s\n", quoteName(c.Path), escapeText(why))
	}
	if len(r.Conflicts) > 0 {
		fmt.Fprintln(e.stderr, "hint: keep upstream's version with 'editguard pull --discard-local' (yours goes to history); keep yours by restoring that version afterwards and publishing")
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", escapeText(w))
	}
}
