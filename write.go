package editguard

import (
	"context"
	"fmt"

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
// needs neither (its missing parent directories are created).
func (s *Session) Write(ctx context.Context, p, content string, opts *WriteOptions) (*Result, error) {
	var o WriteOptions
	if opts != nil {
		o = *opts
	}
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
	appending := o.Mode == WriteAppend
	args := writeArgs(p, content, &o)
	return s.mutate(ctx, &change{
		tool: opWrite, path: p, pre: pre, dryRun: o.DryRun, wholeFile: true, noRead: appending,
		args: args,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
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
			} else if err := checkWritePlaceholders(p, doc.Text, content, obs.stat.Exists, o.AllowPlaceholders); err != nil {
				return nil, err
			}
			data, asIs, err := encodeText(doc, newText, o.LineEnding)
			if err != nil {
				return nil, codecError(p, err)
			}
			pl := &plan{data: data, frozen: true, oldText: doc.Text, newText: newText, encoding: doc.Format.Encoding}
			if !appending && (asIs || string(data) == content) {
				// The bytes are the content, whose hash the ledger's
				// arguments already hold.
				pl.sum = args.ContentSHA256
			}
			return pl, nil
		},
	})
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

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// docFor decodes the observed file, or gives a new file's format (with a
// UTF-8 byte order mark only if bom is set).
func (s *Session) docFor(p string, obs *observation, enc string, bom bool) (*textcodec.Doc, error) {
	if !obs.stat.Exists {
		doc, err := textcodec.NewDocIn(enc, bom)
		if err != nil {
			return nil, codecError(p, err)
		}
		return doc, nil
	}
	return decode(p, obs.data, enc)
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
