package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/editguard/editguard/internal/ui"
)

var uiCmd = &command{
	name:    "ui",
	args:    "[--addr 127.0.0.1:0] [--open]",
	summary: "serve a local web page: the timeline of changes, diffs, restore and rewind",
	help: `UI serves a web page for the person watching agents work on the workspace:

  - a summary per session: files changed, conflicts prevented (stale
    writes refused), lost updates caught (edits merged over another
    writer's change, shell commands that replaced one) and commands run;
  - the timeline of every change and refusal the ledger records, newest
    first, live while agents work: time, session, source (MCP, hook, shell,
    CLI, recover), tool, file(s), lines added and removed, outcome (merged
    and overwrote name the change they went over); filters by session,
    file, tool, source and outcome; a patch, a shell command or a rewind
    is one row that opens to its files;
  - each change's diff, inline or side by side, with notes on encoding and
    line endings; a refusal with what the agent would have overwritten (the
    STALE_FILE diff, when the ledger has it);
  - every version of a file, a diff between any two, and a restore;
  - everything one session changed, with a rewind (dry run first) and the
    undo of its patches;
  - the ledger's hash chain status in the header, with the record where it
    breaks if it does.

Restore, rewind and undo are the guarded changes of "editguard restore",
"rewind" and "undo", made by the session given before the command: a
restore refuses with STALE_FILE, and changes nothing, if the file changed
since the page showed it.

The page listens on --addr, on the loopback interface only (127.0.0.1, ::1
or localhost; port 0 picks a free one). The command prints the page's
address, which carries a random token; every request needs it (the page
keeps it in a cookie), and every change also needs a request from the page
itself (same origin). --open opens the address in the default browser
(xdg-open or open). Nothing on the page is fetched from another host.
SIGINT or SIGTERM stops the server.`,
}

func runUI(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(uiCmd.name)
	addr := fs.String("addr", "127.0.0.1:0", "listen on `ADDR` (a loopback address)")
	open := fs.Bool("open", false, "open the page in the default browser")
	pos, err := parseCommand(e, uiCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(uiCmd.name, "ui takes no arguments, got %q", pos)
	}
	if err := ui.CheckAddr(*addr); err != nil {
		return usagef(uiCmd.name, "--addr: %v", err)
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := ui.New(s.Workspace(), s, nil)
	defer srv.Close()
	u := srv.URL(l.Addr().String())
	if e.json {
		// One line, at once: the answer is the address, and the server
		// runs on until it is stopped.
		if err := json.NewEncoder(e.stdout).Encode(map[string]string{"status": "ok", "url": u}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "editguard ui: %s\n", u)
	}
	if *open {
		openBrowser(e, u)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx, l)
}

// openBrowser opens u with the system's opener, if there is one.
func openBrowser(e *env, u string) {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	path, err := exec.LookPath(opener)
	if err != nil {
		fmt.Fprintf(e.stderr, "editguard ui: %s not found; open the address above yourself\n", opener)
		return
	}
	cmd := exec.Command(path, u)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "editguard ui: %s: %v\n", opener, err)
		return
	}
	go func() { _ = cmd.Wait() }()
}
