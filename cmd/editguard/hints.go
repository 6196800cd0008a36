package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/cliwords"
	"github.com/editguard/editguard/internal/textcodec"
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

// hint returns the recovery hint for ge that report prints: the library's
// in the command line's words (cliHint), or the command line's own where
// the library gives none or one that would send the person astray.
func (e *env) hint(ge *editguard.Error) string {
	p, _ := ge.Details["path"].(string)
	arg := shellQuote(pathArg(p))
	if p == "" {
		arg = "PATH"
	}
	switch ge.Code {
	case editguard.CodeNotAFile:
		switch {
		case strings.Contains(ge.Message, "(directory)"):
			return fmt.Sprintf("%s is a directory: list what it holds with editguard tree %s", arg, arg)
		case strings.Contains(ge.Message, "parent"):
			return fmt.Sprintf("a directory on the way to %s is a file: look with editguard tree %s", arg, shellQuote(pathArg(path.Dir(p))))
		}
		return fmt.Sprintf("editguard reads and changes regular files only; see what %s is with ls -l %s", arg, arg)
	case editguard.CodeBinaryFile:
		return binaryHint(arg)
	case editguard.CodeTooLarge:
		limit, hasLimit := number(ge.Details["limit_bytes"])
		size, hasSize := number(ge.Details["size_bytes"])
		switch {
		case hasLimit && hasSize && size > limit:
			return fmt.Sprintf("the file is %s, over the limit of %s: run the command again with --max-file-size %s", sizeWords(size), sizeWords(limit), sizeText(roundUp(size)))
		case hasLimit:
			return fmt.Sprintf("the limit is %s: run the command again with a larger --max-file-size", sizeWords(limit))
		}
		return "run the command again with a larger --max-file-size (the default is 64MiB)"
	case editguard.CodePermission:
		if readsOnly[e.command] {
			return fmt.Sprintf("this user may not read %s: ls -l %s shows its permissions; change them with chmod, or run editguard as a user who may read it", arg, arg)
		}
	case editguard.CodeNotRead, editguard.CodeStaleFile:
		// The hint is to read the file, which read refuses for a binary
		// one: say what can change it instead.
		if p != "" && e.isBinary(p) {
			return binaryHint(arg)
		}
	}
	return cliHint(ge)
}

// readsOnly is the commands that only read files: a PERMISSION_DENIED of
// theirs is about reading.
var readsOnly = map[string]bool{"read": true, "diff": true}

// binaryHint is the hint about the binary file arg: editguard's text
// commands do not read or change it, but exec records what a command does.
func binaryHint(arg string) string {
	return fmt.Sprintf("%s is binary, and editguard read, edit and write take text only: change it with editguard exec -- CMD, which records what CMD changed (editguard rewind puts it back)", arg)
}

// isBinary reports whether the file p of the workspace holds what the text
// commands refuse as binary, judged as they judge it from its first 64 KiB.
func (e *env) isBinary(p string) bool {
	full := p
	if !filepath.IsAbs(p) {
		full = filepath.Join(e.root, filepath.FromSlash(p))
	}
	f, err := os.Open(full)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false
	}
	buf = buf[:n]
	if n == len(buf) {
		// Cut at a character's start: the prefix ends where the file goes on.
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					buf = buf[:i]
				}
				break
			}
		}
	}
	_, err = textcodec.Decode(buf, "")
	return errors.Is(err, textcodec.ErrBinary)
}

// number returns v, a number of an error's details, as an int64.
func number(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), true
	}
	return 0, false
}

// sizeText writes n bytes as --max-file-size takes it: in bytes, or in a
// whole number of KiB, MiB or GiB when it is one.
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%d", n)
}

// sizeWords is sizeText for a sentence: "2000 bytes", "64MiB".
func sizeWords(n int64) string {
	t := sizeText(n)
	if strings.Trim(t, "0123456789") == "" {
		t += " bytes"
	}
	return t
}

// roundUp returns n rounded up to a whole KiB, MiB or GiB, whichever is
// the largest unit that n reaches, so that sizeText says it shortly.
func roundUp(n int64) int64 {
	unit := int64(1 << 10)
	if n >= 1<<30 {
		unit = 1 << 30
	} else if n >= 1<<20 {
		unit = 1 << 20
	}
	return (n + unit - 1) / unit * unit
}

// closestLines prints the lines of the file nearest to an --old that was
// not found (NO_MATCH's details.closest_lines), as "  LINE: TEXT".
func closestLines(w io.Writer, ge *editguard.Error) {
	var lines []map[string]any
	switch v := ge.Details["closest_lines"].(type) {
	case []map[string]any:
		lines = v
	case []any:
		for _, l := range v {
			if m, ok := l.(map[string]any); ok {
				lines = append(lines, m)
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "closest lines:")
	for _, l := range lines {
		n, _ := number(l["line"])
		text, _ := l["text"].(string)
		fmt.Fprintf(w, "  %d: %s\n", n, escapeText(text))
	}
}
