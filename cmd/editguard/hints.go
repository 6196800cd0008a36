package main

import (
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/cliwords"
)

// The library's recovery hints speak to a model that calls MCP tools
// ("call read_file on a.go", "set replace_all"). At a shell the same advice
// is a command line; cliHint rewrites the hint in those words
// (internal/cliwords). The --json output keeps the library's object
// unchanged.

// cliHint returns e's recovery hint in the words of the command line.
func cliHint(e *editguard.Error) string {
	h := e.RecoveryHint
	if h == "" {
		return ""
	}
	path := "PATH"
	if p, ok := e.Details["path"].(string); ok && p != "" {
		path = shellQuote(pathArg(p))
	}
	return cliwords.Hint(h, path)
}

// pathArg returns the path p as an argument of an editguard command: a
// name that starts with "-" would read as a flag, so it gets "./" first.
func pathArg(p string) string {
	if strings.HasPrefix(p, "-") {
		return "./" + p
	}
	return p
}

// shellQuote quotes s for a shell if it needs it: in single quotes, or,
// when s holds a character quoteName escapes (quote.go), in the $'...'
// quotes of bash, zsh and ksh with the same C escapes, so that what is
// printed can neither act on the terminal nor paste as other bytes.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+@%:,=") == "" {
		return s
	}
	if !needsEscape(s, false) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for _, u := range escapeUnits(s, false) {
		switch u {
		case `\`, `'`:
			b.WriteString(`\` + u)
		default:
			b.WriteString(u)
		}
	}
	b.WriteString("'")
	return b.String()
}
