package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/editguard/editguard"
)

var writeCmd = &command{
	name:    "write",
	args:    "PATH [--expect-sha256 H] [--expect-mtime-ms MS] [--expect-size N] [--require-all] [--must-not-exist] [--mode overwrite|create|append] [--allow-placeholders] [--dry-run] [--yes] [--json] [--line-ending lf|crlf] [--encoding E] [--bom] [--no-create-parents] [--file-mode MODE] [--content TEXT]",
	summary: "replace a file with the text on standard input",
	help: `Write replaces PATH with the text read from standard input (or given
with --content), atomically. When standard input is a terminal, write says
on standard error that it is reading it, until Ctrl-D.
An existing file must have been read in full by this session and still have
the bytes that were read (or match --expect-sha256, --expect-mtime-ms and
--expect-size, those given; all three with --require-all); otherwise nothing
is written and the exit code is 3. A new file needs no read; --must-not-exist
refuses to replace one that appeared meanwhile. The file keeps its encoding,
BOM and line endings unless --encoding or --line-ending say otherwise.
Missing parent directories are created, unless --no-create-parents is given
(then a missing one fails with NOT_FOUND). --file-mode sets a new file's
permission bits, in octal (0600); an existing file keeps its own. A new name
that is not portable gets a warning on standard error, or is refused (see the
global flag --names). With --json the result carries the file's mode,
encoding_used and line_ending.

Confirmation: standard input carries the content, so the question is asked
on the controlling terminal (/dev/tty), and only when standard output is a
terminal too: a person running the command sees the diff on standard error
and answers "Apply this change? [y/N]" (default no, exit 4). Scripts and
agents without a terminal are never asked; --yes skips the question.`,
}

func runWrite(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(writeCmd.name)
	var m mutationFlags
	m.add(fs, e)
	var opts editguard.WriteOptions
	mustNotExist := fs.Bool("must-not-exist", false, "create only: fail if the file exists")
	fs.StringVar(&opts.LineEnding, "line-ending", "", "convert the whole file to `lf` or `crlf` (default: keep the file's own)")
	fs.StringVar(&opts.Encoding, "encoding", "", "write in encoding `E` (default: the file's own, UTF-8 for new files)")
	fs.BoolVar(&opts.BOM, "bom", false, "start a new UTF-8 file with a byte order mark")
	fs.StringVar(&opts.Mode, "mode", "", "`overwrite` (default), create (fail if the file exists) or append (add at the end; needs no read)")
	fs.BoolVar(&opts.AllowPlaceholders, "allow-placeholders", false, "write text such as \"// ... rest of code ...\" that is meant literally")
	noParents := fs.Bool("no-create-parents", false, "fail with NOT_FOUND if the file's directory does not exist, instead of creating it")
	fileMode := fs.String("file-mode", "", "permission bits of a new file, in octal `MODE` such as 0600 (default: 0666 less the umask)")
	text := fs.String("content", "", "write `TEXT` instead of what standard input holds")
	pos, err := parseCommand(e, writeCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(writeCmd.name, "write takes exactly one PATH, got %d", len(pos))
	}
	if opts.LineEnding != "" && opts.LineEnding != "lf" && opts.LineEnding != "crlf" {
		return usagef(writeCmd.name, "--line-ending must be lf or crlf, got %q", opts.LineEnding)
	}
	if opts.Precondition, err = m.precondition(writeCmd.name, *mustNotExist); err != nil {
		return err
	}
	opts.DryRun = m.dryRun
	if *noParents {
		opts.CreateParents = new(bool)
	}
	if *fileMode != "" {
		mode, err := strconv.ParseUint(strings.TrimPrefix(*fileMode, "0o"), 8, 32)
		if err != nil {
			return usagef(writeCmd.name, "--file-mode must be an octal mode such as 0644, got %q", *fileMode)
		}
		opts.FileMode = new(uint32(mode))
	}
	var content []byte
	if flagWasSet(fs, "content") {
		content = []byte(*text)
	} else {
		if isTerminal(e.stdin) {
			// Else a person who forgot the content sees nothing happen.
			fmt.Fprintf(e.stderr, "editguard: reading the new content of %s from standard input; end it with Ctrl-D (Ctrl-C cancels)\n", quoteName(pos[0]))
		}
		if content, err = io.ReadAll(e.stdin); err != nil {
			return err
		}
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	if !m.yes && !m.dryRun && isTerminal(e.stdout) {
		if tty := openTTY(); tty != nil {
			defer tty.Close()
			s.SetApprover(newPrompter(e, tty))
		}
	}
	r, err := s.Write(ctx, pos[0], string(content), &opts)
	if err != nil {
		return err
	}
	if err := printResult(e, "wrote", r); err != nil || e.json {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", escapeText(w))
	}
	return nil
}
