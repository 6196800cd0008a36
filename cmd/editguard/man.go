package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
)

var manCmd = &command{
	name:    "man",
	args:    "",
	summary: "print editguard's manual page (roff)",
	help: `Man prints editguard's manual page, editguard(1), in roff, made from the
same command table and help texts as "editguard help". Read it with

  editguard man | man -l -

or install it with

  editguard man > /usr/local/share/man/man1/editguard.1`,
}

func runMan(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(manCmd.name)
	pos, err := parseCommand(e, manCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(manCmd.name, "man takes no arguments")
	}
	page := manPage(flagSets(ctx))
	if e.json {
		return e.printJSON(map[string]any{"manual": page})
	}
	_, err = io.WriteString(e.stdout, page)
	return err
}

// manPage renders editguard(1) from the command table.
func manPage(sets map[string]*flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH EDITGUARD 1 \"\" %s \"User Commands\"\n", roffQuote("editguard "+version()))
	b.WriteString(".SH NAME\neditguard \\- reads, writes and edits files without losing anyone's work\n")
	b.WriteString(".SH SYNOPSIS\n.B editguard\n[\\fB\\-\\-root\\fR \\fIDIR\\fR] [\\fB\\-\\-session\\fR \\fINAME\\fR] \\fIcommand\\fR [\\fIarguments\\fR]\n")
	b.WriteString(".SH DESCRIPTION\n")
	roffText(&b, "editguard reads, writes and edits the files under a workspace root for AI coding agents and the people beside them: a change is made only if the file still holds what its session read, atomically, with what it displaced kept in a history and every attempt in a hash-chained ledger. It serves the same tools over MCP (editguard serve), guards the clients' own tools through hooks (editguard init), and runs them from the command line.")
	b.WriteString(".SH GLOBAL FLAGS\n")
	manFlags(&b, globalFlags(), true)
	b.WriteString(".SH COMMANDS\n")
	for _, c := range commandList {
		fmt.Fprintf(&b, ".SS %s\n", roffQuote(strings.TrimSpace("editguard "+c.name+" "+c.args)))
		roffText(&b, c.summary+".")
		b.WriteString(".PP\n")
		roffText(&b, strings.TrimSpace(c.help))
		var fb strings.Builder
		manFlags(&fb, sets[c.name], false)
		if fb.Len() > 0 {
			b.WriteString(".PP\nFlags:\n.RS\n" + fb.String() + ".RE\n")
		}
	}
	b.WriteString(".SH EXIT STATUS\n")
	roffText(&b, "0 ok, 1 error, 2 usage, 3 conflict (NOT_READ, STALE_FILE: read the file again), 4 rejected (the change was declined). search exits 1 when no line matched.")
	b.WriteString(".SH FILES\n")
	roffText(&b, "DIR/.editguard/ holds the workspace's state: history/, ledger.jsonl, sessions/ and the journals of changes in progress.")
	b.WriteString(".SH SEE ALSO\n")
	roffText(&b, "editguard help COMMAND; the README and docs/ of the editguard repository.")
	return b.String()
}

// manFlags lists fs's flags as tagged paragraphs: the global ones when
// global is set, otherwise the command's own.
func manFlags(b *strings.Builder, fs *flag.FlagSet, global bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if u, ok := globalUsage[f.Name]; ok && u == f.Usage && !global {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		dashes := `\-\-`
		if len(f.Name) == 1 {
			dashes = `\-`
		}
		b.WriteString(".TP\n\\fB" + dashes + roffEscape(f.Name) + "\\fR")
		if name != "" {
			b.WriteString(" \\fI" + roffEscape(name) + "\\fR")
		}
		b.WriteString("\n")
		roffText(b, strings.ReplaceAll(usage, "\n", " "))
	})
}

// roffText writes text as roff: paragraphs at blank lines, and lines
// indented by two spaces or more (examples, lists) kept as they are.
func roffText(b *strings.Builder, text string) {
	inFill := true
	for i, para := range strings.Split(text, "\n\n") {
		if i > 0 {
			if !inFill {
				b.WriteString(".fi\n")
				inFill = true
			}
			b.WriteString(".PP\n")
		}
		for _, line := range strings.Split(para, "\n") {
			pre := strings.HasPrefix(line, "  ")
			switch {
			case pre && inFill:
				b.WriteString(".nf\n")
				inFill = false
			case !pre && !inFill:
				b.WriteString(".fi\n")
				inFill = true
			}
			b.WriteString(roffLine(line) + "\n")
		}
	}
	if !inFill {
		b.WriteString(".fi\n")
	}
}

// roffLine escapes one line of text, so that no character of it reads as
// a roff request or escape.
func roffLine(line string) string {
	line = roffEscape(line)
	if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
		line = "\\&" + line
	}
	return line
}

func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

func roffQuote(s string) string {
	return `"` + strings.ReplaceAll(roffEscape(s), `"`, `\(dq`) + `"`
}
