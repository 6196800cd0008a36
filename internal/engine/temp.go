package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
)

// Temporary files.
//
// A commit writes its new content to a temporary file next to the target.
// Its name is fixed per workspace and target, ".NAME.<tag>.egtmp", where tag
// is an HMAC of NAME under the workspace's key for temporary names, derived
// from the user's key (see trust.go), which no repository can know. Two writers can never need the same temporary name at
// once, because a commit holds the target's file lock (see locks.go),
// which every process of this workspace shares, from before it writes the
// temporary file until it has removed what the swap left there; only this
// workspace can compute the name. So a file of that name found under the
// lock was left by a writer of this workspace that died mid-commit: it is
// provably ours (no one else can compute the name) and provably dead (its
// writer would hold the lock). The next commit to the target finds it in one
// lookup, keeps its bytes in history unless history already has them, and
// removes it. Anything else that looks like a temporary file, a user's file
// or another workspace's leftover, is never touched.

// TempName is the temporary name this workspace uses for target name.
func (e *Engine) TempName(name string) string {
	m := hmac.New(sha256.New, e.cfg.TempKey)
	m.Write([]byte(name))
	tag := hex.EncodeToString(m.Sum(nil)[:8])
	if len(name)+len(tag)+8 > 255 {
		s := sha256.Sum256([]byte(name))
		name = name[:200] + "-" + hex.EncodeToString(s[:4])
	}
	return "." + name + "." + tag + ".egtmp"
}

// IsTempName reports whether name, an entry of a directory whose other
// entries are siblings, is this workspace's temporary name for some target:
// the pattern first (cheap), then the HMAC. A name too long for its target
// to be read back from it (TempName shortens those) is recognised only
// when its target is among siblings. A user's file that merely ends in
// .egtmp is not ours: no one without the workspace key computes the tag.
func (e *Engine) IsTempName(name string, siblings func(yield func(string) bool)) bool {
	if !atomicfile.IsTemp(name) {
		return false
	}
	target := name[1 : len(name)-len(".egtmp")-17]
	if e.TempName(target) == name {
		return true
	}
	if len(target) != 209 || target[200] != '-' || siblings == nil {
		return false
	}
	for s := range siblings {
		if len(s) > 200 && s[:200] == target[:200] && e.TempName(s) == name {
			return true
		}
	}
	return false
}

// sweepTemp prepares t's temporary name under the file's lock: a file left
// there by a writer that died is kept in history (unless history already
// holds its bytes; a version of op opCrashedWrite, under session) and
// removed. It returns the name to use; an entry there that is not a
// regular file is not ours, is left alone, and "" is returned: the commit
// then uses a random name.
func (e *Engine) sweepTemp(t *Target, session string) (string, error) {
	tmp := e.TempName(t.Base)
	f, st, err := t.Dir.Open(tmp)
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
	if st.Size > e.cfg.MaxFileSize {
		return "", nil // larger than anything we write: not ours
	}
	data := make([]byte, st.Size)
	if _, err := f.ReadAt(data, 0); err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	sum := hex.EncodeToString(s[:])
	if !e.inHistory(t.Resolved, sum) {
		if _, err := e.cfg.Hist.Save(t.Resolved, data, false, sum, history.Meta{Op: opCrashedWrite, Session: session}); err != nil {
			return "", err
		}
	}
	if err := t.Dir.Unlink(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return tmp, nil
}

// inHistory reports whether path's history holds a version with this sum.
func (e *Engine) inHistory(resolved, sum string) bool {
	vs, err := e.cfg.Hist.List(resolved)
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

// opCrashedWrite is the op of the history version that keeps a dead
// writer's temporary file.
const opCrashedWrite = "crashed_write"
