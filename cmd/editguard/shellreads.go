package main

import (
	"slices"
	"strconv"
	"strings"
)

// Shell commands that read.
//
// A model that reads a file with "cat f" through its shell has read it as
// surely as with the client's read tool (Claude Code counts such commands as
// reads for its own Edit). shellReads recognises a few simple read commands,
// parsed conservatively: one command, no pipes, redirections, expansions,
// globs or substitutions, known flags only. Anything else reads nothing.
// A command that shows the whole file (cat, less, more, nl) is a full read;
// one that shows part of it (head, tail, sed -n 'X,Yp', grep, wc) a partial
// one, which lets the session edit the file but not overwrite it whole.
// A full read whose output is longer than the client shows the model is a
// partial one too (hookShell, with shellShown).

// shellRead is one file a command read.
type shellRead struct {
	path string
	full bool
	// marked says the command adds to each line it shows (a number, or
	// marks of tabs and line ends), which lengthens its output.
	marked bool
}

// shellReads returns the files the simple read command reads, or nothing.
func shellReads(command string) []shellRead {
	words, ok := shellWords(command)
	if !ok || len(words) < 2 {
		return nil
	}
	name, args := words[0], words[1:]
	var files []string
	full, marked := false, false
	switch name {
	case "cat", "less", "more", "nl":
		full = true
		files, ok = catFiles(args)
		marked = name == "nl" || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") })
	case "head", "tail":
		files, ok = headFiles(args)
	case "sed":
		files, ok = sedFiles(args)
	case "grep", "wc":
		files, ok = grepFiles(name, args)
	default:
		return nil
	}
	if !ok {
		return nil
	}
	var out []shellRead
	for _, f := range files {
		if f == "-" || strings.HasPrefix(f, "-") {
			return nil
		}
		out = append(out, shellRead{path: f, full: full, marked: marked})
	}
	return out
}

// catFiles returns the files of a cat, less, more or nl command: its
// arguments but the flags that only change how the lines are shown. Any
// other flag refuses the command (ok false): what it does is not known.
func catFiles(args []string) (files []string, ok bool) {
	for _, a := range args {
		switch {
		case a == "-n" || a == "-b" || a == "-A" || a == "-v" || a == "-E" || a == "-T" || a == "-s":
		case strings.HasPrefix(a, "-"):
			return nil, false
		default:
			files = append(files, a)
		}
	}
	return files, true
}

// headFiles returns the files of a head or tail command: its arguments but
// a count of lines or bytes (-n N, -c N, -N). Any other flag, or a count
// that is not a number, refuses the command (ok false).
func headFiles(args []string) (files []string, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "-c":
			if i+1 >= len(args) || !isCount(args[i+1]) {
				return nil, false
			}
			i++
		case strings.HasPrefix(a, "-") && isCount(a[1:]):
		case strings.HasPrefix(a, "-"):
			return nil, false
		default:
			files = append(files, a)
		}
	}
	return files, true
}

// sedFiles returns the files of a sed command that only prints lines; any
// other sed command refuses (ok false), as it may do anything.
func sedFiles(args []string) (files []string, ok bool) {
	// sed -n 'X,Yp' FILE...
	if len(args) < 3 || args[0] != "-n" || !sedPrint(args[1]) {
		return nil, false
	}
	return args[2:], true
}

// grepFiles returns the files of a grep or wc command (name): the
// arguments after its flags (which a "--" ends) and, for grep, after its
// pattern. A flag other than those known, or no file (the command then
// reads its input), refuses the command (ok false).
func grepFiles(name string, args []string) (files []string, ok bool) {
	start := 0
	for start < len(args) && strings.HasPrefix(args[start], "-") {
		if args[start] == "--" {
			start++
			break
		}
		if strings.Trim(args[start][1:], "nicvwlHhoEFcmLs") != "" {
			return nil, false
		}
		start++
	}
	if name == "grep" {
		start++ // the pattern
	}
	if start >= len(args) {
		return nil, false
	}
	return args[start:], true
}

func isCount(s string) bool {
	s = strings.TrimPrefix(s, "+")
	_, err := strconv.Atoi(s)
	return err == nil && s != ""
}

// sedPrint reports whether s is a sed script that only prints lines: N p,
// N,M p or N,$ p.
func sedPrint(s string) bool {
	body, ok := strings.CutSuffix(s, "p")
	if !ok || body == "" {
		return false
	}
	for _, part := range strings.SplitN(body, ",", 2) {
		if part != "$" && !isCount(part) {
			return false
		}
	}
	return true
}

// shellWords splits a command into words the way a POSIX shell would for a
// simple command, and refuses (ok false) anything that is not one: operators,
// redirections, expansions, globs, escapes or an unterminated quote.
func shellWords(command string) (words []string, ok bool) {
	var cur strings.Builder
	in := false // inside a word
	for i := 0; i < len(command); i++ {
		c := command[i]
		switch {
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\'':
			j := strings.IndexByte(command[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(command[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			j := strings.IndexByte(command[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			q := command[i+1 : i+1+j]
			if strings.ContainsAny(q, "$`\\") {
				return nil, false
			}
			cur.WriteString(q)
			i += j + 1
			in = true
		case strings.IndexByte(";&|<>$`\\(){}*?[]~#!\n\r=", c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, len(words) > 0
}
