//go:build unix

package editguard

import (
	"encoding/hex"
	"fmt"
	"os"
	"sync"

	"github.com/editguard/editguard/internal/gitobj"
	"golang.org/x/sys/unix"
)

// gitView is the work tree's git repository as checkpoints use it. A file
// whose bytes are the blob git's index lists for its path needs no copy in
// the store: git keeps it, and keeps it as long as the index lists it (git
// gc never prunes what the index names). So a checkpoint records such a
// file as backed by that blob (cpEntry.Git, Backed) and stores nothing, and
// a later scan stores a copy only if the index moves on to another blob
// while the file stays as it was. The bytes are compared, not the stat
// data git keeps: a file that git's filters (end of line conversion, clean
// filters) change on the way in is not its blob, and is copied.
//
// What a command displaces is read back from git's objects, checked
// against its SHA-256. A blob the command itself removes from git (a git
// gc --prune=now after the index moved on) is then missing from history,
// and the result says so, as for an object removed from the store.
//
// Only a .git directory at the root is used: a root below a repository's
// top, a linked worktree (whose .git is a file) or a SHA-256 repository
// gets copies, as does every file when the index does not read (a split
// index, a corrupt one).
type gitView struct {
	repo  *gitobj.Repo // nil: no repository, or none that reads
	dir   *os.Root     // the .git directory
	index *gitobj.Index
	once  sync.Once // reads index
}

// maxGitIndex bounds the index file read: about a million entries.
const maxGitIndex = 256 << 20

// git opens the repository at the root, once per store opening.
func (cp *checkpoints) git(w *Workspace) *gitView {
	if cp.gv != nil {
		return cp.gv
	}
	cp.gv = &gitView{}
	dir, err := w.root.OpenRoot(".git")
	if err != nil {
		return cp.gv
	}
	repo, err := gitobj.Open(dir)
	if err != nil {
		dir.Close()
		return cp.gv
	}
	cp.gv.repo, cp.gv.dir = repo, dir
	return cp.gv
}

func (g *gitView) close() {
	if g != nil && g.repo != nil {
		g.repo.Close()
		g.dir.Close()
	}
}

// identity names the index file as it is now (its checksum, inode, size
// and mtime), "" if there is none: a scan whose index has the identity of
// the one before needs no lookups for the files it does not read.
func (g *gitView) identity() string {
	if g.repo == nil {
		return ""
	}
	f, err := g.dir.OpenFile("index", os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size < 20 {
		return ""
	}
	var sum [20]byte
	if n, err := f.ReadAt(sum[:], st.Size-20); n != 20 {
		_ = err
		return ""
	}
	return fmt.Sprintf("%s-%x-%x-%x", hex.EncodeToString(sum[:]), st.Ino, st.Size, st.Mtim.Nano())
}

// load reads the index, once; lookup calls it, and a scan before its
// workers share the view, unless it may need no lookups.
func (g *gitView) load() {
	g.once.Do(func() {
		if g.repo != nil {
			g.index, _ = g.repo.ReadIndex(maxGitIndex)
		}
	})
}

// lookup returns the blob the index lists for p.
func (g *gitView) lookup(p string) (gitobj.ID, bool) {
	if g.repo == nil {
		return gitobj.ID{}, false
	}
	g.load()
	if g.index == nil {
		return gitobj.ID{}, false
	}
	return g.index.Lookup(p)
}

// blob is the blob the index lists for p, in hexadecimal; "" for none.
func (g *gitView) blob(p string) string {
	if id, ok := g.lookup(p); ok {
		return id.String()
	}
	return ""
}

// check returns the blob the index lists for p ("" for none) and whether
// data, p's content, is that blob, present in git's objects.
func (g *gitView) check(p string, data []byte) (blob string, backed bool) {
	id, ok := g.lookup(p)
	if !ok {
		return "", false
	}
	return id.String(), gitobj.BlobID(data) == id && g.repo.Has(id)
}

// read returns the blob blob if its content's SHA-256 is sum; nil if it
// is not there (or not that content).
func (g *gitView) read(blob, sum string, buf []byte, max int64) ([]byte, []byte) {
	id, ok := gitobj.ParseID(blob)
	if g.repo == nil || !ok {
		return nil, buf
	}
	data, err := g.repo.ReadBlob(id, buf, max)
	if err != nil {
		return nil, buf
	}
	if sha256Hex(data) != sum {
		return nil, data
	}
	return data, data
}
