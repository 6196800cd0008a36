package remote

import (
	"context"
	"fmt"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/hostlink"
)

// host is what a publish or a pull needs of the session and its workspace
// beyond the public API. The root package provides it (remotehost.go
// there) through internal/hostlink.
type host interface {
	MaxFileSize() int64
	// Approver is the session's approver (nil if none).
	Approver() editguard.Approver
	// Denied reports the Deny pattern that protects resolved, if any.
	Denied(resolved string) (pattern string, ok bool)
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
	// themselves, all before it lets the locks go.
	Snapshot(ctx context.Context, paths []string, under func() (map[string]bool, error)) ([]hostlink.File, error)
	// Look opens the file at p and, unless allowed refuses where it
	// leads, reads it.
	Look(p string, allowed func(resolved string) error) (hostlink.File, error)
	// Put makes one guarded change of the session writer, recorded as
	// tool "pull".
	Put(ctx context.Context, writer *editguard.Session, p hostlink.Put) (*editguard.Result, error)
	// Record appends the ledger record of a publish or a pull.
	Record(tool string, args map[string]any, res any, err error) error
}

// hostOf returns the host of s.
func hostOf(s *editguard.Session) host {
	h, ok := hostlink.Host(s).(host)
	if !ok {
		panic(fmt.Sprintf("editguard: %T does not provide package remote's host", hostlink.Host(s)))
	}
	return h
}

// newError makes an *editguard.Error as the root package makes its own.
func newError(code editguard.Code, path, msg, hint string, cause error) *editguard.Error {
	return hostlink.NewError(string(code), path, msg, hint, cause).(*editguard.Error)
}

// The tool names of the ledger records of publish and pull.
const (
	toolPublish = "publish"
	toolPull    = "pull"
)
