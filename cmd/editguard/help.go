package main

import (
	"context"
	"flag"
	"strings"
)

var helpCmd = &command{
	name:    "help",
	args:    "[COMMAND] [--json]",
	summary: "show help for editguard or one command",
	help: `Help prints the list of commands, or the details of one command. "help
COMMAND" prints what "editguard COMMAND --help" does. With --json it prints
{"status": "ok", "commands": [{name, args, summary}]}, or for one command
{"status": "ok", "command", "usage", "summary", "help", "flags": [{name,
argument, usage, default}]}.`,
}

func runHelp(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(helpCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the help as JSON")
	pos, err := parseCommand(e, helpCmd, fs, args)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		if e.json {
			return helpJSON(e, nil, nil)
		}
		printUsage(e.stdout)
		return nil
	case 1:
		c, ok := commands[pos[0]]
		if !ok {
			return usagef(helpCmd.name, "unknown command %q%s", pos[0], didYouMean(pos[0]))
		}
		// Ask the command itself, so its flags are listed as it defines them.
		if c != helpCmd {
			return c.run(ctx, e, []string{"-h"})
		}
		if e.json {
			return helpJSON(e, c, fs)
		}
		commandHelp(e.stdout, c, fs)
		return nil
	}
	return usagef(helpCmd.name, "help takes at most one COMMAND")
}

// helpJSON prints the help of c, or with c nil the list of commands, as
// help --json does, and returns errHelp, which ends the command with exit
// status 0.
func helpJSON(e *env, c *command, fs *flag.FlagSet) error {
	if c == nil {
		type entry struct {
			Name    string `json:"name"`
			Args    string `json:"args"`
			Summary string `json:"summary"`
		}
		list := make([]entry, 0, len(commandList))
		for _, c := range commandList {
			list = append(list, entry{c.name, c.args, c.summary})
		}
		if err := e.printJSON(map[string]any{
			"usage":    "editguard [--root DIR] [--session NAME] <command> [arguments]",
			"commands": list,
		}); err != nil {
			return err
		}
		return errHelp
	}
	type flagHelp struct {
		Name     string `json:"name"`
		Argument string `json:"argument,omitempty"`
		Usage    string `json:"usage"`
		Default  string `json:"default,omitempty"`
	}
	flags := []flagHelp{}
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) {
			if u, ok := globalUsage[f.Name]; ok && u == f.Usage {
				return
			}
			arg, usage := flag.UnquoteUsage(f)
			h := flagHelp{Name: flagDash(f.Name), Argument: arg, Usage: usage}
			switch f.DefValue {
			case "", "0", "false", "[]":
			default:
				h.Default = f.DefValue
			}
			flags = append(flags, h)
		})
	}
	if err := e.printJSON(map[string]any{
		"command": c.name,
		"usage":   "editguard " + strings.TrimSpace(c.name+" "+c.args),
		"summary": c.summary,
		"help":    strings.TrimSpace(c.help),
		"flags":   flags,
	}); err != nil {
		return err
	}
	return errHelp
}
