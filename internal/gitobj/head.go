package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"syscall"
)

// HEAD and trees.
//
// Head resolves HEAD to its commit as git does with the "files" ref
// storage: HEAD holds an id (a detached HEAD) or "ref: NAME", and NAME is
// a loose ref file or a line of packed-refs, itself possibly symbolic (at
// most five levels). A repository whose config names another ref storage
// (reftable) is ErrUnsupported. A branch with no commit yet (a repository
// just made) is no error: Head reports it as unborn.
//
// Trees.Lookup then finds what a commit's tree lists at a path, reading
// each tree on the way once.

const (
	maxRefFile    = 4 << 10  // HEAD, a loose ref
	maxPackedRefs = 64 << 20 // packed-refs
	maxCommit     = 16 << 20
	maxTree       = 64 << 20
	maxSymrefs    = 5
)

// Head returns the commit HEAD names, and ok false when HEAD names a
// branch that has no commit yet.
func (r *Repo) Head() (commit ID, ok bool, err error) {
	if r.refStorage != "" && r.refStorage != "files" {
		return ID{}, false, fmt.Errorf("gitobj: ref storage %q: %w", r.refStorage, ErrUnsupported)
	}
	data, err := readFile(r.root, "HEAD", maxRefFile)
	if err != nil {
		return ID{}, false, fmt.Errorf("gitobj: reading HEAD: %w", err)
	}
	var packed []byte // packed-refs, once read
	for range maxSymrefs + 1 {
		line := strings.TrimRight(string(data), "\r\n")
		name, sym := strings.CutPrefix(line, "ref: ")
		if !sym {
			id, ok := ParseID(line)
			if !ok {
				return ID{}, false, corrupt("ref: %q", cut(line))
			}
			return id, true, nil
		}
		name = strings.TrimSpace(name)
		if !validRefName(name) {
			return ID{}, false, corrupt("symbolic ref to %q", cut(name))
		}
		data, err = readFile(r.root, name, maxRefFile)
		switch {
		case err == nil:
			continue
		case !errors.Is(err, fs.ErrNotExist) && !isNotDir(err):
			return ID{}, false, fmt.Errorf("gitobj: reading %s: %w", name, err)
		}
		if packed == nil {
			packed, err = readFile(r.root, "packed-refs", maxPackedRefs)
			if errors.Is(err, fs.ErrNotExist) {
				packed, err = []byte{}, nil
			}
			if err != nil {
				return ID{}, false, fmt.Errorf("gitobj: reading packed-refs: %w", err)
			}
		}
		id, found, err := packedRef(packed, name)
		if err != nil || !found {
			return ID{}, false, err // not found: an unborn branch
		}
		return id, true, nil
	}
	return ID{}, false, corrupt("HEAD: symbolic refs over %d deep", maxSymrefs)
}

// validRefName reports whether name may be read as a ref file: under
// refs/, relative, without empty, "." or ".." elements.
func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.ContainsAny(name, "\\\x00") {
		return false
	}
	for _, el := range strings.Split(name, "/") {
		if el == "" || el == "." || el == ".." {
			return false
		}
	}
	return true
}

// isNotDir reports whether err says that an element of a path is not a
// directory (a ref refs/heads/a looked for as refs/heads/a/b).
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// packedRef finds name in the text of packed-refs.
func packedRef(data []byte, name string) (ID, bool, error) {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hexID, ref, ok := bytes.Cut(line, []byte(" "))
		if !ok || string(ref) != name {
			continue
		}
		id, ok := ParseID(string(hexID))
		if !ok {
			return ID{}, false, corrupt("packed-refs: %q", cut(string(line)))
		}
		return id, true, nil
	}
	return ID{}, false, nil
}

func cut(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// CommitTree returns the tree of the commit id.
func (r *Repo) CommitTree(id ID) (ID, error) {
	data, err := r.readObject(id, objCommit, nil, maxCommit)
	if err != nil {
		return ID{}, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	hexID, ok := bytes.CutPrefix(line, []byte("tree "))
	tree, ok2 := ParseID(string(hexID))
	if !ok || !ok2 {
		return ID{}, corrupt("commit %s: no tree", id)
	}
	return tree, nil
}

// File modes in a tree.
const (
	ModeTree    = 0o40000
	ModeFile    = 0o100644
	ModeExec    = 0o100755
	ModeSymlink = 0o120000
	ModeGitlink = 0o160000
)

// A TreeEntry is one entry of a tree: its object and mode.
type TreeEntry struct {
	ID   ID
	Mode uint32
}

// IsFile reports whether the entry is a regular file's blob.
func (e TreeEntry) IsFile() bool { return e.Mode&0o170000 == 0o100000 }

// Trees reads the trees of a repository, keeping each one it read, for
// lookups of many paths. It is not safe for concurrent use.
type Trees struct {
	r     *Repo
	trees map[ID]map[string]TreeEntry
}

// Trees returns a reader of r's trees.
func (r *Repo) Trees() *Trees { return &Trees{r: r, trees: map[ID]map[string]TreeEntry{}} }

// Lookup returns the entry the tree root lists at path (elements separated
// by '/'), and false if there is none.
func (t *Trees) Lookup(root ID, path string) (TreeEntry, bool, error) {
	cur := TreeEntry{ID: root, Mode: ModeTree}
	for el := range strings.SplitSeq(path, "/") {
		if cur.Mode != ModeTree {
			return TreeEntry{}, false, nil
		}
		entries, err := t.read(cur.ID)
		if err != nil {
			return TreeEntry{}, false, err
		}
		e, ok := entries[el]
		if !ok {
			return TreeEntry{}, false, nil
		}
		cur = e
	}
	return cur, true, nil
}

// read returns the entries of the tree id, by name.
func (t *Trees) read(id ID) (map[string]TreeEntry, error) {
	if m, ok := t.trees[id]; ok {
		return m, nil
	}
	data, err := t.r.readObject(id, objTree, nil, maxTree)
	if err != nil {
		return nil, err
	}
	m, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("%w (tree %s)", err, id)
	}
	t.trees[id] = m
	return m, nil
}

// parseTree parses a tree's entries: "MODE NAME\x00" and 20 bytes of id.
func parseTree(data []byte) (map[string]TreeEntry, error) {
	m := map[string]TreeEntry{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, corrupt("tree entry")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, corrupt("tree entry mode %q", cut(string(data[:sp])))
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul <= 0 || len(data) < nul+1+20 {
			return nil, corrupt("tree entry")
		}
		name := string(data[:nul])
		m[name] = TreeEntry{ID: ID(data[nul+1 : nul+21]), Mode: uint32(mode)}
		data = data[nul+21:]
	}
	return m, nil
}
