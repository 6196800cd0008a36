package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/editguard/editguard/toolset"
)

var findCmd = &command{
	name:    "find",
	args:    "PATTERN [--path DIR] [--json]",
	summary: "list the files whose names match a glob, honouring .gitignore",
	help: `Find lists the files under DIR (default: the root) whose path matches
PATTERN: "*", "?" and "[...]" within a name, "**" across directories,
"{a,b}" either alternative ("**/*.{go,md}"); a pattern without "/"
matches names at any depth ("*.go"). Files .gitignore
excludes (at any level), .git directories and .editguard are skipped, and
symlinks are not followed. At most 1,000 paths are listed.`,
}

var searchCmd = &command{
	name:    "search",
	args:    "PATTERN [--path DIR] [--glob G] [--literal] [--ignore-case] [--max N] [--json]",
	summary: "search file contents for a regular expression, honouring .gitignore",
	help: `Search prints "path:line: text" for each line under DIR (default: the
root) that matches PATTERN, an RE2 regular expression (plain text with
--literal), in path order, at most --max lines (default 100, at most
1,000). --glob takes "*", "?", "[...]", "**" and "{a,b}" as find does.
Files .gitignore excludes, binary files, files over 8 MiB, .git
directories and .editguard are skipped; symlinks are not followed. It
records no read.

The matching lines go to stdout; the heading and a last line saying how
many files it did not search and why (binary ones only when nothing
matched) go to stderr, so that the output pipes like grep's. It exits 0
when a line matched and 1 when none did, as grep and rg do (and 1 for an
error, which it says on stderr).

With --json it prints {matches, truncated, results: [{path, line,
text}], skipped}.`,
}

var treeCmd = &command{
	name:    "tree",
	args:    "[DIR] [--depth N] [--json]",
	summary: "show the directory tree",
	help: `Tree shows the directories and files under DIR (default: the root) as an
indented tree, to --depth levels (default 3), at most 1,000 entries. .git
is shown but not opened; .editguard is not shown. With --json it prints
the tree as nested objects, as the directory_tree tool's structured
result.`,
}

// execTool runs one of the file tools as a model would.
func execTool(ctx context.Context, e *env, name string, args map[string]any) (*toolset.Output, error) {
	s, err := e.session()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return toolset.New(s, nil).Execute(ctx, name, raw)
}

// runTool runs one of the file tools as a model would, and prints its text
// (or, with --json, its structured result).
func runTool(ctx context.Context, e *env, name string, args map[string]any) error {
	out, err := execTool(ctx, e, name, args)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(out.Structured)
	}
	_, err = io.WriteString(e.stdout, out.Text)
	return err
}

func runFind(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(findCmd.name)
	dir := fs.String("path", "", "search under `DIR` (default: the root)")
	fs.BoolVar(&e.json, "json", false, "print the paths as a JSON array")
	pos, err := parseCommand(e, findCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(findCmd.name, "find takes exactly one PATTERN, got %d", len(pos))
	}
	a := map[string]any{"pattern": pos[0]}
	if *dir != "" {
		a["path"] = *dir
	}
	return runTool(ctx, e, "find_files", a)
}

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(searchCmd.name)
	dir := fs.String("path", "", "search under `DIR` (default: the root)")
	glob := fs.String("glob", "", "only files whose path matches glob `G`")
	literal := fs.Bool("literal", false, "PATTERN is plain text")
	fold := fs.Bool("ignore-case", false, "ignore case")
	maxN := fs.Int("max", 0, "print at most `N` matching lines (default 100)")
	fs.BoolVar(&e.json, "json", false, "print the matches as JSON")
	pos, err := parseCommand(e, searchCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(searchCmd.name, "search takes exactly one PATTERN, got %d", len(pos))
	}
	a := map[string]any{"pattern": pos[0], "literal": *literal, "case_insensitive": *fold}
	if *dir != "" {
		a["path"] = *dir
	}
	if *glob != "" {
		a["glob"] = *glob
	}
	if *maxN != 0 {
		a["max_results"] = *maxN
	}
	done := e.progress("searching")
	out, err := execTool(ctx, e, "search_text", a)
	done()
	if err != nil {
		return err
	}
	matched := len(out.Structured.(map[string]any)["results"].([]toolset.SearchMatch)) > 0
	if e.json {
		err = e.printJSON(out.Structured)
	} else {
		err = printSearch(e, out.Text)
	}
	if err == nil && !matched {
		return exitStatus(exitError)
	}
	return err
}

// printSearch prints search_text's text as a command line prints a
// search: the matching lines on stdout, its heading (the first line) and
// what it did not search (a last line) on stderr.
func printSearch(e *env, text string) error {
	heading, rest, _ := strings.Cut(text, "\n")
	fmt.Fprintln(e.stderr, heading)
	if i := strings.LastIndex(rest, "Not searched: "); i >= 0 && (i == 0 || rest[i-1] == '\n') {
		defer fmt.Fprint(e.stderr, rest[i:])
		rest = rest[:i]
	}
	_, err := io.WriteString(e.stdout, rest)
	return err
}

func runTree(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(treeCmd.name)
	depth := fs.Int("depth", 0, "show `N` levels (default 3)")
	fs.BoolVar(&e.json, "json", false, "print the tree as JSON")
	pos, err := parseCommand(e, treeCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef(treeCmd.name, "tree takes at most one DIR, got %d", len(pos))
	}
	a := map[string]any{}
	if len(pos) == 1 {
		a["path"] = pos[0]
	}
	if *depth != 0 {
		a["depth"] = *depth
	}
	return runTool(ctx, e, "directory_tree", a)
}
