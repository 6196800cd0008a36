package editguard

import (
	"context"
)

// DirResult is the result of CreateDirectory.
type DirResult struct {
	Path    string `json:"path"`
	Created bool   `json:"created"` // false: it already existed
	// Warnings name the directories it created whose names are not
	// portable (Options.Names).
	Warnings []string `json:"warnings,omitempty"`
}

// CreateDirectory makes the directory p and any missing parents inside the
// root, each made durable (it and its parent fsynced) before the next. A
// directory that exists is not an error; a path that is a file, or a
// protected path (.git of any repository, editguard's state), is. It
// discards nothing, so it needs no read and keeps no history. The names it
// creates are checked against the workspace's name policy (Options.Names).
func (s *Session) CreateDirectory(ctx context.Context, p string) (*DirResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if err := s.w.checkChangeable(t); err != nil {
		return nil, err
	}
	existed := false
	if t.Dir != nil {
		st, err := t.Dir.Lstat(t.Base)
		if err != nil {
			return nil, ioError(p, err)
		}
		if st.Exists && !st.Mode.IsDir() {
			return nil, notAFile(p, &observation{Stat: st})
		}
		existed = st.Exists
	}
	var warnings []string
	if !existed {
		if warnings, err = s.w.checkNames(p, t.Resolved); err != nil {
			return nil, err
		}
	}
	inner := &target{Path: p, Resolved: t.Resolved + "/."}
	if err := s.w.makeParent(inner); err != nil {
		return nil, err
	}
	inner.Close()
	return &DirResult{Path: p, Created: !existed, Warnings: warnings}, nil
}
