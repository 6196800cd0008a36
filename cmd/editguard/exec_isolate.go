package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/editguard/editguard"
)

// isolateEnv sets exec's --isolate default (auto, on or off).
const isolateEnv = "EDITGUARD_ISOLATE"

// isolateDefault is --isolate's default: $EDITGUARD_ISOLATE, else auto.
func isolateDefault() string {
	if v := os.Getenv(isolateEnv); v != "" {
		return v
	}
	return "auto"
}

// runIsolatable runs argv for the command c begun in the workspace root
// and ends c: isolated unless mode is off (see exec_isolate_linux.go), in
// the isolation pre prepared for the root;
// when isolation cannot be set up, in the tree itself as without it
// (auto, said once on stderr) or not at all (on, an error). It returns
// the command's exit status and what End or EndIsolated found.
func runIsolatable(ctx context.Context, e *env, c commandEnder, pre *preparedIsolation, argv []string, mode string) (int, *editguard.CommandResult, error) {
	end := context.WithoutCancel(ctx)
	if mode == "off" {
		status := runCommand(e, argv)
		res, err := c.End(end)
		return status, res, err
	}
	iso, err := pre.iso, pre.err
	if err == nil {
		status, serr := iso.run(e, argv, func(pid int, mntNS string) error {
			iso.claim()
			return c.Isolate(end, iso.dir, pid, mntNS)
		})
		if serr == nil {
			res, err := iso.end(end, e, c)
			return status, res, err
		}
		err = serr
		if mode == "on" {
			endUnrun(end, c)
		}
		iso.discard()
	} else if mode == "on" {
		endUnrun(end, c)
	}
	if mode == "on" {
		return 0, nil, &editguard.Error{
			Code:         editguard.CodeInvalidArgument,
			Message:      fmt.Sprintf("the command cannot run isolated (%s); it was not run", escapeText(err.Error())),
			RecoveryHint: "run it with --isolate=auto or off, where changes others make to the tree while it runs are recorded as its own",
		}
	}
	fmt.Fprintf(e.stderr, "editguard: exec: not isolated (%s): the command runs in the tree itself, and a change someone else makes there while it runs is recorded as its own\n", escapeText(err.Error()))
	status := runCommand(e, argv)
	res, err := c.End(end)
	return status, res, err
}

// preparedIsolation is what prepareIsolation made: the isolation, its
// helper started, or why there is none.
type preparedIsolation struct {
	iso *isolation
	err error
}

// prepareIsolation makes the overlay's directories for the workspace root
// and starts the helper for argv (isolation.start), before the command is
// begun: the helper starts and mounts the overlay while the first
// checkpoint is taken, and runs the command only once runIsolatable says
// so. Not with mode off; and only for a root whose state directory is
// there (the helper mounts it over the overlay's), else runIsolatable
// starts it after the checkpoint. If the command is not begun, cancel
// stops the helper.
func prepareIsolation(e *env, root string, argv []string, mode string) *preparedIsolation {
	if mode == "off" {
		return nil
	}
	p := &preparedIsolation{}
	if p.iso, p.err = newIsolation(root); p.err != nil {
		return p
	}
	if st, err := os.Lstat(filepath.Join(root, editguard.StateDir)); err != nil || !st.IsDir() {
		return p
	}
	if err := p.iso.start(e, argv); err != nil {
		p.iso.discard()
		p.iso, p.err = nil, err
	}
	return p
}

// cancel stops what prepareIsolation started, for a command not begun.
func (p *preparedIsolation) cancel() {
	if p != nil && p.iso != nil {
		p.iso.cancel()
	}
}

// endUnrun ends c, whose command did not run: as an isolated command that
// changed nothing, so that nothing changed in the tree meanwhile is
// recorded as its; where that cannot be, as End does.
func endUnrun(ctx context.Context, c commandEnder) {
	empty, err := os.MkdirTemp("", "editguard-unrun-")
	if err == nil {
		defer os.Remove(empty)
		if _, err = c.EndIsolated(ctx, empty); err == nil {
			return
		}
	}
	c.End(ctx)
}

// printConflicts tells of an isolated command's changes that were not put
// into the tree, and of the changes others made while it ran.
func printConflicts(e *env, res *editguard.CommandResult) {
	outside := 0
	for _, c := range res.Changes {
		if c.ChangedBy == editguard.OutsideChange {
			outside++
		}
	}
	if outside > 0 {
		fmt.Fprintf(e.stderr, "editguard: %d file(s) changed in the tree by someone else while the command ran were not recorded as its changes\n", outside)
	}
	for _, c := range res.Conflicts {
		kept := "it is not kept"
		if c.Kept != "" {
			kept = "its version is kept at " + quoteName(c.Kept)
		}
		fmt.Fprintf(e.stderr, "editguard: conflict: the command %s %s, but it was %s; the tree keeps that; %s\n",
			c.Op, quoteName(c.Path), escapeText(c.Reason), kept)
	}
}
