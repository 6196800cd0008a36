package main

import (
	"context"
	"fmt"
)

var beginTurnCmd = &command{
	name:    "begin-turn",
	args:    "[--json]",
	summary: "forget the session's reads: every file must be read again before a change",
	help: `Begin-turn forgets everything the session has read, as the MCP tool
begin_turn does: from now on each existing file must be read again before
write, edit or restore change it. An agent that runs editguard from a shell
calls it at the start of each turn, so that a change is never based on a
read from an earlier turn.

With --json it prints {"cleared": true}.`,
}

func runBeginTurn(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(beginTurnCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, beginTurnCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(beginTurnCmd.name, "begin-turn takes no arguments, got %q", pos)
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	if err := s.BeginTurn(); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(map[string]bool{"cleared": true})
	}
	_, err = fmt.Fprintf(e.stdout, "session %s: forgot all earlier reads; read each file again before changing it\n", s.Name())
	return err
}
