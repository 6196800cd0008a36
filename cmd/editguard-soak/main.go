// Command editguard-soak runs editguard under sustained concurrent load and
// checks afterwards that nothing was lost, torn, leaked or unaccounted for.
//
// Usage:
//
//	editguard-soak [-mode soak|load] [-duration D] [-p N] [-q N] [-files N] [flags]
//
// In soak mode (the default) P CLI workers (a fresh editguard process per
// call), Q MCP sessions over streamable HTTP to one "editguard serve --http"
// process, and one unguarded writer (os.ReadFile/os.WriteFile, no lock)
// append unique marker lines to the same few files. In load mode Q MCP
// sessions (32 by default) read and edit 8 shared files, and the latency of
// each call is reported.
//
// Afterwards every acknowledged marker must be in its file (or have been
// overwritten by the unguarded writer, provably), every refusal must be
// STALE_FILE, the ledger must verify and agree with what every client was
// told, every displaced version must be in history with its recorded
// sha256, and no temp file may be left. The program prints a summary and
// exits 1 if any of that failed; see package internal/soak for the rules.
//
// Without -editguard it builds the editguard command of this module with
// "go build" first.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/editguard/editguard/internal/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit code: 0 when every
// check passed, 1 on a violation or a failed run, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("editguard-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		mode     = fs.String("mode", "soak", "`soak` (CLI, MCP and an unguarded writer) or load (MCP sessions only)")
		duration = fs.Duration("duration", time.Minute, "how long the writers run")
		p        = fs.Int("p", -1, "CLI workers (default 4 in soak mode, 0 in load mode)")
		q        = fs.Int("q", -1, "MCP sessions (default 4 in soak mode, 32 in load mode)")
		files    = fs.Int("files", -1, "shared files (default 4 in soak mode, 8 in load mode)")
		rotate   = fs.Duration("rotate", time.Minute, "move to a fresh set of files this often, so files stay small (0: never)")
		pause    = fs.Duration("unguarded-pause", 20*time.Millisecond, "mean pause between the unguarded writer's writes (soak mode; 0: no unguarded writer)")
		think    = fs.Duration("unguarded-think", 5*time.Millisecond, "mean time the unguarded writer takes between reading a file and writing it back")
		bin      = fs.String("editguard", "", "editguard binary to test (default: go build this module's cmd/editguard)")
		dir      = fs.String("dir", "", "directory for the workspace, which must be empty or absent (default: a temporary directory, removed afterwards)")
		every    = fs.Duration("progress", 10*time.Second, "print progress this often (0: never)")
		own      = fs.Bool("own", false, "give each guarded writer files of its own, so that no two change the same file (needs -files at least the writers, and -unguarded-pause 0 in soak mode)")
		pad      = fs.Int("pad", 0, "bytes of padding each file starts with (131072 or more: files editguard links into history rather than copies)")
	)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "editguard-soak: unexpected arguments %q\n", fs.Args())
		return 2
	}
	c := soak.Config{
		Mode: soak.Mode(*mode), Duration: *duration, Rotate: *rotate, Pad: *pad, Own: *own,
		Progress: stderr, ProgressEvery: *every,
	}
	switch c.Mode {
	case soak.ModeSoak:
		c.CLIWorkers, c.MCPSessions, c.Files, c.UnguardedPause = orDefault(*p, 4), orDefault(*q, 4), orDefault(*files, 4), *pause
		c.UnguardedThink = *think
	case soak.ModeLoad:
		c.CLIWorkers, c.MCPSessions, c.Files = orDefault(*p, 0), orDefault(*q, 32), orDefault(*files, 8)
	default:
		fmt.Fprintf(stderr, "editguard-soak: -mode must be soak or load, not %q\n", *mode)
		return 2
	}

	tmp, err := os.MkdirTemp("", "editguard-soak-")
	if err != nil {
		fmt.Fprintf(stderr, "editguard-soak: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	c.Dir = *dir
	if c.Dir == "" {
		c.Dir = filepath.Join(tmp, "run")
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "editguard-soak: %v\n", err)
		return 1
	}
	if ents, _ := os.ReadDir(c.Dir); len(ents) != 0 {
		fmt.Fprintf(stderr, "editguard-soak: %s is not empty\n", c.Dir)
		return 2
	}
	c.Editguard = *bin
	if c.Editguard == "" {
		c.Editguard = filepath.Join(tmp, "editguard")
		if err := build(ctx, c.Editguard, stderr); err != nil {
			fmt.Fprintf(stderr, "editguard-soak: build editguard: %v\n", err)
			return 1
		}
	}

	fmt.Fprintf(stderr, "editguard-soak: %s for %v in %s\n", c.Mode, c.Duration, c.WorkspaceDir())
	rep, err := soak.Run(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "editguard-soak: %v\n", err)
		return 1
	}
	rep.WriteTable(stdout)
	if !rep.OK() {
		return 1
	}
	return 0
}

func orDefault(v, def int) int {
	if v < 0 {
		return def
	}
	return v
}

// build builds this module's editguard command into out.
func build(ctx context.Context, out string, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/editguard/editguard/cmd/editguard")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	return cmd.Run()
}
