package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/merge"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
)

// The arguments the ledger records for each tool (see editguard's call.go).
type (
	writeArgs struct {
		ContentSHA256 string `json:"content_sha256"`
		ContentBytes  int64  `json:"content_bytes"`
		editguard.WriteOptions
	}
	editArgs struct {
		Edits []editguard.Edit `json:"edits"`
		editguard.EditOptions
	}
	restoreArgs struct {
		Version string `json:"version"`
	}
	moveArgs struct {
		editguard.MoveOptions
	}
)

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// code returns the engine's error code for a textedit or textcodec failure.
func code(err error) string { return string(editguard.RefusalCode(err)) }

// encodedSum returns the SHA-256 of text as doc's file holds it.
func encodedSum(doc *textcodec.Doc, text, lineEnding string) (string, error) {
	if doc.EncodesAsIs(text, lineEnding) {
		return sum([]byte(text)), nil
	}
	data, err := doc.Encode(text, lineEnding)
	return sum(data), err
}

// edit replays an edit_file call.
func (r *run) edit(rec *ledger.Record) verdict {
	var a editArgs
	if v := decodeArgs(rec, &a); v != nil {
		return *v
	}
	create := len(a.Edits) == 1 && a.Edits[0].OldString == ""
	c, v := decide(rec, rules{merge: !create && !a.NoMerge})
	if v != nil || c != "" && c != codeMerge {
		return orRefused(v, c)
	}
	enc := firstNonEmpty(a.Encoding, readEncoding(rec.Baseline))
	if create {
		return accept(rec, created(rec, enc, a.Edits[0].NewString))
	}
	if !rec.Observed.Exists {
		return refused(codeNotFound)
	}
	data, v := r.before(rec)
	if v != nil {
		return *v
	}
	doc, err := textcodec.Decode(data, enc)
	if err != nil {
		return refused(code(err))
	}
	te := make([]textedit.Edit, len(a.Edits))
	for i, e := range a.Edits {
		te[i] = textedit.Edit{Old: e.OldString, New: e.NewString, ReplaceAll: e.ReplaceAll}
	}
	if !a.AllowPlaceholders {
		if err := textedit.CheckPlaceholders(doc.Text, te); err != nil {
			return refused(code(err))
		}
	}
	if c == codeMerge {
		return accept(rec, r.merged(rec, doc, te))
	}
	res, err := textedit.Apply(doc.Text, te)
	if err != nil {
		return refused(code(err))
	}
	after, err := encodedSum(doc, res.Text, "")
	if err != nil {
		return refused(code(err))
	}
	return accept(rec, accepted(after))
}

// merged replays an edit merged over another writer's change: the
// session's read, which history keeps, against the file's text now (doc),
// by the engine's rules (internal/merge). A merge the rules refuse is the
// STALE_FILE the engine answers.
func (r *run) merged(rec *ledger.Record, doc *textcodec.Doc, edits []textedit.Edit) verdict {
	seen, err := r.src.Content(rec.Path, rec.Baseline.SHA256)
	if err != nil {
		return skipped(SkippedRetired, "the read merged over, version "+rec.Baseline.Read.Version)
	}
	text, _, _, err := merge.Edits(seen, rec.Baseline.Read.Encoding, doc.Text, edits)
	var nm *merge.Refusal
	if errors.As(err, &nm) {
		return refused(codeStale)
	}
	if err != nil {
		return refused(code(err))
	}
	after, err := encodedSum(doc, text, "")
	if err != nil {
		return refused(code(err))
	}
	return accepted(after)
}

// firstNonEmpty returns a, or b if a is "".
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// created replays an edit that creates a file with text.
func created(rec *ledger.Record, enc, text string) verdict {
	if rec.Observed.Exists {
		return refused(codeInvalid)
	}
	doc, err := textcodec.NewDocIn(enc, false)
	if err != nil {
		return refused(code(err))
	}
	after, err := encodedSum(doc, text, "")
	if err != nil {
		return refused(code(err))
	}
	return accepted(after)
}

// orRefused returns the skip v if there is one, or else a refusal with c.
func orRefused(v *verdict, c string) verdict {
	if v != nil {
		return *v
	}
	return refused(c)
}

// write replays a write_file call. Its content is recorded as its hash:
// the result follows from it directly when the content was written as it
// is, and is otherwise checked against the content history keeps of it.
func (r *run) write(rec *ledger.Record) verdict {
	var a writeArgs
	if v := decodeArgs(rec, &a); v != nil {
		return *v
	}
	appending := a.Mode == editguard.WriteAppend
	if c, v := decide(rec, rules{wholeFile: true, noRead: appending}); v != nil || c != "" {
		return orRefused(v, c)
	}
	if appending && a.ContentBytes == 0 {
		return refused(codeNoChange)
	}
	if rec.Outcome == "error" {
		return r.writeRefused(rec, &a)
	}
	after := recordedAfter(rec)
	if !appending && after == a.ContentSHA256 && resultSize(rec) == a.ContentBytes {
		// Written as it is: the bytes are the content.
		return accept(rec, accepted(a.ContentSHA256))
	}
	return accept(rec, r.writtenAs(rec, &a, after))
}

// writeRefused replays a write that passed its check and was refused: the
// old file must decode, and the refusals that depend on the content (a
// placeholder, a character its encoding lacks) cannot be decided again.
func (r *run) writeRefused(rec *ledger.Record, a *writeArgs) verdict {
	if _, v := r.writeDoc(rec, a); v != nil {
		return *v
	}
	switch editguard.Code(rec.ErrorCode) {
	case editguard.CodePlaceholder, editguard.CodeEncoding:
		return skipped(SkippedContent, rec.ErrorCode)
	}
	return accept(rec, verdict{})
}

// resultSize returns the size_bytes of rec's result.
func resultSize(rec *ledger.Record) int64 {
	var res struct {
		Size int64 `json:"size_bytes"`
	}
	if decodeResult(rec, &res) != nil {
		return -1
	}
	return res.Size
}

// writtenAs checks a write whose bytes are not its content: the content
// history keeps under the recorded result, decoded in the file's format,
// must be the written content (or the old text followed by it, for an
// append), and encoding it again must give the recorded result.
func (r *run) writtenAs(rec *ledger.Record, a *writeArgs, after string) verdict {
	if after == "" {
		return accepted(after)
	}
	data, err := r.src.Content(rec.Path, after)
	if err != nil {
		return skipped(SkippedContent, "sha256_after "+short(after))
	}
	doc, v := r.writeDoc(rec, a)
	if v != nil {
		return *v
	}
	got, err := textcodec.Decode(data, doc.Format.Encoding)
	if err != nil {
		return refused(code(err))
	}
	text, lineEnding := got.Text, a.LineEnding
	added := text
	if a.Mode == editguard.WriteAppend {
		var ok bool
		if added, ok = strings.CutPrefix(text, doc.Text); !ok {
			return accepted("the appended file does not start with the old text")
		}
	}
	if !sameContent(added, a.ContentSHA256) {
		return accepted("content_sha256 " + short(a.ContentSHA256) + " is not what history keeps")
	}
	s, err := encodedSum(doc, text, lineEnding)
	if err != nil {
		return refused(code(err))
	}
	return accepted(s)
}

// sameContent reports whether text is the content whose SHA-256 is want,
// with its line breaks as LF or as CRLF.
func sameContent(text, want string) bool {
	return sum([]byte(text)) == want || sum([]byte(strings.ReplaceAll(text, "\n", "\r\n"))) == want
}

// writeDoc returns the format a write encodes its content in: the old
// file's, or a new file's.
func (r *run) writeDoc(rec *ledger.Record, a *writeArgs) (*textcodec.Doc, *verdict) {
	enc := firstNonEmpty(a.Encoding, readEncoding(rec.Baseline))
	if !rec.Observed.Exists {
		doc, err := textcodec.NewDocIn(enc, a.BOM)
		if err != nil {
			v := refused(code(err))
			return nil, &v
		}
		return doc, nil
	}
	data, v := r.before(rec)
	if v != nil {
		return nil, v
	}
	doc, err := textcodec.Decode(data, enc)
	if err != nil {
		v := refused(code(err))
		return nil, &v
	}
	return doc, nil
}

// restore replays a restore_file call: its result is the version's content.
func (r *run) restore(rec *ledger.Record) verdict {
	var a restoreArgs
	if v := decodeArgs(rec, &a); v != nil {
		return *v
	}
	if c, v := decide(rec, rules{wholeFile: true, overAbsent: true}); v != nil || c != "" {
		return orRefused(v, c)
	}
	ver, err := r.src.HistoryVersion(rec.Path, a.Version)
	if err != nil {
		return skipped(SkippedRetired, "version "+a.Version)
	}
	obs := rec.Observed
	switch {
	case ver.Absent && !obs.Exists, !ver.Absent && obs.Exists && obs.SHA256 == ver.SHA256:
		return refused(codeNoChange)
	case ver.Absent:
		return accept(rec, accepted(""))
	}
	return accept(rec, accepted(ver.SHA256))
}

// deleteFile replays a delete_file call.
func deleteFile(rec *ledger.Record) verdict {
	if c, v := decide(rec, rules{wholeFile: true}); v != nil || c != "" {
		return orRefused(v, c)
	}
	if !rec.Observed.Exists {
		return refused(codeNotFound)
	}
	return accept(rec, accepted(""))
}
