package main

import (
	"context"
	"io"

	"github.com/editguard/editguard"
)

var readCmd = &command{
	name:    "read",
	args:    "PATH [--offset N] [--limit N] [--encoding E] [--json]",
	summary: "print a file and remember what was read",
	help: `Read prints the file's text (UTF-8 with LF line endings, whatever the
file uses on disk) and records its SHA-256 in the session, so that a later
write or edit in the same session succeeds only if the file is unchanged.

--offset and --limit select lines (1-based); such a partial read lets edit
change the file, but not a whole-file write.

With --json it prints {path, content, sha256, size_bytes, mtime_ms,
total_lines, encoding, line_ending, truncated}.`,
}

func init() {
	readCmd.run = runRead
	register(readCmd)
}

func runRead(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(readCmd.name)
	var opts editguard.ReadOptions
	fs.IntVar(&opts.Offset, "offset", 0, "first line to print, 1-based")
	fs.IntVar(&opts.Limit, "limit", 0, "most lines to print (0: all)")
	fs.StringVar(&opts.Encoding, "encoding", "", "the file's legacy encoding (gbk, shift_jis, windows-1252, ...)")
	fs.BoolVar(&e.json, "json", false, "print the result as JSON")
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
	r, err := s.Read(ctx, pos[0], &opts)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	_, err = io.WriteString(e.stdout, r.Content)
	return err
}
