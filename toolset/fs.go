package toolset

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/editguard/editguard"
)

type pathArgs struct {
	Path *string `json:"path"`
}

// openRoot checks p the way the session does (OUTSIDE_ROOT,
// PROTECTED_PATH) and returns the root and p relative to it. Access then
// goes through os.Root, which refuses any symlink that leaves the root.
func (t *Toolset) openRoot(p string) (*os.Root, string, error) {
	if _, _, err := t.s.Baseline(p); err != nil && !errors.Is(err, editguard.ErrIO) {
		// An IO failure of the check (a path through a regular file) is
		// left to the access below, which reports it precisely.
		return nil, "", err
	}
	rel := filepath.FromSlash(p)
	if filepath.IsAbs(rel) {
		r, err := filepath.Rel(t.ws.Dir(), rel)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return nil, "", &editguard.Error{Code: editguard.CodeOutsideRoot, Message: "path resolves outside the workspace root", Details: map[string]any{"path": p}}
		}
		rel = r
	}
	root, err := os.OpenRoot(t.ws.Dir())
	if err != nil {
		return nil, "", err
	}
	return root, rel, nil
}

func fsError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &editguard.Error{Code: editguard.CodeNotFound, Message: "no such file or directory", Details: map[string]any{"path": p},
			RecoveryHint: "check the path with list_directory", Err: err}
	case strings.Contains(err.Error(), "path escapes from parent"):
		return &editguard.Error{Code: editguard.CodeOutsideRoot, Message: "path resolves outside the workspace root", Details: map[string]any{"path": p}, Err: err}
	}
	return &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Details: map[string]any{"path": p}, Err: err}
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}
