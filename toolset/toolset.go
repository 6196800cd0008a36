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
	"sync"

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
	// ReadOnly offers only the tools that never change a file: those
	// whose Annotations say ReadOnly (read_file, read_multiple_files,
	// list_directory, directory_tree, find_files, search_text, file_info,
	// file_history, file_diff, list_allowed_directories).
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
// the others show the text. JSON is longer for the same facts (a listing
// is about three times its text) and says them less plainly, so only the
// tools whose result is a handful of fields a program acts on
// (create_directory, begin_turn, begin_session, list_allowed_directories)
// have an OutputSchema and give the model Structured; every other tool
// gives the model Text alone: numbered lines, a diff, a listing, a file's
// facts, its versions. Structured is then for programs (an embedding, the
// CLI's --json), and Meta carries it, or its small part, for MCP clients
// that want the facts without parsing the text.
type Output struct {
	// Structured is the result object; it encodes to JSON as the tool's
	// structured result. Its type is *editguard.ReadResult for read_file,
	// *editguard.Result for write_file, edit_file, delete_file and restore_file,
	// *Listing for list_directory, *FileInfo for file_info, *History for
	// file_history and *TurnResult for begin_turn.
	Structured any
	// Text is the result as a model should read it, within the budgets
	// (ReadBudget, DiffBudget): a header and numbered lines for
	// read_file, a summary and the diff for changes (for a deletion the
	// summary alone: the diff would repeat the content the model read).
	Text string
	// Meta is Structured without the file content or diff, for the tools
	// whose Structured the model is not shown (list_directory, file_info
	// and file_history: Structured whole); nil for the others. For
	// apply_patch and undo_patch it lists the files and warnings that Text
	// lists, and counts the others (files_omitted, warnings_omitted).
	Meta any
}

// Toolset is the set of tools over one session. It is safe for concurrent
// use; changes of the same file are ordered by the workspace's file lock
// (see the editguard package's internal/engine/locks.go), whichever session or
// process makes them.
type Toolset struct {
	s     *editguard.Session
	ws    *editguard.Workspace
	tools []Tool
	byKey map[string]handler

	mu    sync.Mutex
	pages map[string]uint64 // directory path: the version of its listing this session's last page of it showed
}

type handler func(t *Toolset, ctx context.Context, args json.RawMessage) (*Output, error)

// toolDef is one tool. Each is defined, with its handler, in its own file
// as a package-level variable; the table defs in tools.go lists them in
// catalogue order and decides which are offered.
type toolDef struct {
	name, title string
	description string // written for a model
	// input is the JSON Schema of the arguments; output that of the
	// structured result, or "" (see Output). They are strings, turned into
	// json.RawMessage by New, so that initializing the table, which every
	// start of a program does, copies and checks nothing (a test checks
	// them).
	input, output string
	annotations   Annotations
	run           handler
}

// New returns the tools over session s. opts may be nil.
func New(s *editguard.Session, opts *Options) *Toolset {
	var o Options
	if opts != nil {
		o = *opts
	}
	c := catalogueFor(o.ReadOnly)
	return &Toolset{s: s, ws: s.Workspace(), tools: c.tools, byKey: c.byKey}
}

// catalogue is the tools of one kind of toolset (all, or the read-only
// ones), built once and shared, unchanged, by every Toolset of that kind:
// a server makes a Toolset for every session, and copies of the schemas
// would be most of a session's memory.
type catalogue struct {
	once  sync.Once
	tools []Tool
	byKey map[string]handler
}

var catalogues [2]catalogue // indexed by ReadOnly: 0 all, 1 read-only

func catalogueFor(readOnly bool) *catalogue {
	c := &catalogues[0]
	if readOnly {
		c = &catalogues[1]
	}
	c.once.Do(func() {
		c.byKey = map[string]handler{}
		for _, d := range defs {
			if readOnly && !d.annotations.ReadOnly {
				continue
			}
			c.tools = append(c.tools, Tool{Name: d.name, Title: d.title, Description: d.description,
				InputSchema: json.RawMessage(d.input), OutputSchema: rawJSON(d.output), Annotations: d.annotations})
			c.byKey[d.name] = d.run
		}
	})
	return c
}

// rawJSON returns s as a json.RawMessage, nil for "".
func rawJSON(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// Tools returns the tools offered, in a stable order. The caller must not
// modify the schemas.
func (t *Toolset) Tools() []Tool { return slices.Clone(t.tools) }

// Names returns the names of the tools a Toolset offers, in the order its
// Tools lists them: all the tools, or with readOnly those that a Toolset
// with Options.ReadOnly offers.
func Names(readOnly bool) []string {
	tools := catalogueFor(readOnly).tools
	names := make([]string, len(tools))
	for i, tool := range tools {
		names[i] = tool.Name
	}
	return names
}

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

// changeOutput is the output of a change: the text for the model, the
// result for programs, and the result without its diff as Meta.
func changeOutput(verb string, res *editguard.Result) *Output {
	return &Output{Structured: res, Text: changeText(verb, res), Meta: resultMeta(res)}
}

// resultMeta is res without its diff, as an Output's Meta. The diff is
// cleared before res is encoded: a diff of a large file is as large as it.
func resultMeta(res *editguard.Result) map[string]any {
	c := *res
	c.Diff = ""
	return without(&c, "diff")
}

// without returns v's JSON object without the member key.
func without(v any, key string) map[string]any {
	var m map[string]any
	if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &m) == nil {
		delete(m, key)
	}
	return m
}
