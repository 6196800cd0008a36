package main

import (
	"context"
	"fmt"
)

var mkdirCmd = &command{
	name:    "mkdir",
	args:    "PATH [--json]",
	summary: "make a directory and its missing parents",
	help: `Mkdir makes the directory PATH inside the root, with any missing parents,
each made durable before the next. A directory that exists is not an
error. Protected paths (.git of any repository, .editguard) are refused.`,
}

func runMkdir(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(mkdirCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the result as JSON")
	pos, err := parseCommand(e, mkdirCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef(mkdirCmd.name, "mkdir takes exactly one PATH, got %d", len(pos))
	}
	s, err := e.session()
	if err != nil {
		return err
	}
	r, err := s.CreateDirectory(ctx, pos[0])
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(r)
	}
	if r.Created {
		_, err = fmt.Fprintf(e.stdout, "created %s/\n", quoteName(r.Path))
	}
	return err
}
