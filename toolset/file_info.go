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

	"github.com/editguard/editguard"
)

var fileInfoTool = &toolDef{
	name: "file_info", title: "File info",
	description: fileInfoDescription,
	input: `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Path, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`,
	annotations: Annotations{ReadOnly: true, Idempotent: true},
	run:         (*Toolset).fileInfo,
}

const fileInfoDescription = `Report whether a path exists and, for a regular file, its SHA-256, size and modification time, without reading its text. It does not count as a read: before changing a file, call read_file.`

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

func (t *Toolset) fileInfo(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a pathArgs
	if err := decodeArgs("file_info", raw, &a); err != nil {
		return nil, err
	}
	if a.Path == nil {
		return nil, missing("file_info", "path")
	}
	p := *a.Path
	info := &FileInfo{Path: p}
	lst, err := t.ws.Lstat(p)
	if errors.Is(err, editguard.ErrNotFound) {
		return &Output{Structured: info, Text: p + " does not exist\n", Meta: info}, nil
	}
	if err != nil {
		return nil, err
	}
	info.Exists, info.Symlink = true, lst.Mode()&fs.ModeSymlink != 0
	st := lst
	if info.Symlink {
		if st, err = t.ws.Stat(p); errors.Is(err, editguard.ErrOutsideRoot) {
			return nil, err
		} else if err != nil {
			// A dangling link: the link itself is described.
			st = lst
		}
	}
	info.Type, info.MtimeMS = typeName(st.Mode()), st.ModTime().UnixMilli()
	if st.Mode().IsRegular() {
		if err := t.hashFile(p, info); err != nil {
			return nil, err
		}
	} else if st.IsDir() {
		info.SizeBytes = 0
	}
	text := fmt.Sprintf("%s: %s", p, info.Type)
	if info.Type == "file" {
		text += fmt.Sprintf(", %d bytes, sha256 %s", info.SizeBytes, info.SHA256)
	}
	return &Output{Structured: info, Text: text + "\n", Meta: info}, nil
}

// hashFile fills in the size, mtime and SHA-256 of one open descriptor, so
// that the three describe the same file even if it is replaced meanwhile.
// The open does not block on a FIFO swapped in after the stat.
func (t *Toolset) hashFile(p string, info *FileInfo) error {
	f, err := t.ws.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Details: map[string]any{"path": p}, Err: err}
	}
	if !st.Mode().IsRegular() {
		info.Type = typeName(st.Mode())
		return nil
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return &editguard.Error{Code: editguard.CodeIO, Message: err.Error(), Details: map[string]any{"path": p}, Err: err}
	}
	info.SHA256, info.SizeBytes, info.MtimeMS = hex.EncodeToString(h.Sum(nil)), n, st.ModTime().UnixMilli()
	return nil
}
