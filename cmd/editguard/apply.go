package main

import (
	"context"
	"fmt"
	"io"

	"github.com/editguard/editguard"
)

var applyCmd = &command{
	name:    "apply",
	args:    "[--dry-run] [--no-merge] [--yes] [--json] < PATCH",
	summary: "apply a multi-file patch from stdin, entirely or not at all",
	help: `Apply reads a patch on standard input, in the apply_patch format
("*** Begin Patch" ... "*** End Patch") or as a unified diff (git diff,
diff -u), and applies it to every file it names, or to none: each existing
file must have been read in this session and be unchanged since (exit 3
otherwise), and each hunk must match exactly one place. A file changed
since the read is patched anyway when every hunk replaces lines that
change left alone: the hunks go on top of it, which is kept and shown;
--no-merge refuses instead. The files are
replaced under a durable journal: if the process dies midway, the next
editguard command on the workspace puts every file back as it was.
Everything replaced is kept in history.

At a terminal, apply shows the diffs and asks first, unless --yes is given.`,
}

func runApply(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(applyCmd.name)
	var m mutationFlags
	fs.BoolVar(&m.dryRun, "dry-run", false, "check the patch and show the diffs, write nothing")
	fs.BoolVar(&m.yes, "yes", false, "do not ask for confirmation at a terminal")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	noMerge := fs.Bool("no-merge", false, "refuse a file changed since the read, even where the hunks could merge over that change")
	pos, err := parseCommand(e, applyCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(applyCmd.name, "apply reads the patch on standard input and takes no arguments, got %d", len(pos))
	}
	if isTerminal(e.stdin) {
		// Nothing would show that apply waits for the patch.
		fmt.Fprintln(e.stderr, "editguard: reading the patch from the terminal: paste it and end with Ctrl-D (or: editguard apply < change.patch)")
	}
	text, err := io.ReadAll(io.LimitReader(e.stdin, 64<<20))
	if err != nil {
		return err
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	if tty := openTTY(); tty != nil && !m.yes && !m.dryRun {
		defer tty.Close()
		s.SetApprover(newPrompter(e, tty))
	}
	r, err := s.ApplyPatch(ctx, string(text), &editguard.PatchOptions{DryRun: m.dryRun, NoMerge: *noMerge})
	if err != nil {
		return err
	}
	return printPatch(e, r, func(f editguard.PatchFile) string {
		target := quoteName(f.Path)
		if f.MovedTo != "" {
			target += " -> " + quoteName(f.MovedTo)
		}
		if f.Merged {
			// The other change the hunks went on top of, kept.
			fmt.Fprintf(e.stderr, "%s had changed since your read; the patch was merged on top of that change:\n", quoteName(f.Path))
			writeDiff(e.stderr, f.ExternalDiff, false)
			return fmt.Sprintf("%s %s (history %s, merged)", f.Op, target, f.BackupVersion)
		}
		return fmt.Sprintf("%s %s (history %s)", f.Op, target, f.BackupVersion)
	}, fmt.Sprintf("transaction %s (editguard undo %s puts every file back)", r.TxID, r.TxID))
}

// printPatch prints the result of a patch or an undo: as JSON, as the
// diffs of a dry run, or as a line per file (line), a closing line and the
// warnings.
func printPatch(e *env, r *editguard.PatchResult, line func(editguard.PatchFile) string, closing string) error {
	if e.json {
		return e.printJSON(r)
	}
	if r.DryRun {
		for _, f := range r.Files {
			writeDiff(e.stdout, f.Diff, false)
		}
		fmt.Fprintf(e.stderr, "dry run: %d files not changed\n", len(r.Files))
		return nil
	}
	for _, f := range r.Files {
		fmt.Fprintln(e.stdout, line(f))
	}
	fmt.Fprintln(e.stdout, closing)
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", escapeText(w))
	}
	return nil
}
