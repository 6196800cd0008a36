package main

import "context"

var helpCmd = &command{
	name:    "help",
	args:    "[COMMAND]",
	summary: "show help for editguard or one command",
	help:    `Help prints the list of commands, or the details of one command.`,
}

func runHelp(ctx context.Context, e *env, args []string) error {
	switch len(args) {
	case 0:
		printUsage(e.stdout)
		return nil
	case 1:
		c, ok := commands[args[0]]
		if !ok {
			return usagef(helpCmd.name, "unknown command %q", args[0])
		}
		// Ask the command itself, so its flags are listed as it defines them.
		if c.run != nil && c != helpCmd {
			return c.run(ctx, e, []string{"-h"})
		}
		commandHelp(e.stdout, c, nil)
		return nil
	}
	return usagef(helpCmd.name, "help takes at most one COMMAND")
}
