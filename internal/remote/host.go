package remote

import (
	"context"
	"errors"

	"github.com/editguard/editguard/internal/ledger"
)

// Host is what a publish or a pull needs of the session it runs for and
// of its workspace. The root package implements it (remotehost.go there)
// and passes it to Publish and Pull; this package does not import the
// root package, which calls it.
type Host interface {
	// Dir is the workspace's root directory.
	Dir() string
	// MaxFileSize is the workspace's file size limit.
	MaxFileSize() int64
	// Denied reports the Deny pattern that protects resolved, if any.
	Denied(resolved string) (pattern string, ok bool)
	// Log calls fn for every record of the workspace's ledger, oldest
	// first.
	Log(fn func(*ledger.Record) error) error
	// Version returns the bytes a history version of the file at
	// resolved keeps.
	Version(resolved, id string) ([]byte, error)
	// LockSync takes the workspace's publish/pull lock.
	LockSync(ctx context.Context) (unlock func(), err error)
	// LoadState and SaveState read and durably replace a JSON file of
	// the state directory; a missing file leaves v as it is.
	LoadState(name string, v any) error
	SaveState(name string, v any) error
	// Snapshot opens the files at paths, takes all their locks, calls
	// under, and then reads the files under returned whose path leads to
	// themselves, all before it lets the locks go. It returns the files
	// in the order of paths.
	Snapshot(ctx context.Context, paths []string, under func() (map[string]bool, error)) ([]File, error)
	// Look opens the file at p and, unless allowed refuses where it
	// leads, reads it.
	Look(p string, allowed func(resolved string) error) (File, error)
	// Put makes one guarded change, recorded as tool "pull" under the
	// session's name, in a session of its own (the caller's reads do not
	// come to cover what it writes), asked of the session's approver.
	Put(ctx context.Context, p Put) (*Written, error)
	// ErrorCode returns the code of an error the host returned, or ""
	// for an error it did not make.
	ErrorCode(err error) string
}

// File is a file of the workspace as a host saw it.
type File struct {
	// Path is the path asked for, Resolved where it leads (symlinks
	// followed, relative to the root).
	Path, Resolved string
	// OpenErr is set when the path could not be opened; nothing below
	// is then.
	OpenErr error
	// Read says the file was observed: the fields below describe it.
	Read    bool
	Exists  bool
	Regular bool
	Exec    bool // any execute bit is set
	SHA256  string
	Size    int64
	MtimeMS int64
	Data    []byte // the content of a regular file
}

// Put is a guarded change that writes Data to Path (executable if Exec),
// or removes the file if Remove, over the file as Pre states it.
type Put struct {
	Path   string
	Data   []byte
	SHA256 string // of Data
	Exec   bool
	Remove bool
	// ExpectedSHA256 is the content the file must hold; MustNotExist
	// says it must not exist (then ExpectedSHA256 is empty).
	ExpectedSHA256 string
	MustNotExist   bool
	// Args are the arguments its ledger record carries.
	Args map[string]any
}

// Written is what a Put did.
type Written struct {
	SHA256           string // the content written; empty for a removal
	BackupVersion    string // the history version that keeps what the file held
	Created, Deleted bool
	Warnings         []string
}

// Error is an error a publish or a pull makes itself. The root package
// turns it into its own error type, with the same code, message, hint,
// details and cause.
type Error struct {
	Code    string
	Path    string // the path the error is about, if one
	Message string
	Hint    string
	Details map[string]any // "path" is Path, if set
	Err     error          // the cause
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// newError makes an *Error.
func newError(code, path, msg, hint string, cause error) *Error {
	e := &Error{Code: code, Path: path, Message: msg, Hint: hint, Err: cause, Details: map[string]any{}}
	if path != "" {
		e.Details["path"] = path
	}
	return e
}

// codeOf returns the code of err: its own, or the host's, or IO.
func (sy *syncer) codeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if c := sy.h.ErrorCode(err); c != "" {
		return c
	}
	return codeIO
}

// The error codes this package makes or tells apart: the root package's
// codes of the same names.
const (
	codeBusy            = "BUSY"
	codeGit             = "GIT"
	codeInvalidArgument = "INVALID_ARGUMENT"
	codeIO              = "IO"
	codeNotRead         = "NOT_READ"
	codeProtectedPath   = "PROTECTED_PATH"
	codeRemote          = "REMOTE"
	codeStaleFile       = "STALE_FILE"
	codeTooLarge        = "TOO_LARGE"
)

// The reasons a STALE_FILE's file gives: the root package's Reason
// constants of the same names.
const (
	reasonModified    = "modified"
	reasonDeleted     = "deleted"
	reasonTypeChanged = "type_changed"
	reasonCreated     = "created"
)

// StateDir is the name of editguard's state directory in a workspace: the
// root package's StateDir (a test there checks that the two agree).
const StateDir = ".editguard"

// The tool names of the ledger records of publish and pull.
const (
	toolPublish = "publish"
	toolPull    = "pull"
)
