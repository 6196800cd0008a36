package main

import (
	"context"

	"github.com/editguard/editguard"
)

var editCmd = &command{
	name:    "edit",
	args:    "PATH --old S --new S [--all] [--allow-placeholders] [--no-merge] [--expect-sha256 H] [--expect-mtime-ms MS] [--expect-size N] [--require-all] [--dry-run] [--yes] [--json]",
	summary: "replace one exact string in a file",
	help: `Edit replaces the text --old with --new in PATH. --old must occur exactly
once (or use --all to replace every occurrence); the replacement is literal.
The file must have been read by this session (a partial read with --offset
or --limit is enough) and still have the bytes that were read, or match
--expect-sha256, --expect-mtime-ms and --expect-size (those given; all three
with --require-all); otherwise nothing is written and the exit code is 3.
If the file changed since the read but not in the lines --old spans (and
--old occurs once in what was read and once now), the edit is applied on
top of that change, which is kept and shown on stderr; --no-merge refuses
it instead. An empty --old creates PATH, which must not exist, with the text
--new.

Confirmation: when standard input is a terminal and --yes is not given, the
diff is shown on standard error and the answer to "Apply this change? [y/N]"
is read from standard input (default no, exit 4). The file's lock is not held
while waiting; if the file changes meanwhile, nothing is written (exit 3).`,
}

func runEdit(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(editCmd.name)
	var m mutationFlags
	m.add(fs, e)
	var ed editguard.Edit
	fs.StringVar(&ed.OldString, "old", "", "the exact text `S` to replace")
	fs.StringVar(&ed.NewString, "new", "", "the replacement text `S`")
	fs.BoolVar(&ed.ReplaceAll, "all", false, "replace every occurrence of --old")
	var opts editguard.EditOptions
	fs.StringVar(&opts.Encoding, "encoding", "", "the file's legacy encoding `E`")
	fs.BoolVar(&opts.AllowPlaceholders, "allow-placeholders", false, "let --new hold text such as \"// ... rest of code ...\" that is meant literally")
	fs.BoolVar(&opts.NoMerge, "no-merge", false, "refuse the edit if the file changed since the read, even where it could merge over that change")
	pos, err := parseCommand(e, editCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(editCmd.name, "edit takes exactly one PATH, got %d", len(pos))
	}
	if !flagWasSet(fs, "old") || !flagWasSet(fs, "new") {
		return usagef(editCmd.name, "edit needs --old and --new")
	}
	if opts.Precondition, err = m.precondition(editCmd.name, false); err != nil {
		return err
	}
	opts.DryRun = m.dryRun
	s, err := e.session()
	if err != nil {
		return err
	}
	m.askOnTerminal(e, s)
	r, err := s.Edit(ctx, pos[0], []editguard.Edit{ed}, &opts)
	if err != nil {
		return err
	}
	return printResult(e, "edited", r)
}
