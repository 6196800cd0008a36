package editguard

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
)

// WriteOptions control Write.
type WriteOptions struct {
	Precondition *Precondition `json:"precondition,omitempty"`
	DryRun       bool          `json:"dry_run,omitempty"`
	// LineEnding "lf" or "crlf" converts the whole file; empty keeps the
	// file's own line endings (new files get LF).
	LineEnding string `json:"line_ending,omitempty"`
	// Encoding names the encoding to write (default: the file's own, or
	// UTF-8 for new files).
	Encoding          string `json:"encoding,omitempty"`
	AllowPlaceholders bool   `json:"allow_placeholders,omitempty"`
	// BOM starts a new UTF-8 file with a byte order mark. Existing files
	// keep theirs, or their lack of one.
	BOM bool `json:"bom,omitempty"`
	// Mode is WriteOverwrite (the default, also ""), WriteCreate or
	// WriteAppend.
	Mode string `json:"mode,omitempty"`
	// CreateParents, if set to false, refuses a new file whose directory
	// does not exist (NOT_FOUND, naming the first missing directory);
	// nil, the default, or true creates the missing directories.
	CreateParents *bool `json:"create_parents,omitempty"`
	// FileMode, if set, is the permission bits (0 to 0o777) of a file the
	// write creates, applied exactly: the temporary file is made 0600,
	// set to FileMode with fchmod (which the umask does not narrow, so
	// the file gets neither more nor fewer bits than asked) before it is
	// fsynced and renamed into place, so the file never exists under its
	// name with another mode. nil: 0666 less the umask. An existing file
	// keeps its own mode. Setuid, setgid and sticky bits are refused.
	FileMode *uint32 `json:"file_mode,omitempty"`
}

// Write modes.
const (
	// WriteOverwrite replaces the whole file (or creates it).
	WriteOverwrite = "overwrite"
	// WriteCreate only creates: an existing path fails with STALE_FILE,
	// reason created, like Precondition.MustNotExist.
	WriteCreate = "create"
	// WriteAppend adds content at the end of the file (creating it if
	// needed). It needs no read, since it discards nothing: the append is
	// atomic under the file's lock, the file keeps its encoding and line
	// endings, and the previous version is kept in history like any other.
	WriteAppend = "append"
)

// Write is like os.WriteFile, but commits only if the file is what the
// session last saw (or what the precondition says), keeps the file's
// encoding and line endings, and replaces it atomically. Writing over an
// existing file needs a full read or an explicit precondition; a new file
// needs neither (its missing parent directories are created, unless
// CreateParents is false). A name it creates is checked against the
// workspace's name policy (Options.Names).
func (s *Session) Write(ctx context.Context, p, content string, opts *WriteOptions) (*Result, error) {
	var o WriteOptions
	if opts != nil {
		o = *opts
	}
	pre, err := checkWriteOptions(p, &o)
	if err != nil {
		return nil, err
	}
	args := writeArgs(p, content, &o)
	return s.mutate(ctx, &change{
		tool: opWrite, path: p, pre: pre, dryRun: o.DryRun, wholeFile: true, noRead: o.Mode == WriteAppend,
		args: args, newName: true, fileInfo: true,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			return s.buildWrite(t, obs, enc, content, &o, args.ContentSHA256)
		},
	})
}

// checkWriteOptions refuses options that do not go together, and returns
// the precondition the write checks.
func checkWriteOptions(p string, o *WriteOptions) (*Precondition, error) {
	if o.LineEnding != "" && o.LineEnding != textcodec.LF && o.LineEnding != textcodec.CRLF {
		return nil, newError(CodeInvalidArgument, p, fmt.Sprintf("line_ending must be %q or %q", textcodec.LF, textcodec.CRLF), "", nil)
	}
	pre := o.Precondition
	switch o.Mode {
	case "", WriteOverwrite, WriteAppend:
	case WriteCreate:
		if !pre.empty() && !pre.MustNotExist {
			return nil, newError(CodeInvalidArgument, p, "mode create cannot be combined with a precondition on the existing file", "", nil)
		}
		pre = &Precondition{MustNotExist: true}
	default:
		return nil, newError(CodeInvalidArgument, p, fmt.Sprintf("mode must be %q, %q or %q", WriteOverwrite, WriteCreate, WriteAppend), "", nil)
	}
	return pre, checkFileMode(p, o.FileMode)
}

// buildWrite computes a write's new bytes from the observed file; sum is
// the content's SHA-256.
func (s *Session) buildWrite(t *target, obs *observation, enc, content string, o *WriteOptions, sum string) (*plan, error) {
	p, appending := t.Path, o.Mode == WriteAppend
	if o.CreateParents != nil && !*o.CreateParents && t.Dir == nil {
		return nil, s.w.missingParent(t)
	}
	doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc), o.BOM)
	if err != nil {
		return nil, err
	}
	newText := content
	if appending {
		if content == "" {
			return nil, newError(CodeNoChange, p, "nothing to append", "", nil)
		}
		newText = doc.Text + content
	} else if err := checkWritePlaceholders(p, doc.Text, content, obs.Stat.Exists, o.AllowPlaceholders); err != nil {
		return nil, err
	}
	data, asIs, err := encodeText(doc, newText, o.LineEnding)
	if err != nil {
		return nil, codecError(p, err)
	}
	pl := &plan{data: data, frozen: true, oldText: doc.Text, newText: newText, encoding: doc.Format.Encoding,
		lineEnding: writtenLineEnding(p, doc, newText, o.LineEnding, data)}
	if o.FileMode != nil && !obs.Stat.Exists {
		pl.mode, pl.exactMode = os.FileMode(*o.FileMode), true
	}
	if !appending && (asIs || string(data) == content) {
		// The bytes are the content, whose hash the ledger's arguments
		// already hold.
		pl.sum = sum
	}
	return pl, nil
}

// encodeText returns text as doc's file holds it. Where that is the text's
// own bytes (plain UTF-8 with LF), they are returned without a copy, and
// asIs is set: the caller must never write to them.
func encodeText(doc *textcodec.Doc, text, lineEnding string) (data []byte, asIs bool, err error) {
	if doc.EncodesAsIs(text, lineEnding) {
		return stringBytes(text), true, nil
	}
	data, err = doc.Encode(text, lineEnding)
	return data, false, err
}

// checkFileMode refuses a file mode outside 0-0777.
func checkFileMode(p string, m *uint32) error {
	switch {
	case m == nil:
		return nil
	case *m&0o7000 != 0:
		return newError(CodeInvalidArgument, p, fmt.Sprintf("file_mode %04o sets the setuid, setgid or sticky bit, which write_file does not set", *m),
			"give permission bits only, from 0000 to 0777, such as 0644 or 0600", nil)
	case *m > 0o777:
		return newError(CodeInvalidArgument, p, fmt.Sprintf("file_mode %o is not a permission mode", *m),
			"give permission bits only, from 0000 to 0777, such as 0644 or 0600", nil)
	}
	return nil
}

// writtenLineEnding returns the line endings of text as written in doc's
// format (data): lf, crlf, mixed or none.
func writtenLineEnding(p string, doc *textcodec.Doc, text, lineEnding string, data []byte) string {
	switch {
	case !strings.Contains(text, "\n"):
		return textcodec.None
	case lineEnding != "":
		return lineEnding
	case doc.Format.LineEnding == textcodec.None:
		return textcodec.LF // a file's first line breaks are LF
	case doc.Format.LineEnding != textcodec.Mixed:
		return doc.Format.LineEnding
	}
	// A mixed file keeps each line's ending: what is left is measured.
	if d, err := decode(p, data, doc.Format.Encoding); err == nil {
		return d.Format.LineEnding
	}
	return textcodec.Mixed
}

// missingParent is the NOT_FOUND of a new file whose directory does not
// exist, naming the first missing one.
func (w *Workspace) missingParent(t *target) error {
	dir := path.Dir(t.Resolved)
	elems := splitPath(dir)
	for i := range elems {
		at := strings.Join(elems[:i+1], "/")
		if _, err := w.root.Lstat(at); err != nil {
			dir = at
			break
		}
	}
	e := newError(CodeNotFound, t.Path, fmt.Sprintf("the directory %s does not exist, and create_parents is false", shortPath(dir)),
		"create the directory with create_directory first, or write with create_parents true", nil)
	e.Details["directory"] = dir
	return e
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// docFor decodes the observed file, or gives a new file's format (with a
// UTF-8 byte order mark only if bom is set).
func (s *Session) docFor(p string, obs *observation, enc string, bom bool) (*textcodec.Doc, error) {
	if !obs.Stat.Exists {
		doc, err := textcodec.NewDocIn(enc, bom)
		if err != nil {
			return nil, codecError(p, err)
		}
		return doc, nil
	}
	return decode(p, obs.Data, enc)
}

// checkWritePlaceholders refuses whole-file content that elides code with a
// placeholder comment ("// ... rest of code ...") the old file did not have.
// A new file has nothing to elide.
func checkWritePlaceholders(p, oldText, newText string, existed, allow bool) error {
	if allow || !existed {
		return nil
	}
	if found := textedit.DetectPlaceholders(oldText, newText); len(found) > 0 {
		return placeholderError(p, -1, found)
	}
	return nil
}
