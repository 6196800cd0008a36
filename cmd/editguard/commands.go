package main

import "context"

// commandTable is every command of editguard, in the order help lists them
// (by name), each with the function that runs it. A command is defined in
// its own file; it exists only if it is here. The run function is joined to
// its command here, by init, and not in the command's own literal, because
// it refers to that command (for its flags and usage).
var commandTable = []struct {
	cmd *command
	run func(ctx context.Context, e *env, args []string) error
}{
	{applyCmd, runApply},
	{beginTurnCmd, runBeginTurn},
	{completionCmd, runCompletion},
	{deleteCmd, runDelete},
	{diffCmd, runDiff},
	{doctorCmd, runDoctor},
	{editCmd, runEdit},
	{execCmd, runExec},
	{findCmd, runFind},
	{helpCmd, runHelp},
	{historyCmd, runHistory},
	{hookCmd, runHook},
	{initCmd, runInit},
	{logCmd, runLog},
	{manCmd, runMan},
	{mkdirCmd, runMkdir},
	{moveCmd, runMove},
	{publishCmd, runPublish},
	{pullCmd, runPull},
	{readCmd, runRead},
	{replayCmd, runReplay},
	{restoreCmd, runRestore},
	{rewindCmd, runRewind},
	{searchCmd, runSearch},
	{serveCmd, runServe},
	{stateCmd, runState},
	{treeCmd, runTree},
	{uiCmd, runUI},
	{undoCmd, runUndo},
	{verifyCmd, runVerify},
	{versionCmd, runVersion},
	{writeCmd, runWrite},
}

// commandList is the commands in the order of commandTable, and commands
// finds them by name. init fills both from commandTable: help's run
// function reads them, so they cannot be initialized from it.
var (
	commandList []*command
	commands    map[string]*command
)

func init() {
	commands = make(map[string]*command, len(commandTable))
	for _, c := range commandTable {
		if _, dup := commands[c.cmd.name]; dup {
			panic("editguard: command listed twice: " + c.cmd.name)
		}
		c.cmd.run = c.run
		commands[c.cmd.name] = c.cmd
		commandList = append(commandList, c.cmd)
	}
}
