package editguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"github.com/editguard/editguard/internal/history"
)

// Temporary files.
//
// A commit writes its new content to a temporary file next to the target.
// Its name is fixed per workspace and target, ".NAME.<tag>.egtmp", where tag
// is an HMAC of NAME under the workspace's key for temporary names, derived
// from the user's key (see trust.go), which no repository can know. Two writers can never need the same temporary name at
// once, because a commit holds the target's file lock (see commitlock.go),
// which every process of this workspace shares, from before it writes the
// temporary file until it has removed what the swap left there; only this
// workspace can compute the name. So a file of that name found under the
// lock was left by a writer of this workspace that died mid-commit: it is
// provably ours (no one else can compute the name) and provably dead (its
// writer would hold the lock). The next commit to the target finds it in one
// lookup, keeps its bytes in history unless history already has them, and
// removes it. Anything else that looks like a temporary file, a user's file
// or another workspace's leftover, is never touched.

// tempName is the temporary name this workspace uses for target name.
func (w *Workspace) tempName(name string) string {
	m := hmac.New(sha256.New, w.key)
	m.Write([]byte(name))
	tag := hex.EncodeToString(m.Sum(nil)[:8])
	if len(name)+len(tag)+8 > 255 {
		s := sha256.Sum256([]byte(name))
		name = name[:200] + "-" + hex.EncodeToString(s[:4])
	}
	return "." + name + "." + tag + ".egtmp"
}

// sweepTemp prepares t's temporary name under the file's lock: a file left
// there by a writer that died is kept in history (unless history already
// holds its bytes) and removed. It returns the name to use; an entry there
// that is not a regular file is not ours, is left alone, and a random name
// is used instead.
func (w *Workspace) sweepTemp(t *target, session string) (string, error) {
	tmp := w.tempName(t.base)
	f, st, err := t.dir.Open(tmp)
	if err != nil {
		return "", err
	}
	if f == nil {
		if st.Exists {
			return "", nil
		}
		return tmp, nil
	}
	defer f.Close()
	if st.Size > w.opts.MaxFileSize {
		return "", nil // larger than anything we write: not ours
	}
	data := make([]byte, st.Size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return "", err
	}
	sum := sha256Hex(data)
	if !w.inHistory(t.resolved, sum) {
		if _, err := w.hist.Save(t.resolved, data, false, sum, history.Meta{Op: opCrashedWrite, Session: session}); err != nil {
			return "", err
		}
	}
	if err := t.dir.Unlink(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return tmp, nil
}

// inHistory reports whether path's history holds a version with this sum.
func (w *Workspace) inHistory(resolved, sum string) bool {
	vs, err := w.hist.List(resolved)
	if err != nil {
		return false
	}
	for _, v := range vs {
		if v.SHA256 == sum {
			return true
		}
	}
	return false
}
