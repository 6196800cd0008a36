package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
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
	var b strings.Builder
	fmt.Fprintf(&b, "%s/\n", strings.TrimSuffix(p, "/"))
	shown := 0
	var walk func(dir string, level int) error
	walk = func(dir string, level int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := t.ws.ReadDir(dir)
		if err != nil {
			return nil // unreadable: shown as a leaf
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
		for i, de := range des {
			name := de.Name()
			if shown == maxTreeEntries {
				fmt.Fprintf(&b, "%s… (%d more entries here; the tree stops at %d)\n", indent, len(des)-i, maxTreeEntries)
				return errTreeFull
			}
			shown++
			display, _, _ := displayName(name)
			child := path.Join(dir, name)
			switch {
			case de.Type()&fs.ModeSymlink != 0:
				target, _ := t.ws.Readlink(child)
				fmt.Fprintf(&b, "%s%s -> %s\n", indent, display, target)
			case de.IsDir():
				fmt.Fprintf(&b, "%s%s/\n", indent, display)
				if name == ".git" {
					continue
				}
				if level < depth {
					if err := walk(child, level+1); err != nil {
						return err
					}
				} else if des, _ := t.ws.ReadDir(child); len(des) > 0 {
					fmt.Fprintf(&b, "%s  …\n", indent)
				}
			default:
				fmt.Fprintf(&b, "%s%s\n", indent, display)
			}
		}
		return nil
	}
	if err := walk(p, 1); err != nil && err != errTreeFull {
		return nil, err
	}
	return &Output{Structured: map[string]any{"path": p, "entries": shown}, Text: b.String()}, nil
}

var errTreeFull = fmt.Errorf("tree full")
