package main

import "golang.org/x/term"

// isTerminalFd reports whether fd is a terminal (golang.org/x/term asks
// for its settings, which only a terminal has).
func isTerminalFd(fd int) bool { return term.IsTerminal(fd) }
