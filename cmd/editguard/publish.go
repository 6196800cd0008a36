package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/editguard/editguard"
)

var publishCmd = &command{
	name:    "publish",
	args:    "[--remote NAME] [--branch NAME] [--session NAME] [--json]",
	summary: "land this workspace's guarded changes on a shared git branch",
	help: `Publish takes the files that guarded changes (write, edit, restore, delete,
move, apply, hooks) touched since the last publish and lands them on the
remote branch as one commit, built on the branch's current head with
exactly those files replaced, added or deleted.

A file is published only if the branch still has the content its first
unpublished change started from. If another host changed it upstream in
the meantime, publish refuses with STALE_FILE (exit 3), shows what changed
upstream, and publishes nothing; "editguard pull" then lists the file as a
conflict. Content is never merged inside a file. A file changed after its
last guarded change by something other than editguard is refused too,
since the ledger does not account for it.

The push carries a lease on the head the commit was built on: if the
branch moved meanwhile, publish fetches and checks again, a few times,
then gives up with BUSY. The branch is only ever at its old head or at the
complete new commit. The commit's author and message name the sessions
and tools that made the changes; the publish is recorded in the ledger.

--session publishes only the files that session changed. Git's HEAD, index
and branches are left alone. See docs/DISTRIBUTED.md.`,
}

func runPublish(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(publishCmd.name)
	var o editguard.PublishOptions
	fs.StringVar(&o.Remote, "remote", "origin", "the git remote `NAME` (or URL)")
	fs.StringVar(&o.Branch, "branch", "", "the remote branch `NAME` (default: the current branch)")
	fs.StringVar(&o.Session, "session", "", "publish only the files session `NAME` changed")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, publishCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(publishCmd.name, "publish takes no arguments, got %q", pos)
	}
	ws, err := e.workspace()
	if err != nil {
		return err
	}
	s := ws.NewSession(e.sessionName)
	done := e.progress("publishing")
	r, err := s.Publish(ctx, &o)
	done()
	if err != nil {
		var ge *editguard.Error
		if !e.json && errors.As(err, &ge) && ge.Code == editguard.CodeStaleFile {
			printStaleFiles(e, ge)
		}
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	if len(r.Files) == 0 {
		fmt.Fprintln(e.stdout, "nothing to publish")
		return nil
	}
	if r.NewHead == r.OldHead {
		fmt.Fprintf(e.stdout, "%s/%s already has these files (head %s)\n", r.Remote, r.Branch, short(r.NewHead))
	} else {
		fmt.Fprintf(e.stdout, "published %s to %s/%s: %s..%s\n", plural(len(r.Files), "file"), r.Remote, r.Branch, short(r.OldHead), short(r.NewHead))
	}
	for _, f := range r.Files {
		fmt.Fprintf(e.stdout, "  %-9s %s (%s: %s)\n", f.Op, quoteName(f.Path), escapeText(strings.Join(f.Sessions, ", ")), escapeText(strings.Join(f.Tools, ", ")))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", escapeText(w))
	}
	return nil
}

// printStaleFiles prints the files of a publish's STALE_FILE with what
// changed upstream (or which local change editguard does not account for).
func printStaleFiles(e *env, ge *editguard.Error) {
	files, _ := ge.Details["files"].([]map[string]any)
	for _, f := range files {
		where := "upstream"
		if f["side"] == "local" {
			where = "here, outside editguard"
		}
		fmt.Fprintf(e.stderr, "%s: changed %s (%s)\n", quoteName(fmt.Sprint(f["path"])), where, escapeText(fmt.Sprint(f["reason"])))
		if d, ok := f["changes"].(string); ok && d != "" {
			writeDiff(e.stderr, d, false)
		}
	}
}

func short(oid string) string { return oid[:min(len(oid), 12)] }

// plural writes "1 file", "2 files".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
