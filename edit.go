package editguard

import (
	"context"
	"fmt"

	"github.com/editguard/editguard/internal/textedit"
)

// Edit is one exact string replacement.
type Edit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// EditOptions control Edit.
type EditOptions struct {
	Precondition      *Precondition `json:"precondition,omitempty"`
	DryRun            bool          `json:"dry_run,omitempty"`
	Encoding          string        `json:"encoding,omitempty"`
	AllowPlaceholders bool          `json:"allow_placeholders,omitempty"`
	// NoMerge refuses the edit with STALE_FILE when the file changed since
	// the session's read, even where it could merge (merge.go).
	NoMerge bool `json:"no_merge,omitempty"`
}

// Edit applies edits in order, each to the result of the previous, and
// commits the result if the file is what the session last saw (a partial
// read is enough) or what the precondition says. It is all-or-nothing. An
// empty OldString is allowed only as the single edit that creates a new file.
func (s *Session) Edit(ctx context.Context, p string, edits []Edit, opts *EditOptions) (*Result, error) {
	var o EditOptions
	if opts != nil {
		o = *opts
	}
	if len(edits) == 0 {
		return nil, newError(CodeInvalidArgument, p, "no edits given", "pass old_string and new_string, or an edits array", nil)
	}
	create := len(edits) == 1 && edits[0].OldString == ""
	var ch *change
	ch = &change{
		tool: opEdit, path: p, pre: o.Precondition, dryRun: o.DryRun,
		args: editArgs(p, edits, &o), merge: !create && !o.NoMerge,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if create {
				if obs.Stat.Exists {
					e := newError(CodeInvalidArgument, p, "old_string is empty, which only creates a new file, and the file exists",
						fmt.Sprintf("read %s and pass the exact text to replace as old_string", p), nil)
					return nil, e
				}
				doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc), false)
				if err != nil {
					return nil, err
				}
				data, _, err := encodeText(doc, edits[0].NewString, "")
				if err != nil {
					return nil, codecError(p, err)
				}
				return &plan{data: data, frozen: true, newText: edits[0].NewString, encoding: doc.Format.Encoding}, nil
			}
			if !obs.Stat.Exists {
				return nil, newError(CodeNotFound, p, "file does not exist", "to create a file, use write_file or an empty old_string", nil)
			}
			doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc), false)
			if err != nil {
				return nil, err
			}
			te := make([]textedit.Edit, len(edits))
			for i, e := range edits {
				te[i] = textedit.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll}
			}
			if !o.AllowPlaceholders {
				if err := textedit.CheckPlaceholders(doc.Text, te); err != nil {
					return nil, editError(p, err)
				}
			}
			if ch.seen != nil {
				// The file changed since the session's read.
				text, external, matched, err := mergeEdits(ch.seen, enc, doc.Text, edits)
				if err != nil {
					return nil, err
				}
				data, _, err := encodeText(doc, text, "")
				if err != nil {
					return nil, codecError(p, err)
				}
				return &plan{data: data, frozen: true, oldText: doc.Text, newText: text, encoding: doc.Format.Encoding,
					replacements: len(edits), matchedWith: matched, externalDiff: external}, nil
			}
			r, err := textedit.Apply(doc.Text, te)
			if err != nil {
				return nil, editError(p, err)
			}
			data, _, err := encodeText(doc, r.Text, "")
			if err != nil {
				return nil, codecError(p, err)
			}
			return &plan{data: data, frozen: true, oldText: doc.Text, newText: r.Text, encoding: doc.Format.Encoding,
				replacements: r.Replacements, matchedWith: r.MatchedWith}, nil
		},
	}
	return s.mutate(ctx, ch)
}
