package toolset

// defs are the tools, in catalogue order: the order in which Tools lists
// them and a model sees them. A tool is offered only if it is here; each
// is defined, with its handler, in the file named after it.
// TestToolTable checks that every tool defined in the package is here,
// once.
var defs = []*toolDef{
	listAllowedDirectoriesTool,
	readFileTool,
	readMultipleFilesTool,
	listDirectoryTool,
	directoryTreeTool,
	findFilesTool,
	searchTextTool,
	fileInfoTool,
	fileHistoryTool,
	fileDiffTool,
	editFileTool,
	writeFileTool,
	deleteFileTool,
	applyPatchTool,
	undoPatchTool,
	moveFileTool,
	createDirectoryTool,
	restoreFileTool,
	beginTurnTool,
	beginSessionTool,
}
