package editguard

import (
	"encoding/json"
	"fmt"
)

// Code names the kind of a failure. The same codes appear in the library, in
// MCP tool results and in the CLI's JSON output.
type Code string

// Error codes.
const (
	CodeNotRead         Code = "NOT_READ"         // existing file, no baseline, no precondition
	CodeStaleFile       Code = "STALE_FILE"       // content differs from what the caller saw
	CodeNoMatch         Code = "NO_MATCH"         // old_string not found
	CodeAmbiguousMatch  Code = "AMBIGUOUS_MATCH"  // old_string found more than once
	CodeNoChange        Code = "NO_CHANGE"        // the edit changes nothing
	CodeOutsideRoot     Code = "OUTSIDE_ROOT"     // path resolves outside the workspace
	CodeProtectedPath   Code = "PROTECTED_PATH"   // .editguard/ or a denied path
	CodeNotAFile        Code = "NOT_A_FILE"       // a directory, device or missing file where a file is needed
	CodeNotFound        Code = "NOT_FOUND"        // the file does not exist
	CodeBinaryFile      Code = "BINARY_FILE"      // not text
	CodeEncoding        Code = "ENCODING"         // bytes invalid in the encoding
	CodeTooLarge        Code = "TOO_LARGE"        // over the size limit
	CodeRejected        Code = "REJECTED"         // declined by the person approving
	CodePlaceholder     Code = "PLACEHOLDER"      // new content elides code with a placeholder
	CodeInvalidArgument Code = "INVALID_ARGUMENT" // malformed call
	CodeIO              Code = "IO"               // the file system failed
)

// Staleness reasons in Error.Details["reason"] of STALE_FILE.
const (
	ReasonModified    = "modified"
	ReasonDeleted     = "deleted"
	ReasonTypeChanged = "type_changed"
	ReasonCreated     = "created"
)

// Error is the structured failure of every editguard operation. Match kinds
// with errors.Is against the Err* values (errors.Is(err, editguard.ErrStaleFile)).
type Error struct {
	Code         Code           `json:"code"`
	Message      string         `json:"message"`
	Details      map[string]any `json:"details,omitempty"`
	RecoveryHint string         `json:"recovery_hint,omitempty"`
	Err          error          `json:"-"` // the underlying cause, if any
}

func (e *Error) Error() string {
	if p, ok := e.Details["path"]; ok {
		return fmt.Sprintf("%s: %s: %s", e.Code, p, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same code, so that
// errors.Is(err, ErrStaleFile) matches any stale-file error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.Details == nil
}

// MarshalJSON encodes the §5 error object.
func (e *Error) MarshalJSON() ([]byte, error) {
	type plain Error
	return json.Marshal((*plain)(e))
}

// Sentinels for errors.Is.
var (
	ErrNotRead         = &Error{Code: CodeNotRead}
	ErrStaleFile       = &Error{Code: CodeStaleFile}
	ErrNoMatch         = &Error{Code: CodeNoMatch}
	ErrAmbiguousMatch  = &Error{Code: CodeAmbiguousMatch}
	ErrNoChange        = &Error{Code: CodeNoChange}
	ErrOutsideRoot     = &Error{Code: CodeOutsideRoot}
	ErrProtectedPath   = &Error{Code: CodeProtectedPath}
	ErrNotAFile        = &Error{Code: CodeNotAFile}
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrBinaryFile      = &Error{Code: CodeBinaryFile}
	ErrEncoding        = &Error{Code: CodeEncoding}
	ErrTooLarge        = &Error{Code: CodeTooLarge}
	ErrRejected        = &Error{Code: CodeRejected}
	ErrPlaceholder     = &Error{Code: CodePlaceholder}
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrIO              = &Error{Code: CodeIO}
)

// IsConflict reports whether err is NOT_READ or STALE_FILE: the caller must
// read the file (again) before changing it.
func IsConflict(err error) bool {
	e, ok := err.(*Error)
	return ok && (e.Code == CodeNotRead || e.Code == CodeStaleFile)
}

func newError(code Code, path, msg, hint string, cause error) *Error {
	e := &Error{Code: code, Message: msg, RecoveryHint: hint, Err: cause, Details: map[string]any{}}
	if path != "" {
		e.Details["path"] = path
	}
	return e
}
