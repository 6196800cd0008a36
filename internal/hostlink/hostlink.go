// Package hostlink gives package remote (publish and pull) what it needs
// of a workspace beyond the public API: the sync state in .editguard, the
// file locks held over a snapshot of several files, a guarded change
// under the tool name "pull", and errors made as the root package makes
// its own. Nothing else calls it.
//
// The root package fills the variables in at init (remotehost.go there).
// This package cannot import the root package, which imports it, so a
// session is passed as an any holding an *editguard.Session, and what
// comes back is an any that package remote asserts to its own interface
// of the root's types (remote/host.go; its tests fail if the two part).
package hostlink

var (
	// Host returns the host of the session s: the value package remote
	// asserts to its interface host.
	Host func(s any) any

	// NewError returns an *editguard.Error of code, made as the root
	// package makes its own (a long path shortened, long texts cut).
	NewError func(code, path, msg, hint string, cause error) error
)

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
