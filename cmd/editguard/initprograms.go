package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/editguard/editguard"
)

// initPrograms are the commands init writes into a client's configuration:
// the absolute paths of the installed programs, or with --bare-names their
// names alone, which the client looks up on its own PATH.
type initPrograms struct {
	editguard string // starts the MCP server
	hook      string // editguard-hook, which the hooks run; "" when none are written
}

// The programs' names, as go install names them.
const (
	editguardName = "editguard"
	hookName      = "editguard-hook"
)

// installHint is how to install both programs, as the README says.
const installHint = "install editguard and editguard-hook: git clone https://github.com/editguard/editguard && cd editguard && go install ./cmd/editguard ./cmd/editguard-hook (into $(go env GOPATH)/bin)"

// executable and lookPath find the programs; tests replace them.
var (
	executable = os.Executable
	lookPath   = exec.LookPath
)

// resolvePrograms returns the programs init writes: this program itself,
// with symbolic links resolved, and, when hooks are written, the
// editguard-hook next to it or else the one on PATH. A program that cannot
// be found is an error that names it and says how to install it; so is a
// program that go run built, which go removes when it exits. bare asks for
// the names alone, and then nothing is looked up.
func resolvePrograms(client string, bare, hooks bool) (initPrograms, error) {
	if bare {
		p := initPrograms{editguard: editguardName}
		if hooks {
			p.hook = hookName
		}
		return p, nil
	}
	self, err := executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err == nil {
		self, err = filepath.Abs(self)
	}
	if err != nil {
		return initPrograms{}, programError(client, "cannot tell where this editguard program is installed ("+err.Error()+")", editguardName)
	}
	if inGoBuildDir(self) {
		return initPrograms{}, &editguard.Error{
			Code:    editguard.CodeInvalidArgument,
			Message: fmt.Sprintf("this editguard runs from %s, a build directory of go run, which go removes or trims as it likes: a configuration naming it would soon name no program; nothing was written", self),
			Details: map[string]any{"program": self},
			RecoveryHint: fmt.Sprintf("%s, then run init with the installed program ($(go env GOPATH)/bin/editguard init %s); or pass --bare-names to write the names alone and put the programs on the client's PATH yourself",
				installHint, client),
		}
	}
	if !isProgram(self) {
		return initPrograms{}, programError(client, self+" is not an executable file", editguardName)
	}
	p := initPrograms{editguard: self}
	if !hooks {
		return p, nil
	}
	if sib := filepath.Join(filepath.Dir(self), hookName); isProgram(sib) {
		p.hook = sib
		return p, nil
	}
	found, err := lookPath(hookName)
	if err == nil {
		found, err = filepath.Abs(found)
	}
	if err == nil {
		found, err = filepath.EvalSymlinks(found)
	}
	if err != nil || !isProgram(found) {
		return initPrograms{}, programError(client, fmt.Sprintf("editguard-hook is not installed: it is neither next to %s nor on PATH, and the hooks run it", self), hookName)
	}
	p.hook = found
	return p, nil
}

// programError is init's refusal when a program it would write is missing.
func programError(client, msg, program string) error {
	return &editguard.Error{
		Code:         editguard.CodeNotFound,
		Message:      msg + "; nothing was written",
		Details:      map[string]any{"program": program},
		RecoveryHint: fmt.Sprintf("%s, then run editguard init %s again; or pass --bare-names to write the names alone and put the programs on the client's PATH yourself", installHint, client),
	}
}

// isProgram reports whether p is a regular file someone may execute.
func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// inGoBuildDir reports whether path lies in a build directory of the go
// command: go run and go test build their programs under $GOTMPDIR (or
// the system's temporary directory)/go-buildNNN/, and remove it when they
// are done; and go may keep a go run program in its build cache ($GOCACHE,
// by default go-build in the user's cache directory), which it trims as it
// likes.
func inGoBuildDir(path string) bool {
	cache := os.Getenv("GOCACHE")
	if cache == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "go-build")
		}
	}
	if cache != "" && cache != "off" {
		if rel, err := filepath.Rel(cache, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	for _, el := range strings.Split(filepath.ToSlash(path), "/") {
		digits, ok := strings.CutPrefix(el, "go-build")
		if ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return true
		}
	}
	return false
}

// hookCommand is the command of the hooks init writes for client: the hook
// program, then the root (Claude Code sets CLAUDE_PROJECT_DIR for its
// hooks; Gemini CLI and Codex start them in the directory they work in,
// which "." names, as the server's configuration does; Gemini CLI puts its
// own quoting around $GEMINI_PROJECT_DIR, so the variable would need to be
// written unquoted, where "." needs no quoting at all) and the client.
//
// The clients run the command with a shell, and block the tool when it
// exits with status 2, showing what it printed; any other failure they
// take as the hook's own, and let the tool run. A program the shell cannot
// start (127: not found, 126: not executable) would leave the tool
// unguarded, so the command ends with "|| exit 2": editguard-hook itself
// exits 0, or 2 when it fails.
func hookCommand(client, hook string) string {
	return shellQuote(hook) + hookCommandArgs(client) + hookFailClosed
}

// hookFailClosed ends the hook commands init writes.
const hookFailClosed = " || exit 2"

func hookCommandArgs(client string) string {
	if client == "claude-code" {
		return ` --root "$CLAUDE_PROJECT_DIR"`
	}
	return " --root . --client " + client
}

// initWrittenHooks are the commands of the hooks init writes for client,
// and those an earlier init wrote (editguard-hook, or editguard hook where
// editguard-hook was not installed, without "|| exit 2"), with the
// program's name alone.
func initWrittenHooks(client string) []string {
	slow := "editguard --root . hook --client " + client
	if client == "claude-code" {
		slow = `editguard --root "$CLAUDE_PROJECT_DIR" hook`
	}
	return []string{hookCommand(client, hookName), hookName + hookCommandArgs(client), slow}
}

// How a command in a configuration compares with the one init would write.
const (
	commandSame    = iota // the same, or the same program installed elsewhere
	commandReplace        // one init wrote, whose program is a bare name or is gone: init writes its own
	commandOther          // anything else, left as it is
)

// compareHookCommand compares a hook command got with want, the one init
// writes for client.
func compareHookCommand(client, got, want string) int {
	if got == want {
		return commandSame
	}
	prog, rest, ok := splitCommand(got)
	if !ok {
		return commandOther
	}
	named := filepath.Base(prog) + rest
	wantProg, wantRest, _ := splitCommand(want)
	switch {
	case !replaceable(prog) && named == filepath.Base(wantProg)+wantRest:
		return commandSame
	case !replaceable(prog):
		return commandOther
	}
	for _, c := range initWrittenHooks(client) {
		if named == c {
			return commandReplace
		}
	}
	return commandOther
}

// compareServerCommand compares the command of an editguard server entry
// whose arguments are init's with want, the one init writes.
func compareServerCommand(got, want string) int {
	switch {
	case got == want:
		return commandSame
	case filepath.Base(got) != editguardName:
		return commandOther
	case replaceable(got):
		return commandReplace
	}
	return commandSame
}

// replaceable reports whether a program named in a configuration is one
// init may replace with its own: a bare name, which depends on the
// client's PATH, or a path where no program is any more.
func replaceable(prog string) bool {
	return !strings.Contains(prog, "/") || !isProgram(prog)
}

// splitCommand splits a shell command into its first word, unquoted, and
// the rest of the line as written.
func splitCommand(c string) (prog, rest string, ok bool) {
	words, ends := commandWords(c)
	if len(words) == 0 {
		return "", "", false
	}
	return words[0], c[ends[0]:], true
}

// commandWords splits s into words as a POSIX shell does, for quoting
// (single and double quotes, backslashes) only: nothing is expanded. ends
// holds where each word ends in s.
func commandWords(s string) (words []string, ends []int) {
	var b strings.Builder
	in := false // inside a word
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words, ends = append(words, b.String()), append(ends, i)
				b.Reset()
				in = false
			}
			continue
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
				}
				b.WriteByte(s[i])
			}
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
		in = true
	}
	if in {
		words, ends = append(words, b.String()), append(ends, len(s))
	}
	return words, ends
}
