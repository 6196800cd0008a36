package toolset

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/editguard/editguard/internal/rawpath"
)

var listDirectoryTool = &toolDef{
	name: "list_directory", title: "List directory",
	description: listDirectoryDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory path, relative to the workspace root. Default: the root."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based number of the first entry to list, in name order. Default: 1."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Most entries to list. Default and maximum: 1000."}
  },
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).listDirectory,
}

const listDirectoryDescription = `List the entries of a directory in the workspace: name, type (file, dir, symlink or other) and size in bytes for files. Entries are sorted by name, at most 1,000 at a time: for a larger directory the result says how many there are and which offset lists the next ones, and a later page says so if the directory changed since the page before it. editguard's own state directory (.editguard) is not shown. path defaults to the workspace root.`

// maxEntries caps a listing so that a huge directory cannot flood the
// model's context.
const maxEntries = 1000

// DirEntry is one entry of a listing.
type DirEntry struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // file, dir, symlink or other
	SizeBytes int64  `json:"size_bytes"`
	// NonUTF8 marks a name that is not valid UTF-8 on disk. Name then shows
	// each invalid byte as U+FFFD, which no path given to the tools may
	// contain for a file that does not exist, so the listed name can never
	// create a look-alike; NameHex holds the name's exact bytes.
	NonUTF8 bool   `json:"non_utf8,omitempty"`
	NameHex string `json:"name_hex,omitempty"`
}

// displayName returns a file name for a listing: as it is if it is UTF-8,
// else with U+FFFD for each invalid byte, and its bytes in hex.
func displayName(name string) (display, hexName string, nonUTF8 bool) {
	display, hexName = rawpath.Split(name)
	return display, hexName, hexName != ""
}

// Listing is list_directory's result.
type Listing struct {
	Path    string     `json:"path"`
	Entries []DirEntry `json:"entries"`
	// Truncated says that entries follow those listed; NextOffset is the
	// offset that lists them. Total counts every entry, when not all are
	// listed.
	Truncated  bool `json:"truncated,omitempty"`
	Total      int  `json:"total,omitempty"`
	NextOffset int  `json:"next_offset,omitempty"`
	// Changed says that the directory's entries are not those this
	// session's previous page of it listed: an entry was added, removed
	// or replaced since. The page is of the directory as it is now, so
	// entries may have moved from one page to another: one listed before
	// may show again, or one never listed may sit on a page already read.
	Changed    bool `json:"changed_since_previous_page,omitempty"`
	first, all int  // 1-based number of the first entry listed; every entry
}

// listArgs are list_directory's arguments.
type listArgs struct {
	Path   *string `json:"path"`
	Offset int     `json:"offset"`
	Limit  int     `json:"limit"`
}

func (t *Toolset) listDirectory(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a listArgs
	if err := decodeArgs("list_directory", raw, &a); err != nil {
		return nil, err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return nil, invalidArgument("list_directory", "offset and limit must be positive", map[string]any{"offset": a.Offset, "limit": a.Limit})
	}
	first, limit := max(a.Offset, 1), maxEntries
	if a.Limit > 0 {
		limit = min(a.Limit, maxEntries)
	}
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	st, err := t.ws.Stat(p)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, invalidArgument("list_directory", "not a directory: "+p, map[string]any{"path": p})
	}
	pg, err := t.ws.ReadDirPage(p, first-1, limit)
	if err != nil {
		return nil, err
	}
	// Only the entries listed are made and stat'ed, for their sizes.
	l := &Listing{Path: p, Entries: []DirEntry{}, first: first, all: pg.Total}
	page := pg.Entries
	if next := first + len(page); next <= pg.Total {
		l.Truncated, l.NextOffset = true, next
	}
	if len(page) < pg.Total {
		l.Total = pg.Total
	}
	l.Changed = t.listed(p, first, pg.Version)
	for _, de := range page {
		e := DirEntry{Type: typeName(de.Type())}
		e.Name, e.NameHex, e.NonUTF8 = displayName(de.Name())
		if de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				e.SizeBytes = fi.Size()
			}
		}
		l.Entries = append(l.Entries, e)
	}
	return &Output{Structured: l, Text: listingText(l), Meta: l}, nil
}

func listingText(l *Listing) string {
	var b strings.Builder
	switch {
	case l.all == 0:
		fmt.Fprintf(&b, "%s is empty\n", l.Path)
	case len(l.Entries) == 0:
		fmt.Fprintf(&b, "%s has %d entries: none from offset %d\n", l.Path, l.all, l.first)
	}
	for _, e := range l.Entries {
		if e.NonUTF8 {
			fmt.Fprintf(&b, "%s\t(name is not UTF-8; the tools cannot open it)\n", e.Name)
			continue
		}
		switch e.Type {
		case "dir":
			fmt.Fprintf(&b, "%s/\n", e.Name)
		case "file":
			fmt.Fprintf(&b, "%s\t%d bytes\n", e.Name, e.SizeBytes)
		default:
			fmt.Fprintf(&b, "%s\t(%s)\n", e.Name, e.Type)
		}
	}
	if l.Truncated {
		fmt.Fprintf(&b, "(entries %d-%d of %d are listed: list_directory with offset %d lists the next ones)\n", l.first, l.NextOffset-1, l.all, l.NextOffset)
	}
	if l.Changed {
		b.WriteString("(the directory changed since the previous page was listed: entries were added or removed, so some may have moved between pages; list from offset 1 to see it whole as it is now)\n")
	}
	return b.String()
}

// listedDirs bounds the directories whose last page a Toolset remembers.
const listedDirs = 64

// listed notes that this session was shown the page from offset first of
// the directory p, whose listing had the given version, and reports
// whether a page after the first shows a listing other than the one the
// session's previous page of p showed.
func (t *Toolset) listed(p string, first int, version uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pages == nil {
		t.pages = map[string]uint64{}
	}
	p = path.Clean(filepath.ToSlash(p))
	prev, ok := t.pages[p]
	if !ok && len(t.pages) >= listedDirs {
		for k := range t.pages { // any one: a listing paged through is seldom put aside for 64 others
			delete(t.pages, k)
			break
		}
	}
	t.pages[p] = version
	return first > 1 && ok && prev != version
}
