package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/editguard/editguard/internal/rawpath"
)

var directoryTreeTool = &toolDef{
	name: "directory_tree", title: "Directory tree",
	description: directoryTreeDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory, relative to the workspace root. Default: the root."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "Levels to show. Default 3."}
  },
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).directoryTree,
}

const directoryTreeDescription = `Show the directories and files under a directory as an indented tree, directories first marked with "/", to a depth (default 3). At most 1,000 entries are shown; "…" marks what was left out. .git directories are shown but not opened, and editguard's .editguard is not shown. Symlinks are shown with "->" and not followed.`

const (
	maxTreeEntries = 1000
	defaultDepth   = 3
)

func (t *Toolset) directoryTree(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct {
		Path  *string `json:"path"`
		Depth int     `json:"depth"`
	}
	if err := decodeArgs("directory_tree", raw, &a); err != nil {
		return nil, err
	}
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	depth := a.Depth
	if depth <= 0 {
		depth = defaultDepth
	}
	if depth > 10 {
		return nil, invalidArgument("directory_tree", "depth must be between 1 and 10", map[string]any{"argument": "depth"})
	}
	if st, err := t.ws.Stat(p); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, invalidArgument("directory_tree", "not a directory: "+p, map[string]any{"path": p})
	}
	w := &treeWalk{t: t, ctx: ctx, depth: depth}
	fmt.Fprintf(&w.b, "%s/\n", strings.TrimSuffix(p, "/"))
	tree, err := w.dir(p, 1)
	truncated := err == errTreeFull
	if err != nil && !truncated {
		return nil, err
	}
	return &Output{Structured: map[string]any{"path": p, "entries": w.shown, "truncated": truncated, "tree": tree}, Text: w.b.String()}, nil
}

func (e TreeEntry) MarshalJSON() ([]byte, error) {
	type plain TreeEntry
	w := struct {
		plain
		NameHex string `json:"name_hex,omitempty"`
	}{plain: plain(e)}
	w.Name, w.NameHex = rawpath.Split(e.Name)
	return json.Marshal(&w)
}

// TreeEntry is one entry of directory_tree's structured result.
type TreeEntry struct {
	// Name is the exact name. Its JSON shows it as list_directory does:
	// U+FFFD for each byte that is not UTF-8, and the exact bytes in
	// name_hex beside.
	Name     string       `json:"name"`
	Type     string       `json:"type"`             // "file", "directory", "symlink", or "more" (see More)
	Target   string       `json:"target,omitempty"` // a symlink's
	Children []*TreeEntry `json:"children,omitempty"`
	// More counts a directory's entries left out below the depth; in an
	// entry of type "more", last of its directory, the entries left out
	// there once the tree reached its limit.
	More int `json:"more,omitempty"`
}

// treeWalk is one directory_tree: the text and the entries so far.
type treeWalk struct {
	t     *Toolset
	ctx   context.Context
	depth int
	b     strings.Builder
	shown int
}

// dir lists dir, at level, directories first, into the text and as
// entries; errTreeFull ends the walk at the limit.
func (w *treeWalk) dir(dir string, level int) ([]*TreeEntry, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	des, err := w.t.ws.ReadDir(dir)
	if err != nil {
		return nil, nil // unreadable: shown as a leaf
	}
	slices.SortFunc(des, func(x, y fs.DirEntry) int {
		if x.IsDir() != y.IsDir() {
			if x.IsDir() {
				return -1
			}
			return 1
		}
		return strings.Compare(x.Name(), y.Name())
	})
	indent := strings.Repeat("  ", level)
	entries := []*TreeEntry{}
	for i, de := range des {
		if w.shown == maxTreeEntries {
			fmt.Fprintf(&w.b, "%s… (%d more entries here; the tree stops at %d)\n", indent, len(des)-i, maxTreeEntries)
			entries = append(entries, &TreeEntry{Name: "…", Type: "more", More: len(des) - i})
			return entries, errTreeFull
		}
		w.shown++
		e, err := w.entry(dir, de, level, indent)
		entries = append(entries, e)
		if err != nil {
			return entries, err
		}
	}
	return entries, nil
}

// entry shows one entry of dir, and what is under it within the depth.
func (w *treeWalk) entry(dir string, de fs.DirEntry, level int, indent string) (*TreeEntry, error) {
	name := de.Name()
	display, _, _ := displayName(name)
	child := path.Join(dir, name)
	e := &TreeEntry{Name: name, Type: "file"}
	switch {
	case de.Type()&fs.ModeSymlink != 0:
		e.Type = "symlink"
		e.Target, _ = w.t.ws.Readlink(child)
		fmt.Fprintf(&w.b, "%s%s -> %s\n", indent, display, e.Target)
	case de.IsDir():
		e.Type = "directory"
		fmt.Fprintf(&w.b, "%s%s/\n", indent, display)
		if name == ".git" {
			return e, nil
		}
		if level < w.depth {
			var err error
			e.Children, err = w.dir(child, level+1)
			return e, err
		}
		if des, _ := w.t.ws.ReadDir(child); len(des) > 0 {
			fmt.Fprintf(&w.b, "%s  …\n", indent)
			e.More = len(des)
		}
	default:
		fmt.Fprintf(&w.b, "%s%s\n", indent, display)
	}
	return e, nil
}

var errTreeFull = fmt.Errorf("tree full")
