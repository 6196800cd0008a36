package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/editguard/editguard"
)

// A prompter asks the person at a terminal whether to apply a change. It is
// the session's Approver, so the library calls it without holding the file's
// lock (the person may take minutes) and re-checks the file after a yes.
type prompter struct {
	in    *bufio.Reader // the answer is read from here
	out   io.Writer     // the diff and the question go here
	color bool
}

// Approve shows the diff and asks. Anything but "y" or "yes", including
// end of input, is a no.
func (p *prompter) Approve(_ context.Context, pv *editguard.Preview) (bool, error) {
	writeDiff(p.out, pv.Diff, p.color)
	fmt.Fprint(p.out, "Apply this change? [y/N] ")
	line, err := p.in.ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	if !strings.HasSuffix(line, "\n") {
		fmt.Fprintln(p.out)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// ANSI colours of the diff.
const (
	ansiRed   = "\x1b[31m"
	ansiGreen = "\x1b[32m"
	ansiCyan  = "\x1b[36m"
	ansiBold  = "\x1b[1m"
	ansiReset = "\x1b[0m"
)

// writeDiff prints a unified diff, coloured if color is set: removed lines
// red, added lines green, hunk headers cyan.
func writeDiff(w io.Writer, diff string, color bool) {
	if diff == "" {
		fmt.Fprintln(w, "(no change to the text)")
		return
	}
	if !color {
		io.WriteString(w, diff)
		if !strings.HasSuffix(diff, "\n") {
			io.WriteString(w, "\n")
		}
		return
	}
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimSuffix(line, "\n")
		var c string
		switch {
		case strings.HasPrefix(body, "---"), strings.HasPrefix(body, "+++"):
			c = ansiBold
		case strings.HasPrefix(body, "@@"):
			c = ansiCyan
		case strings.HasPrefix(body, "-"):
			c = ansiRed
		case strings.HasPrefix(body, "+"):
			c = ansiGreen
		}
		if c == "" {
			fmt.Fprintln(w, body)
		} else {
			fmt.Fprintf(w, "%s%s%s\n", c, body, ansiReset)
		}
	}
}
