package toolset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/editguard/editguard"
)

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
	if utf8.ValidString(name) {
		return name, "", false
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	return b.String(), hex.EncodeToString([]byte(name)), true
}

// Listing is list_directory's result.
type Listing struct {
	Path      string     `json:"path"`
	Entries   []DirEntry `json:"entries"`
	Truncated bool       `json:"truncated,omitempty"` // more than maxEntries entries; the first ones by name are listed
}

// FileInfo is file_info's result. It describes the path without recording a
// read.
type FileInfo struct {
	Path      string `json:"path"`
	Exists    bool   `json:"exists"`
	Type      string `json:"type,omitempty"` // file, dir, symlink or other; a symlink inside the root is followed
	Symlink   bool   `json:"symlink,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	MtimeMS   int64  `json:"mtime_ms,omitempty"`
}

// History is file_history's result.
type History struct {
	Path     string              `json:"path"`
	Versions []editguard.Version `json:"versions"`
}

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

func (t *Toolset) listDirectory(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("list_directory", raw, &a); err != nil {
		return nil, err
	}
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	root, rel, err := t.openRoot(p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	dir, err := root.Open(rel)
	if err != nil {
		return nil, fsError(p, err)
	}
	defer dir.Close()
	st, err := dir.Stat()
	if err != nil {
		return nil, fsError(p, err)
	}
	if !st.IsDir() {
		return nil, invalidArgument("list_directory", "not a directory: "+p, map[string]any{"path": p})
	}
	// The state directory is hidden only at the root, which a path like
	// "sub/.." or a symlink may also name.
	rootSt, err := root.Stat(".")
	if err != nil {
		return nil, fsError(p, err)
	}
	atRoot := os.SameFile(st, rootSt)
	des, err := dir.ReadDir(-1)
	if err != nil {
		return nil, fsError(p, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	l := &Listing{Path: p, Entries: []DirEntry{}}
	for _, de := range des {
		if atRoot && de.Name() == editguard.StateDir {
			continue
		}
		if len(l.Entries) == maxEntries {
			l.Truncated = true
			break
		}
		e := DirEntry{Type: typeName(de.Type())}
		e.Name, e.NameHex, e.NonUTF8 = displayName(de.Name())
		if de.Type().IsRegular() {
			if fi, err := de.Info(); err == nil {
				e.SizeBytes = fi.Size()
			}
		}
		l.Entries = append(l.Entries, e)
	}
	return &Output{Structured: l, Text: listingText(l)}, nil
}

func listingText(l *Listing) string {
	var b strings.Builder
	if len(l.Entries) == 0 {
		fmt.Fprintf(&b, "%s is empty\n", l.Path)
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
		fmt.Fprintf(&b, "(only the first %d entries are listed)\n", maxEntries)
	}
	return b.String()
}

func (t *Toolset) fileInfo(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("file_info", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("file_info", "path")
	}
	p := *a.Path
	root, rel, err := t.openRoot(p)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	info := &FileInfo{Path: p}
	lst, err := root.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return &Output{Structured: info, Text: p + " does not exist\n"}, nil
	}
	if err != nil {
		return nil, fsError(p, err)
	}
	info.Exists, info.Symlink = true, lst.Mode()&fs.ModeSymlink != 0
	st := lst
	if info.Symlink {
		if st, err = root.Stat(rel); err != nil {
			// A dangling link: report the link itself.
			st = lst
		}
	}
	info.Type, info.MtimeMS = typeName(st.Mode()), st.ModTime().UnixMilli()
	if st.Mode().IsRegular() {
		if err := hashFile(root, rel, info); err != nil {
			return nil, fsError(p, err)
		}
	} else if st.IsDir() {
		info.SizeBytes = 0
	}
	text := fmt.Sprintf("%s: %s", p, info.Type)
	if info.Type == "file" {
		text += fmt.Sprintf(", %d bytes, sha256 %s", info.SizeBytes, info.SHA256)
	}
	return &Output{Structured: info, Text: text + "\n"}, nil
}

// hashFile fills in the size, mtime and SHA-256 of one open descriptor, so
// that the three describe the same file even if it is replaced meanwhile.
// The open does not block on a FIFO swapped in after the stat.
func hashFile(root *os.Root, rel string, info *FileInfo) error {
	f, err := root.OpenFile(rel, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		info.Type = typeName(st.Mode())
		return nil
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	info.SHA256, info.SizeBytes, info.MtimeMS = hex.EncodeToString(h.Sum(nil)), n, st.ModTime().UnixMilli()
	return nil
}

func (t *Toolset) fileHistory(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("file_history", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("file_history", "path")
	}
	vs, err := t.ws.History(*a.Path)
	if err != nil {
		return nil, err
	}
	if vs == nil {
		vs = []editguard.Version{}
	}
	h := &History{Path: *a.Path, Versions: vs}
	var b strings.Builder
	if len(vs) == 0 {
		fmt.Fprintf(&b, "no earlier versions of %s are kept\n", *a.Path)
	}
	for _, v := range vs {
		sum := v.SHA256
		if len(sum) > 12 {
			sum = sum[:12]
		}
		if v.Absent {
			fmt.Fprintf(&b, "%s\t%s\t%s\t(file did not exist)\n", v.ID, v.Time, v.Op)
			continue
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%d bytes\tsha256 %s\n", v.ID, v.Time, v.Op, v.SizeBytes, sum)
	}
	return &Output{Structured: h, Text: b.String()}, nil
}
