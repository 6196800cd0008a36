// Package cliwords says the library's recovery hints in the words of the
// command line. The hints speak to a model that calls MCP tools ("call
// read_file on a.go", "set replace_all"); at a shell, or on the web page
// for a change made at one, the same advice is a command line ("run
// editguard read a.go", "pass --all").
package cliwords

import (
	"regexp"
	"strings"
	"sync"
)

// hintRewrites are applied in order; "{path}" in a replacement stands for
// the error's path, quoted for the shell. They are compiled when first
// needed, not at every start of the program (a hook is one process per
// tool call).
var hintRewrites = sync.OnceValue(func() []hintRewrite {
	return []hintRewrite{
		{regexp.MustCompile(`call read_file on (.+?) without offset/limit, or use edit_file`), "run editguard read $1 without --offset/--limit, or use editguard edit"},
		{regexp.MustCompile(`call read_file on (.+?) \(at least the changed lines\)`), "run editguard read $1"},
		{regexp.MustCompile(`call read_file on `), "run editguard read "},
		{regexp.MustCompile(`\(newest first; file_history, or editguard history, lists them all\)`), "(newest first; editguard history {path} lists them all)"},
		{regexp.MustCompile(`list versions with file_history`), "list the versions with editguard history {path}"},
		{regexp.MustCompile(`pass the sha256 that read_file returned`), "pass the sha256 that editguard read --json prints"},
		{regexp.MustCompile(`supply all three values from read_file, or drop require_all`), "pass --expect-sha256, --expect-mtime-ms and --expect-size (editguard read --json prints them), or drop --require-all"},
		{regexp.MustCompile(`read the file again and copy old_string exactly`), "run editguard read {path} again and copy --old exactly"},
		{regexp.MustCompile(`^read (.+?) and pass the exact text to replace as old_string`), "run editguard read $1 and pass the exact text to replace as --old"},
		{regexp.MustCompile(`use write_file or an empty old_string`), "use editguard write, or editguard edit with an empty --old"},
		{regexp.MustCompile(`an empty old_string only creates a new file, as the single edit`), "an empty --old only creates a new file"},
		{regexp.MustCompile(`check the path with list_directory`), "check the path: it is relative to --root (default: the current directory)"},
		{regexp.MustCompile(`set replace_all`), "pass --all"},
		{regexp.MustCompile(`set allow_placeholders`), "pass --allow-placeholders"},
		{regexp.MustCompile(`with the encoding argument`), "with --encoding"},
		{regexp.MustCompile(`: pass encoding$`), ": pass --encoding"},
		{regexp.MustCompile(`^ask the user what to change instead$`), "nothing was written"},
		{regexp.MustCompile(`ask the user to change the file's permissions`), "change the file's permissions (ls -l {path} shows them)"},
		{regexp.MustCompile(`\bthen retry\b`), "then run the command again"},
		{regexp.MustCompile(`^retry shortly\b`), "run the command again shortly"},
		// Whatever is left in tool words.
		{regexp.MustCompile(`\bedit_file\b`), "editguard edit"},
		{regexp.MustCompile(`\bwrite_file\b`), "editguard write"},
		{regexp.MustCompile(`\bread_file\b`), "editguard read"},
		{regexp.MustCompile(`\brestore_file\b`), "editguard restore"},
		{regexp.MustCompile(`\bfile_history\b`), "editguard history"},
		{regexp.MustCompile(`\bold_string\b`), "--old"},
		{regexp.MustCompile(`\bnew_string\b`), "--new"},
	}
})

type hintRewrite struct {
	re  *regexp.Regexp
	new string
}

// Hint returns the recovery hint h in the words of the command line; path
// is the error's path as an argument of an editguard command, quoted for
// the shell, or "PATH".
func Hint(h, path string) string {
	for _, r := range hintRewrites() {
		h = r.re.ReplaceAllString(h, strings.ReplaceAll(r.new, "{path}", strings.ReplaceAll(path, "$", "$$")))
	}
	return h
}
