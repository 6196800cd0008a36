package editguard

// The ledger keeps each call's arguments, so that the log says what was
// asked and a replayer (ledger.go) can check that a replayed call is the recorded one. A
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

// Every Session method that records a call has a replayer method of the
// same name and signature, less the context (TestReplayerCoversSession
// holds them to that).

// Write replays a Session.Write call.
func (r *replayer) Write(p, content string, opts *WriteOptions) (*Result, error) {
	return r.next(opWrite, p, writeArgs(p, content, orZero(opts)))
}

// Edit replays a Session.Edit call.
func (r *replayer) Edit(p string, edits []Edit, opts *EditOptions) (*Result, error) {
	return r.next(opEdit, p, editArgs(p, edits, orZero(opts)))
}

// Restore replays a Session.Restore call.
func (r *replayer) Restore(p, version string, opts *RestoreOptions) (*Result, error) {
	return r.next(opRestore, p, restoreArgs(p, version, orZero(opts)))
}

// Delete replays a Session.Delete call.
func (r *replayer) Delete(p string, opts *DeleteOptions) (*Result, error) {
	return r.next(opDelete, p, deleteArgs(p, orZero(opts)))
}

// Move replays a Session.Move call.
func (r *replayer) Move(src, dst string, opts *MoveOptions) (*Result, error) {
	call := moveArgs(src, dst, orZero(opts))
	res, err := r.next(opMove, src, call)
	if err != nil || res.DryRun {
		return res, err
	}
	// A move that happened has a second record, the destination's.
	return r.next(opMove, dst, call)
}

// orZero returns opts, or a new zero value if it is nil.
func orZero[T any](opts *T) *T {
	if opts == nil {
		return new(T)
	}
	return opts
}
