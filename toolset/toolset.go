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

// Limits of read_file's numbered text.
const (
	// DefaultReadLimit is how many lines read_file returns when the call
	// gives no limit. A file longer than that is read in pages (offset).
	DefaultReadLimit = 2000
	// MaxLineLength is the longest line, in characters, that read_file's
	// text shows; longer lines are cut with a marker.
	MaxLineLength = 2000
	// MaxReadBytes and MaxLineBytes cap what read_file returns at all, in
	// the structured content too, whatever offset and limit say: a read
	// stops before the line that would pass MaxReadBytes (next_offset says
	// where to go on), and a line longer than MaxLineBytes is cut with a
	// marker. A huge file or a huge line costs the server a buffer, not
	// its size.
	MaxReadBytes = 256 << 10
	MaxLineBytes = 16 << 10
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
	Description string
	// InputSchema is a JSON Schema (draft 2020-12) object for the arguments.
	InputSchema json.RawMessage
	Annotations Annotations
}

// Output is the result of a successful call.
type Output struct {
	// Structured is the result object; it encodes to JSON as DESIGN §8
	// names it. Its type is *editguard.ReadResult for read_file,
	// *editguard.Result for write_file, edit_file and restore_file,
	// *Listing for list_directory, *FileInfo for file_info, *History for
	// file_history and *TurnResult for begin_turn.
	Structured any
	// Text is the result as a model should read it: numbered lines for
	// read_file, a summary and the unified diff for changes.
	Text string
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
	description string
	annotations Annotations
	handler     handler
}

// defs lists the tools in the order they are offered.
var defs = []toolDef{
	{"read_file", readFileDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).readFile},
	{"list_directory", listDirectoryDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).listDirectory},
	{"file_info", fileInfoDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).fileInfo},
	{"file_history", fileHistoryDescription, Annotations{ReadOnly: true, Idempotent: true}, (*Toolset).fileHistory},
	{"edit_file", editFileDescription, Annotations{Destructive: true}, (*Toolset).editFile},
	{"write_file", writeFileDescription, Annotations{Destructive: true, Idempotent: true}, (*Toolset).writeFile},
	{"restore_file", restoreFileDescription, Annotations{Destructive: true, Idempotent: true}, (*Toolset).restoreFile},
	{"begin_turn", beginTurnDescription, Annotations{Idempotent: true}, (*Toolset).beginTurn},
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
		t.tools = append(t.tools, Tool{Name: d.name, Description: d.description, InputSchema: schemas[d.name], Annotations: d.annotations})
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
	limit := a.Limit
	if limit == 0 {
		limit = DefaultReadLimit
	}
	res, err := t.s.Read(ctx, *a.Path, &editguard.ReadOptions{Offset: a.Offset, Limit: limit, Encoding: a.Encoding,
		MaxBytes: MaxReadBytes, MaxLineBytes: MaxLineBytes})
	if err != nil {
		return nil, err
	}
	if a.Offset == 0 && a.Limit == 0 && !res.Truncated {
		res.Offset = 0 // the whole file; the default limit was not needed
	}
	return &Output{Structured: res, Text: numberLines(res, max(a.Offset, 1))}, nil
}

type writeArgs struct {
	Path              *string                 `json:"path"`
	Content           *string                 `json:"content"`
	Precondition      *editguard.Precondition `json:"precondition"`
	DryRun            bool                    `json:"dry_run"`
	LineEnding        string                  `json:"line_ending"`
	Encoding          string                  `json:"encoding"`
	AllowPlaceholders bool                    `json:"allow_placeholders"`
	BOM               bool                    `json:"bom"`
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
		Encoding: a.Encoding, AllowPlaceholders: a.AllowPlaceholders, BOM: a.BOM,
	})
	if err != nil {
		return nil, err
	}
	verb := "Wrote"
	if res.Created {
		verb = "Created"
	}
	return &Output{Structured: res, Text: changeText(verb, res)}, nil
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
	return &Output{Structured: res, Text: changeText(verb, res)}, nil
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
	return &Output{Structured: res, Text: changeText("Restored version "+*a.Version+" of", res)}, nil
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
