package editguard

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"

	"github.com/editguard/editguard/internal/engine"
)

// target and observation are the engine's (internal/engine): an opened
// parent directory with the final element of a resolved path, and what was
// on disk at one moment.
type (
	target      = engine.Target
	observation = engine.Observation
)

// stateOf describes what obs saw as a FileState.
func stateOf(obs *observation) FileState {
	if !obs.Stat.Exists {
		return FileState{}
	}
	return FileState{Exists: true, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS()}
}

// openTarget resolves p and opens its parent directory through the root.
func (w *Workspace) openTarget(p string) (*target, error) {
	resolved, err := w.resolve(p)
	if err != nil {
		return nil, err
	}
	if resolved == "." {
		return nil, newError(CodeNotAFile, p, "the workspace root is a directory", "", nil)
	}
	t, err := w.eng.OpenTarget(p, w.lexical(p), resolved)
	if err != nil {
		return nil, targetError(p, err)
	}
	return t, nil
}

// checkNotLink returns a NOT_A_FILE error if the last element of p, as the
// caller wrote it, names a symbolic link, and nil otherwise: when it names
// anything else, nothing, or cannot be looked at (then openTarget reports
// why). Symlinks before the last element are followed as resolve follows
// them; a trailing slash is ignored, so "link/" is the link too. Delete and
// move call it before openTarget, which would follow the link: they act on
// names, and neither the link's target (another name) nor the link itself
// (history keeps bytes, and a restore would bring back a regular file) is
// what they may change. The check and the later open are two looks at the
// disk: a link put in place between them is followed as any other
// operation follows it.
func (w *Workspace) checkNotLink(p string) error {
	dir, base, err := w.resolveParent(p)
	if err != nil {
		return nil
	}
	name := path.Join(dir, base)
	fi, err := w.root.Lstat(name)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	raw, err := w.root.Readlink(name)
	if err != nil {
		raw = ""
	}
	to, target, isFile := w.describeLink(p, raw)
	e := newError(CodeNotAFile, p,
		"a symbolic link (to "+to+"), not a regular file: delete and move do not follow a link at the end of a path, nor remove or rename links; nothing was changed",
		"to remove, rename or replace the link itself, use a shell command (rm, mv)", nil)
	if target != "" {
		e.Details["link_target"] = shortPath(target)
	}
	if isFile {
		e.RecoveryHint = "to delete or move the file it points to, name it by its own path (" + shortPath(target) + "); " + e.RecoveryHint
	}
	return e
}

// describeLink says what the symlink p, whose stored target is raw, points
// to, for a message: the target's path relative to the root and what is
// there, or that it leaves the root or cannot be resolved. target is that
// path relative to the root, or "" if there is none, and isFile says
// whether a regular file is there.
func (w *Workspace) describeLink(p, raw string) (to, target string, isFile bool) {
	resolved, err := w.resolve(p)
	switch {
	case err == nil && resolved == ".":
		return "the workspace root", "", false
	case err == nil:
		what := "which does not exist"
		if fi, err := w.root.Lstat(resolved); err == nil {
			switch {
			case fi.Mode().IsRegular():
				what, isFile = "a file", true
			case fi.IsDir():
				what = "a directory"
			default:
				what = "not a regular file"
			}
		}
		return strconv.Quote(shortPath(resolved)) + ", " + what, resolved, isFile
	case errors.Is(err, ErrOutsideRoot):
		return "a path outside the workspace root", "", false
	}
	// A target that cannot be resolved (a loop, a protected path): its
	// text as stored, unless that is an absolute path, which would name
	// the host's directories.
	raw = filepath.ToSlash(raw)
	if raw == "" || path.IsAbs(raw) || filepath.IsAbs(raw) {
		return "a path that cannot be resolved", "", false
	}
	return strconv.Quote(shortPath(raw)) + ", which cannot be resolved", "", false
}

// observe reads the target under whatever lock the caller holds.
func (w *Workspace) observe(t *target) (*observation, error) {
	return w.observeExpecting(t, "", nil)
}

// observeExpecting is observe for a caller that expects the file to hold
// expect, whose SHA-256 is sum: equal bytes are not hashed again.
func (w *Workspace) observeExpecting(t *target, sum string, expect []byte) (*observation, error) {
	obs, err := w.eng.ObserveExpecting(t, sum, expect)
	if err != nil {
		return nil, observeError(t, err)
	}
	return obs, nil
}
