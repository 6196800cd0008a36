package editguard

// The ledger keeps each call's arguments, so that the log says what was
// asked, package internal/replay can decide the call again, and the
// tests' Replayer can check that a replayed call is the recorded one. A
// call is its positional arguments and its options struct, embedded: the
// options' JSON names are the tools' argument names, and a field added to
// an options struct is recorded, and compared on replay, with no further
// code. write_file's content is kept as its SHA-256 and size, so the
// ledger stays small. A precondition that states nothing is left out, as
// if none had been given.
type (
	writeCall struct {
		Path          string `json:"path"`
		ContentSHA256 string `json:"content_sha256"`
		ContentBytes  int    `json:"content_bytes"`
		WriteOptions
	}
	editCall struct {
		Path  string `json:"path"`
		Edits []Edit `json:"edits"`
		EditOptions
	}
	restoreCall struct {
		Path    string `json:"path"`
		Version string `json:"version"`
		RestoreOptions
	}
	deleteCall struct {
		Path string `json:"path"`
		DeleteOptions
	}
	moveCall struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
		MoveOptions
	}
)

func writeArgs(p, content string, o *WriteOptions) *writeCall {
	c := &writeCall{Path: p, ContentSHA256: sha256String(content), ContentBytes: len(content), WriteOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func editArgs(p string, edits []Edit, o *EditOptions) *editCall {
	c := &editCall{Path: p, Edits: edits, EditOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func restoreArgs(p, version string, o *RestoreOptions) *restoreCall {
	c := &restoreCall{Path: p, Version: version, RestoreOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func deleteArgs(p string, o *DeleteOptions) *deleteCall {
	c := &deleteCall{Path: p, DeleteOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}

func moveArgs(src, dst string, o *MoveOptions) *moveCall {
	c := &moveCall{Source: src, Destination: dst, MoveOptions: *o}
	c.Precondition = nonEmpty(c.Precondition)
	return c
}
