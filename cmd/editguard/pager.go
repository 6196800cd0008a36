package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"
	"golang.org/x/text/width"
)

// The habits of git on a terminal: long output (log, history, diff) goes
// through a pager, and colour follows --color and NO_COLOR.

// colorMode is the --color flag: auto (colour where a person reads it: a
// terminal, unless NO_COLOR is set), always, or never.
type colorMode string

func (c *colorMode) String() string {
	if c == nil || *c == "" {
		return "auto"
	}
	return string(*c)
}

func (c *colorMode) Set(s string) error {
	switch s {
	case "auto", "always", "never":
		*c = colorMode(s)
		return nil
	}
	return fmt.Errorf("want auto, always or never, got %q", s)
}

// useColor reports whether output may be coloured: as --color says, and by
// default (auto) not when NO_COLOR is set (https://no-color.org), and only
// when stdout and stderr are terminals, so a redirected run never gets
// escape codes in its logs.
func useColor(e *env) bool {
	switch e.color {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if e.pager != nil {
		return e.pager.tty
	}
	return isTerminal(e.stdout) && isTerminal(e.stderr)
}

// isTerminal reports whether v is an *os.File open on a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && f != nil && isTerminalFd(int(f.Fd()))
}

// pager is a pager that the command's standard output goes through.
type pager struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out io.Writer // the standard output it took over
	tty bool      // stdout and stderr were terminals
}

// page sends the rest of the command's standard output through a pager
// when it goes to a terminal, as git does: $EDITGUARD_PAGER, else $PAGER,
// else less, with LESS=FRX unless LESS is set (quit if it fits on one
// screen, pass colours, leave the screen as it was). An empty pager or
// "cat", --no-pager, --json, or a pager that does not start leave the
// output as it is. close waits for the pager.
func (e *env) page() { e.pageOutput(false) }

// pageRows is page for output made of rows (log, history), which read
// best one row to a line: less gets LESS=FRSX unless LESS is set (-S cuts
// long lines instead of folding them; the arrow keys scroll sideways),
// and rows written straight to a terminal are cut to its width.
func (e *env) pageRows() { e.pageOutput(true) }

func (e *env) pageOutput(rows bool) {
	if e.json || e.pager != nil || !isTerminal(e.stdout) {
		return
	}
	command, ok := pagerCommand(os.Getenv)
	if e.noPager || !ok {
		e.cutRows(rows)
		return
	}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	cmd.Env = os.Environ()
	if _, set := os.LookupEnv("LESS"); !set {
		less := "LESS=FRX"
		if rows && isLess(command) {
			less = "LESS=FRSX"
		}
		cmd.Env = append(cmd.Env, less)
	}
	in, err := cmd.StdinPipe()
	if err != nil || cmd.Start() != nil {
		e.cutRows(rows)
		return
	}
	e.pager = &pager{cmd: cmd, in: in, out: e.stdout, tty: isTerminal(e.stdout) && isTerminal(e.stderr)}
	e.stdout = &quietPipe{w: in}
}

// isLess reports whether the pager command runs less.
func isLess(command string) bool {
	f := strings.Fields(command)
	return len(f) > 0 && filepath.Base(f[0]) == "less"
}

// cutRows, for rows, cuts each line written to the terminal that stdout
// is to the terminal's width, so that a row does not fold onto the next
// line.
func (e *env) cutRows(rows bool) {
	f, ok := e.stdout.(*os.File)
	if !rows || !ok {
		return
	}
	if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
		e.stdout = &cutWriter{w: f, width: w}
	}
}

// cutWriter writes each line to w cut to width columns: a wide character
// (CJK, most emoji) takes two, a byte that is not UTF-8 one.
type cutWriter struct {
	w       io.Writer
	width   int
	col     int    // columns of the current line written
	pending []byte // the start of a character the last Write cut in two
}

func (c *cutWriter) Write(p []byte) (int, error) {
	n := len(p)
	buf := append(c.pending, p...)
	c.pending = nil
	out := make([]byte, 0, len(buf))
	for len(buf) > 0 {
		if !utf8.FullRune(buf) {
			c.pending = append([]byte(nil), buf...)
			break
		}
		r, size := utf8.DecodeRune(buf)
		if r == '\n' {
			out = append(out, '\n')
			c.col = 0
		} else if cw := columns(r); c.col+cw <= c.width {
			out = append(out, buf[:size]...)
			c.col += cw
		} else {
			c.col = c.width // the rest of the line is cut
		}
		buf = buf[size:]
	}
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// columns is how many terminal columns r takes.
func columns(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// pagerCommand returns the pager the environment asks for, and false for
// none.
func pagerCommand(getenv func(string) string) (string, bool) {
	command := getenv("EDITGUARD_PAGER")
	if command == "" {
		command = getenv("PAGER")
	}
	if _, set := os.LookupEnv("EDITGUARD_PAGER"); !set && command == "" {
		if _, set := os.LookupEnv("PAGER"); !set {
			command = "less"
		}
	}
	command = strings.TrimSpace(command)
	return command, command != "" && command != "cat"
}

// closePager ends the pager's input and waits for the person to quit it.
func (e *env) closePager() {
	if e.pager == nil {
		return
	}
	e.pager.in.Close()
	e.pager.cmd.Wait()
	e.stdout, e.pager = e.pager.out, nil
}

// quietPipe writes to the pager, and once the person has quit it, drops
// the rest of the output without an error, as a command piped into head
// would end quietly.
type quietPipe struct {
	w      io.Writer
	broken bool
}

func (q *quietPipe) Write(p []byte) (int, error) {
	if q.broken {
		return len(p), nil
	}
	n, err := q.w.Write(p)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		q.broken = true
		return len(p), nil
	}
	return n, err
}
