package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/editguard/editguard/toolset"
)

var findCmd = &command{
	name:    "find",
	args:    "PATTERN [--path DIR] [--json]",
	summary: "list the files whose names match a glob, honouring .gitignore",
	help: `Find lists the files under DIR (default: the root) whose path matches
PATTERN: "*", "?" and "[...]" within a name, "**" across directories; a
pattern without "/" matches names at any depth ("*.go"). Files .gitignore
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
1,000). Files .gitignore excludes, binary files, files over 8 MiB, .git
directories and .editguard are skipped, and a last line says how many
files it did not search and why (binary ones only when nothing matched);
symlinks are not followed. It records no read.`,
}

var treeCmd = &command{
	name:    "tree",
	args:    "[DIR] [--depth N]",
	summary: "show the directory tree",
	help: `Tree shows the directories and files under DIR (default: the root) as an
indented tree, to --depth levels (default 3), at most 1,000 entries. .git
is shown but not opened; .editguard is not shown.`,
}

// runTool runs one of the file tools as a model would, and prints its text
// (or, with --json, its structured result).
func runTool(ctx context.Context, e *env, name string, args map[string]any) error {
	s, err := e.session()
	if err != nil {
		return err
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	out, err := toolset.New(s, nil).Execute(ctx, name, raw)
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
	fs.BoolVar(&e.json, "json", false, "print the counts as JSON")
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
	return runTool(ctx, e, "search_text", a)
}

func runTree(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(treeCmd.name)
	depth := fs.Int("depth", 0, "show `N` levels (default 3)")
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
