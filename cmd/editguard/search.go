package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/editguard/editguard/toolset"
)

var findCmd = &command{
	name:    "find",
	args:    "PATTERN [--path DIR] [-z] [--json]",
	summary: "list the files whose names match a glob, honouring .gitignore",
	help: `Find lists the files under DIR (default: the root) whose path matches
PATTERN: "*", "?" and "[...]" within a name, "**" across directories,
"{a,b}" either alternative ("**/*.{go,md}"); a pattern without "/"
matches names at any depth ("*.go"). Files .gitignore
excludes (at any level), .git directories and .editguard are skipped, and
symlinks are not followed. At most 1,000 paths are listed.

A path is printed as it is unless it holds something that could act on a
terminal or mislead (see "Names" in editguard help); then it is printed
in double quotes with C escapes, as git quotes names. -z prints each path
as its exact bytes followed by a NUL instead, for xargs -0, and nothing
else on stdout. --json prints {"status": "ok", "paths": [...],
"truncated": false}; truncated is true when more files match.`,
}

var searchCmd = &command{
	name:    "search",
	args:    "PATTERN [DIR] | -e PATTERN... [DIR] [--path DIR] [--glob G] [-F] [-i] [--max N] [--json]",
	summary: "search file contents for a regular expression, honouring .gitignore",
	help: `Search prints "path:line:text" for each line under DIR (default: the
root) that matches PATTERN, an RE2 regular expression (plain text with
-F, --literal), in path order, at most --max lines (default 100, at most
1,000). As with rg, DIR may follow PATTERN or be given with --path, and
-e PATTERN, repeatable, gives the patterns instead (a line matches if
any of them does; then the one argument, if any, is the DIR).
-i, --ignore-case ignores case. --glob takes "*", "?", "[...]", "**" and
"{a,b}" as find does. Files .gitignore excludes, binary files, files over 8 MiB, .git
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
	args:    "[DIR] [--depth N] [-z] [--json]",
	summary: "show the directory tree",
	help: `Tree shows the directories and files under DIR (default: the root) as an
indented tree, to --depth levels (default 3), at most 1,000 entries. .git
is shown but not opened; .editguard is not shown. Names are quoted as
find quotes them (see "Names" in editguard help). With -z it prints the
path of each entry shown (DIR/name, a directory's ending in "/") as its
exact bytes followed by a NUL, and nothing else on stdout. With --json
it prints the tree as nested objects, as the directory_tree tool's
structured result.`,
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

func runFind(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(findCmd.name)
	dir := fs.String("path", "", "search under `DIR` (default: the root)")
	fs.BoolVar(&e.json, "json", e.json, "print the paths in a JSON object")
	nul := fs.Bool("z", false, "print each path as its exact bytes followed by a NUL")
	pos, err := parseCommand(e, findCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(findCmd.name, "find takes exactly one PATTERN, got %d", len(pos))
	}
	if *nul && e.json {
		return usagef(findCmd.name, "-z and --json are two ways to print the paths: give one")
	}
	a := map[string]any{"pattern": pos[0]}
	if *dir != "" {
		a["path"] = *dir
	}
	out, err := execTool(ctx, e, "find_files", a)
	if err != nil {
		return err
	}
	found := out.Structured.([]string)
	meta, _ := out.Meta.(map[string]any)
	more, _ := meta["truncated"].(bool)
	if e.json {
		if found == nil {
			found = []string{}
		}
		return e.printJSON(map[string]any{"paths": found, "truncated": more})
	}
	var b strings.Builder
	for _, p := range found {
		if *nul {
			b.WriteString(p + "\x00")
		} else {
			b.WriteString(quoteName(p) + "\n")
		}
	}
	if _, err := io.WriteString(e.stdout, b.String()); err != nil {
		return err
	}
	if len(found) == 0 && !*nul {
		// As the tool says it; -z prints paths only.
		_, err = io.WriteString(e.stdout, escapeLines(out.Text))
	}
	switch {
	case more && *nul:
		fmt.Fprintf(e.stderr, "editguard: more than %d files match; narrow the pattern or the --path\n", len(found))
	case more:
		_, err = fmt.Fprintf(e.stdout, "(more than %d files match; narrow the pattern or the path)\n", len(found))
	}
	return err
}

// maxSearchLines is the most lines search prints (search_text's limit).
const maxSearchLines = 1000

// patterns is search's -e: each use adds a pattern.
type patterns []string

func (p *patterns) String() string { return strings.Join(*p, ", ") }

func (p *patterns) Set(s string) error {
	if s == "" {
		return errors.New("want a pattern, got an empty one")
	}
	*p = append(*p, s)
	return nil
}

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(searchCmd.name)
	dir := fs.String("path", "", "search under `DIR` (default: the root)")
	glob := fs.String("glob", "", "only files whose path matches glob `G`")
	var literal, fold bool
	fs.BoolVar(&literal, "literal", false, "PATTERN is plain text")
	fs.BoolVar(&literal, "F", false, "PATTERN is plain text (as --literal)")
	fs.BoolVar(&fold, "ignore-case", false, "ignore case")
	fs.BoolVar(&fold, "i", false, "ignore case (as --ignore-case)")
	var pats patterns
	fs.Var(&pats, "e", "search for `PATTERN` (repeatable: a line matches if any does)")
	maxN := fs.Int("max", 0, "print at most `N` matching lines (default 100)")
	fs.BoolVar(&e.json, "json", e.json, "print the matches as JSON")
	pos, err := parseCommand(e, searchCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pats) == 0 {
		if len(pos) == 0 {
			return usagef(searchCmd.name, "search needs a PATTERN (or -e PATTERN)")
		}
		pats, pos = patterns{pos[0]}, pos[1:]
	}
	switch {
	case len(pos) > 1:
		return usagef(searchCmd.name, "search takes one PATTERN and at most one DIR, got %s after the pattern", arguments(len(pos)))
	case len(pos) == 1 && *dir != "" && pos[0] != *dir:
		return usagef(searchCmd.name, "give the directory once: as DIR or as --path, not both")
	case len(pos) == 1:
		*dir = pos[0]
	}
	if flagWasSet(fs, "max") && (*maxN < 1 || *maxN > maxSearchLines) {
		return usagef(searchCmd.name, "--max must be between 1 and %d, got %d", maxSearchLines, *maxN)
	}
	pattern := pats[0]
	if len(pats) > 1 {
		// One expression that matches where any of them does.
		alts := make([]string, len(pats))
		for i, p := range pats {
			if literal {
				p = regexp.QuoteMeta(p)
			}
			alts[i] = "(?:" + p + ")"
		}
		pattern, literal = strings.Join(alts, "|"), false
	}
	a := map[string]any{"pattern": pattern, "literal": literal, "case_insensitive": fold}
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
	results := out.Structured.(map[string]any)["results"].([]toolset.SearchMatch)
	matched := len(results) > 0
	if e.json {
		err = e.printJSON(out.Structured)
	} else {
		text := out.Text
		if len(pats) > 1 {
			// The heading names the patterns as given, not the expression.
			text = strings.Replace(text, " "+pattern+" ", " "+strings.Join(pats, " or ")+" ", 1)
		}
		err = printSearch(e, text, results)
	}
	if err == nil && !matched {
		return exitStatus(exitError)
	}
	return err
}

// printSearch prints search_text's result as a command line prints a
// search: the matching lines on stdout, each "path:line:text" with the
// path quoted as a name is (quote.go) and the text as the file holds it,
// as grep and rg print it; the text's heading (its first line, in the
// command line's words) and what it did not search (a last line) on
// stderr.
func printSearch(e *env, text string, results []toolset.SearchMatch) error {
	heading, rest, _ := strings.Cut(text, "\n")
	heading = strings.ReplaceAll(heading, "raise max_results", "raise --max")
	fmt.Fprintln(e.stderr, escapeText(heading))
	if i := strings.LastIndex(rest, "Not searched: "); i >= 0 && (i == 0 || rest[i-1] == '\n') {
		defer fmt.Fprint(e.stderr, escapeLines(rest[i:]))
	}
	var b strings.Builder
	for _, m := range results {
		fmt.Fprintf(&b, "%s:%d:%s\n", quoteName(m.Path), m.Line, m.Text)
	}
	_, err := io.WriteString(e.stdout, b.String())
	return err
}

func runTree(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(treeCmd.name)
	depth := fs.Int("depth", 0, "show `N` levels (default 3)")
	fs.BoolVar(&e.json, "json", e.json, "print the tree as JSON")
	nul := fs.Bool("z", false, "print each entry's path as its exact bytes followed by a NUL")
	pos, err := parseCommand(e, treeCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef(treeCmd.name, "tree takes at most one DIR, got %d", len(pos))
	}
	if *nul && e.json {
		return usagef(treeCmd.name, "-z and --json are two ways to print the tree: give one")
	}
	a := map[string]any{}
	if len(pos) == 1 {
		a["path"] = pos[0]
	}
	if *depth != 0 {
		a["depth"] = *depth
	}
	out, err := execTool(ctx, e, "directory_tree", a)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(out.Structured)
	}
	res := out.Structured.(map[string]any)
	top, _ := res["path"].(string)
	tree, _ := res["tree"].([]*toolset.TreeEntry)
	shown, _ := res["entries"].(int)
	var b strings.Builder
	if *nul {
		treePaths(&b, strings.TrimSuffix(top, "/"), tree)
	} else {
		b.WriteString(quoteName(strings.TrimSuffix(top, "/")) + "/\n")
		printTree(&b, tree, 1, shown)
	}
	_, err = io.WriteString(e.stdout, b.String())
	if truncated, _ := res["truncated"].(bool); truncated && *nul {
		fmt.Fprintf(e.stderr, "editguard: the tree stops at %d entries; give a DIR or a smaller --depth\n", shown)
	}
	return err
}

// printTree prints entries, at level, as directory_tree's text shows them
// (directories with "/", symlinks "-> target", "…" for what is left out),
// each name quoted as a name is (quote.go); limit is the entries the tree
// stopped at, if it did.
func printTree(b *strings.Builder, entries []*toolset.TreeEntry, level, limit int) {
	indent := strings.Repeat("  ", level)
	for _, e := range entries {
		switch e.Type {
		case "more":
			fmt.Fprintf(b, "%s… (%d more entries here; the tree stops at %d)\n", indent, e.More, limit)
		case "symlink":
			fmt.Fprintf(b, "%s%s -> %s\n", indent, quoteName(e.Name), quoteName(e.Target))
		case "directory":
			fmt.Fprintf(b, "%s%s/\n", indent, quoteName(e.Name))
			printTree(b, e.Children, level+1, limit)
			if e.More > 0 {
				fmt.Fprintf(b, "%s  …\n", indent)
			}
		default:
			fmt.Fprintf(b, "%s%s\n", indent, quoteName(e.Name))
		}
	}
}

// treePaths writes the path of each entry under dir, a directory's with
// "/" after it, each followed by a NUL (tree -z).
func treePaths(b *strings.Builder, dir string, entries []*toolset.TreeEntry) {
	for _, e := range entries {
		if e.Type == "more" {
			continue
		}
		p := e.Name
		if dir != "." {
			p = dir + "/" + e.Name
		}
		if e.Type == "directory" {
			b.WriteString(p + "/\x00")
			treePaths(b, p, e.Children)
			continue
		}
		b.WriteString(p + "\x00")
	}
}
