// Package toolset is editguard's file tools as an agent sees them: a name,
// a description written for a model, a JSON Schema for the arguments, and
// Execute, which takes the model's JSON arguments and returns a structured
// result plus readable text.
//
// The MCP server is built on it, and an agent framework written in Go can
// embed it directly: list Tools in the model's tool catalogue, pass each tool
// call's name and arguments to Execute, and give the model Output.Text (or
// the JSON of Output.Structured). Failures are *editguard.Error values whose
// JSON is the same error object the MCP server and the CLI report.
//
// The toolset adds no safety of its own: the Session decides staleness and
// injects its read baselines when a call carries no explicit precondition.
// The toolset checks the arguments (unknown fields and wrong types fail with
// INVALID_ARGUMENT before anything is touched) and formats results.
package toolset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/editguard/editguard"
)

// Limits of read_file.
const (
	// MaxReadBytes caps what read_file returns when the call gives a
	// limit, whatever the limit says: a read stops before the line that
	// would pass it, and the text says where to go on. Without a limit a
	// read keeps within ReadBudget.
	MaxReadBytes = 256 << 10
	// MaxLineBytes is the longest line read_file shows whole; a longer one
	// is cut at a character boundary with a marker saying how long it is.
	// A huge file or a huge line costs the server a buffer, not its size.
	MaxLineBytes = 2000
)

// Options configure a Toolset.
type Options struct {
	// ReadOnly offers only the tools that never change a file: read_file,
	// list_directory, file_info and file_history.
	ReadOnly bool
}

// Annotations describe a tool's effect, as hints for clients that decide
// whether to ask a person before a call.
type Annotations struct {
	ReadOnly    bool // the tool never changes a file
	Destructive bool // the tool may overwrite or delete existing content
	Idempotent  bool // repeating a call with the same arguments has no further effect
}

// Tool describes one tool for a model's tool catalogue.
type Tool struct {
	Name        string
	Title       string // a short human-readable name
	Description string
	// InputSchema is a JSON Schema (draft 2020-12) object for the arguments.
	InputSchema json.RawMessage
	// OutputSchema describes Output.Structured when the model should be
	// shown it (as JSON); nil for the tools whose result the model reads
	// as Output.Text only (read_file and the changes). See Output.
	OutputSchema json.RawMessage
	Annotations  Annotations
}

// Output is the result of a successful call.
//
// Agent clients show a model one of two things: some (Claude Code, Codex,
// VS Code) show only the JSON of the structured result when there is one,
// the others show the text. So a tool with an OutputSchema gives the model
// Structured, small and complete, and Text says the same; a tool without
// one (read_file, write_file, edit_file, restore_file) gives the model Text
// alone, because its result is text a model must read as text: numbered
// lines, a diff. Structured is then for programs (an embedding, the CLI's
// --json), and Meta is its small part, for MCP clients that want the
// facts without the content.
type Output struct {
	// Structured is the result object; it encodes to JSON as DESIGN §8
	// names it. Its type is *editguard.ReadResult for read_file,
	// *editguard.Result for write_file, edit_file, delete_file and restore_file,
	// *Listing for list_directory, *FileInfo for file_info, *History for
	// file_history and *TurnResult for begin_turn.
	Structured any
	// Text is the result as a model should read it, within the budgets
	// (ReadBudget, DiffBudget): a header and numbered lines for
	// read_file, a summary and the diff for changes.
	Text string
	// Meta is Structured without the file content or diff, for the tools
	// whose Structured the model is not shown; nil for the others.
	Meta any
}

// Toolset is the set of tools over one session. It is safe for concurrent
// use; calls on the same file are ordered by the session's per-file lock.
type Toolset struct {
	s     *editguard.Session
	ws    *editguard.Workspace
	tools []Tool
	byKey map[string]handler
}

type handler func(t *Toolset, ctx context.Context, args json.RawMessage) (*Output, error)

type toolDef struct {
	name        string
	title       string
	description string
	annotations Annotations
	handler     handler
}

// defs lists the tools in the order they are offered.
var defs = []toolDef{
	{"read_file", "Read file", readFileDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).readFile},
	{"list_directory", "List directory", listDirectoryDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).listDirectory},
	{"file_info", "File info", fileInfoDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).fileInfo},
	{"file_history", "File history", fileHistoryDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).fileHistory},
	{"edit_file", "Edit file", editFileDescription, Annotations{Destructive: true}, (*Toolset).editFile},
	{"write_file", "Write file", writeFileDescription, Annotations{Destructive: true, Idempotent: true}, (*Toolset).writeFile},
	{"delete_file", "Delete file", deleteFileDescription, Annotations{Destructive: true}, (*Toolset).deleteFile},
	{"move_file", "Move file", moveFileDescription, Annotations{Destructive: true}, (*Toolset).moveFile},
	{"restore_file", "Restore file version", restoreFileDescription, Annotations{Destructive: true, Idempotent: true}, (*Toolset).restoreFile},
	{"begin_turn", "Begin turn", beginTurnDescription, Annotations{Idempotent: true}, (*Toolset).beginTurn},
}

// New returns the tools over session s. opts may be nil.
func New(s *editguard.Session, opts *Options) *Toolset {
	var o Options
	if opts != nil {
		o = *opts
	}
	t := &Toolset{s: s, ws: s.Workspace(), byKey: map[string]handler{}}
	for _, d := range defs {
		if o.ReadOnly && !d.annotations.ReadOnly {
			continue
		}
		t.tools = append(t.tools, Tool{Name: d.name, Title: d.title, Description: d.description,
			InputSchema: schemas[d.name], OutputSchema: outputSchemas[d.name], Annotations: d.annotations})
		t.byKey[d.name] = d.handler
	}
	return t
}

// Tools returns the tools offered, in a stable order. The caller must not
// modify the schemas.
func (t *Toolset) Tools() []Tool { return slices.Clone(t.tools) }

// Execute runs the tool called name with the JSON arguments args (null or
// empty means no arguments). A failure is always an *editguard.Error: an
// unknown tool, unknown argument or argument of the wrong type is
// INVALID_ARGUMENT and touches nothing; the other codes come from the
// session (NOT_READ and STALE_FILE mean: call read_file, then redo).
func (t *Toolset) Execute(ctx context.Context, name string, args json.RawMessage) (*Output, error) {
	h, ok := t.byKey[name]
	if !ok {
		names := make([]string, len(t.tools))
		for i, tool := range t.tools {
			names[i] = tool.Name
		}
		return nil, &editguard.Error{
			Code:         editguard.CodeInvalidArgument,
			Message:      fmt.Sprintf("unknown tool %q", name),
			Details:      map[string]any{"tool": name, "tools": names},
			RecoveryHint: "call one of: " + strings.Join(names, ", "),
		}
	}
	out, err := h(t, ctx, args)
	if err != nil {
		return nil, asError(err)
	}
	return out, nil
}

// asError makes any failure an *editguard.Error with a recovery hint, so
// that every caller sees the one error vocabulary and a model always has a
// next step to read.
func asError(err error) *editguard.Error {
	var e *editguard.Error
	if !errors.As(err, &e) {
		e = &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Err: err}
	}
	if e.RecoveryHint == "" {
		c := *e // the session's error value is not ours to change
		c.RecoveryHint = defaultHints[e.Code]
		e = &c
	}
	return e
}

// defaultHints fill in a recovery hint where the session gave none.
var defaultHints = map[editguard.Code]string{
	editguard.CodeNotRead:         "call read_file on the file, then redo the change",
	editguard.CodeStaleFile:       "call read_file on the file again, then redo the change on top of what it holds now",
	editguard.CodeNoMatch:         "read the file again and copy old_string exactly, including whitespace",
	editguard.CodeAmbiguousMatch:  "include more surrounding lines in old_string to make it unique, or set replace_all",
	editguard.CodeNoChange:        "the file already reads that way; nothing needs to be done",
	editguard.CodeOutsideRoot:     "use a path inside the workspace",
	editguard.CodeProtectedPath:   "this path may not be changed by the tools; choose another path or ask the user",
	editguard.CodeNotAFile:        "check the path with list_directory or file_info",
	editguard.CodeNotFound:        "check the path with list_directory",
	editguard.CodeBinaryFile:      "the text tools do not read or change binary files",
	editguard.CodeEncoding:        "pass the file's encoding with the encoding argument",
	editguard.CodeTooLarge:        "the file is over the size limit of the text tools; ask the user",
	editguard.CodeRejected:        "the change was not approved; ask the user how to proceed",
	editguard.CodePlaceholder:     "write the full text instead of a placeholder",
	editguard.CodeInvalidArgument: "fix the arguments to match the tool's input schema and call it again",
	editguard.CodeIO:              "the file system failed; tell the user, and retry only if the cause is gone",
}

func invalidArgument(tool, msg string, details map[string]any) *editguard.Error {
	if details == nil {
		details = map[string]any{}
	}
	details["tool"] = tool
	return &editguard.Error{
		Code:         editguard.CodeInvalidArgument,
		Message:      msg,
		Details:      details,
		RecoveryHint: "fix the arguments to match the tool's input schema and call it again",
	}
}

// decodeArgs decodes args strictly into v: unknown fields, wrong types and
// trailing data are INVALID_ARGUMENT.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return invalidArgument(tool, "arguments must be a JSON object", nil)
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te):
			return invalidArgument(tool, fmt.Sprintf("argument %q must be %s, not %s", te.Field, jsonType(te.Type.Kind().String()), te.Value),
				map[string]any{"argument": te.Field})
		case errors.As(err, &se):
			return invalidArgument(tool, "arguments are not valid JSON: "+err.Error(), nil)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return invalidArgument(tool, fmt.Sprintf("unknown argument %q", field), map[string]any{"argument": field})
		}
		return invalidArgument(tool, "bad arguments: "+err.Error(), nil)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalidArgument(tool, "arguments must be one JSON object", nil)
	}
	return nil
}

// jsonType names a Go kind as the JSON type a model should send.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "an integer"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return kind
}

func missing(tool, arg string) error {
	return invalidArgument(tool, fmt.Sprintf("missing required argument %q", arg), map[string]any{"argument": arg})
}

type readArgs struct {
	Path     *string `json:"path"`
	Offset   int     `json:"offset"`
	Limit    int     `json:"limit"`
	Encoding string  `json:"encoding"`
}

func (t *Toolset) readFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a readArgs
	if err := decodeArgs("read_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("read_file", "path")
	}
	if a.Offset < 0 || a.Limit < 0 {
		return nil, invalidArgument("read_file", "offset and limit must not be negative", nil)
	}
	// Without a limit the read keeps within ReadBudget: the header and
	// the notes take what is left of it after the numbered lines, each of
	// which costs its bytes and lineNumberWidth.
	o := &editguard.ReadOptions{Offset: a.Offset, Limit: a.Limit, Encoding: a.Encoding,
		MaxBytes: ReadBudget - readOverhead, MaxLineBytes: MaxLineBytes, LineCost: lineNumberWidth}
	if a.Limit > 0 {
		o.MaxBytes = MaxReadBytes
	}
	res, err := t.s.Read(ctx, *a.Path, o)
	if err != nil {
		return nil, err
	}
	return &Output{Structured: res, Text: numberLines(res, max(a.Offset, 1)), Meta: without(res, "content")}, nil
}

// readOverhead is kept free of lines in ReadBudget, for the header (with a
// long path) and the notes.
const readOverhead = 1000

type writeArgs struct {
	Path              *string                 `json:"path"`
	Content           *string                 `json:"content"`
	Precondition      *editguard.Precondition `json:"precondition"`
	DryRun            bool                    `json:"dry_run"`
	LineEnding        string                  `json:"line_ending"`
	Encoding          string                  `json:"encoding"`
	AllowPlaceholders bool                    `json:"allow_placeholders"`
	BOM               bool                    `json:"bom"`
	Mode              string                  `json:"mode"`
}

func (t *Toolset) writeFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a writeArgs
	if err := decodeArgs("write_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("write_file", "path")
	}
	if a.Content == nil {
		return nil, missing("write_file", "content")
	}
	res, err := t.s.Write(ctx, *a.Path, *a.Content, &editguard.WriteOptions{
		Precondition: a.Precondition, DryRun: a.DryRun, LineEnding: a.LineEnding,
		Encoding: a.Encoding, AllowPlaceholders: a.AllowPlaceholders, BOM: a.BOM, Mode: a.Mode,
	})
	if err != nil {
		return nil, err
	}
	verb := "Wrote"
	switch {
	case res.Created:
		verb = "Created"
	case a.Mode == editguard.WriteAppend:
		verb = "Appended to"
	}
	return changeOutput(verb, res), nil
}

// changeOutput is the output of a change: the text for the model, the
// result for programs, and the result without its diff as Meta.
func changeOutput(verb string, res *editguard.Result) *Output {
	return &Output{Structured: res, Text: changeText(verb, res), Meta: without(res, "diff")}
}

// without returns v's JSON object without the member key.
func without(v any, key string) map[string]any {
	var m map[string]any
	if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &m) == nil {
		delete(m, key)
	}
	return m
}

type editArg struct {
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
}

type editArgs struct {
	Path              *string                 `json:"path"`
	OldString         *string                 `json:"old_string"`
	NewString         *string                 `json:"new_string"`
	ReplaceAll        *bool                   `json:"replace_all"`
	Edits             []editArg               `json:"edits"`
	Precondition      *editguard.Precondition `json:"precondition"`
	DryRun            bool                    `json:"dry_run"`
	Encoding          string                  `json:"encoding"`
	AllowPlaceholders bool                    `json:"allow_placeholders"`
}

func (t *Toolset) editFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a editArgs
	if err := decodeArgs("edit_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("edit_file", "path")
	}
	single := a.OldString != nil || a.NewString != nil || a.ReplaceAll != nil
	var edits []editguard.Edit
	switch {
	case single && a.Edits != nil:
		return nil, invalidArgument("edit_file", "give either old_string/new_string or edits, not both", nil)
	case single:
		if a.OldString == nil {
			return nil, missing("edit_file", "old_string")
		}
		if a.NewString == nil {
			return nil, missing("edit_file", "new_string")
		}
		edits = []editguard.Edit{{OldString: *a.OldString, NewString: *a.NewString, ReplaceAll: a.ReplaceAll != nil && *a.ReplaceAll}}
	case len(a.Edits) > 0:
		for i, e := range a.Edits {
			if e.OldString == nil || e.NewString == nil {
				arg := fmt.Sprintf("edits[%d].old_string", i)
				if e.OldString != nil {
					arg = fmt.Sprintf("edits[%d].new_string", i)
				}
				return nil, missing("edit_file", arg)
			}
			edits = append(edits, editguard.Edit{OldString: *e.OldString, NewString: *e.NewString, ReplaceAll: e.ReplaceAll})
		}
	default:
		return nil, invalidArgument("edit_file", "no edit given: pass old_string and new_string, or a non-empty edits array", nil)
	}
	res, err := t.s.Edit(ctx, *a.Path, edits, &editguard.EditOptions{
		Precondition: a.Precondition, DryRun: a.DryRun, Encoding: a.Encoding, AllowPlaceholders: a.AllowPlaceholders,
	})
	if err != nil {
		return nil, err
	}
	verb := "Edited"
	if res.Created {
		verb = "Created"
	}
	return changeOutput(verb, res), nil
}

type restoreArgs struct {
	Path         *string                 `json:"path"`
	Version      *string                 `json:"version"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) restoreFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a restoreArgs
	if err := decodeArgs("restore_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("restore_file", "path")
	}
	if a.Version == nil || *a.Version == "" {
		return nil, missing("restore_file", "version")
	}
	res, err := t.s.Restore(ctx, *a.Path, *a.Version, &editguard.RestoreOptions{Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return changeOutput("Restored version "+*a.Version+" of", res), nil
}

type deleteArgs struct {
	Path         *string                 `json:"path"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) deleteFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a deleteArgs
	if err := decodeArgs("delete_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("delete_file", "path")
	}
	res, err := t.s.Delete(ctx, *a.Path, &editguard.DeleteOptions{Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return changeOutput("Deleted", res), nil
}

type moveArgs struct {
	Source       *string                 `json:"source"`
	Destination  *string                 `json:"destination"`
	Overwrite    bool                    `json:"overwrite"`
	Precondition *editguard.Precondition `json:"precondition"`
	DryRun       bool                    `json:"dry_run"`
}

func (t *Toolset) moveFile(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a moveArgs
	if err := decodeArgs("move_file", raw, &a); err != nil {
		return nil, err
	}
	if a.Source == nil {
		return nil, missing("move_file", "source")
	}
	if a.Destination == nil {
		return nil, missing("move_file", "destination")
	}
	res, err := t.s.Move(ctx, *a.Source, *a.Destination, &editguard.MoveOptions{Overwrite: a.Overwrite, Precondition: a.Precondition, DryRun: a.DryRun})
	if err != nil {
		return nil, err
	}
	return &Output{Structured: res, Text: moveText(res), Meta: without(res, "diff")}, nil
}

// TurnResult is begin_turn's result.
type TurnResult struct {
	Cleared bool `json:"cleared"`
}

func (t *Toolset) beginTurn(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct{}
	if err := decodeArgs("begin_turn", raw, &a); err != nil {
		return nil, err
	}
	if err := t.s.BeginTurn(); err != nil {
		return nil, err
	}
	return &Output{Structured: &TurnResult{Cleared: true}, Text: "Forgot all earlier reads: read each file again before changing it."}, nil
}
