//go:build !unix

package main

// isTerminalFd reports false: without a terminal check the CLI never
// prompts, as if --yes were given, which is what a script needs.
func isTerminalFd(fd int) bool { return false }
