package main

import (
	"context"
	"fmt"
	"io"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

var readCmd = &command{
	name:    "read",
	args:    "PATH [--offset N] [--limit N] [--full] [--encoding E] [--json]",
	summary: "print a file and remember what was read",
	help: `Read prints the file's text (UTF-8 with LF line endings, whatever the
file uses on disk) and records its SHA-256 in the session, so that a later
write or edit in the same session succeeds only if the file is unchanged.

--offset and --limit select lines (1-based); such a partial read lets edit
change the file, but not a whole-file write.

Like the tools a model calls, read prints at most 256 KiB at a time and
cuts a line longer than 2,000 bytes (marked, with its length), whatever
the file: it then says on stderr where to go on (--offset N). --full prints
the lines asked for whole, up to the file size limit, for piping a file
through editguard on purpose.

With --json it prints {path, content, sha256, size_bytes, mtime_ms,
total_lines, encoding, line_ending, truncated}.`,
}

func runRead(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(readCmd.name)
	var opts editguard.ReadOptions
	fs.IntVar(&opts.Offset, "offset", 0, "first line to print, 1-based")
	fs.IntVar(&opts.Limit, "limit", 0, "most lines to print (0: all)")
	fs.StringVar(&opts.Encoding, "encoding", "", "the file's legacy encoding (gbk, shift_jis, windows-1252, ...)")
	full := fs.Bool("full", false, "print the lines whole, however long (up to the file size limit)")
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, readCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(readCmd.name, "read takes exactly one PATH, got %d", len(pos))
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	if !*full {
		opts.MaxBytes, opts.MaxLineBytes = cliReadBytes, toolset.MaxLineBytes
	}
	r, err := s.Read(ctx, pos[0], &opts)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	if _, err = io.WriteString(e.stdout, r.Content); err != nil {
		return err
	}
	if r.LinesCut {
		fmt.Fprintf(e.stderr, "editguard: lines longer than %d bytes are cut where marked; --full prints them whole\n", toolset.MaxLineBytes)
	}
	switch {
	case r.NextOffset > 0 && *full:
		// --full stops only at the file size limit.
		fmt.Fprintf(e.stderr, "editguard: stopped at the file size limit, before line %d of %d: go on with --offset %d, or raise --max-file-size\n",
			r.NextOffset, r.TotalLines, r.NextOffset)
	case r.NextOffset > 0:
		fmt.Fprintf(e.stderr, "editguard: stopped at %d KiB, before line %d of %d: go on with --offset %d, or print it all with --full\n",
			cliReadBytes>>10, r.NextOffset, r.TotalLines, r.NextOffset)
	}
	return nil
}

// cliReadBytes is how much text read prints at a time without --full: as
// the tools bound what a model reads, so does the command line, which
// agents call through their shells.
const cliReadBytes = 256 << 10
