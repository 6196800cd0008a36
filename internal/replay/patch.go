package replay

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/merge"
	"github.com/editguard/editguard/internal/patch"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
)

// Codes of a patch's hunks, as the engine names them.
const (
	codeNoMatch   = string(editguard.CodeNoMatch)
	codeAmbiguous = string(editguard.CodeAmbiguousMatch)
)

// patchArgs are the arguments an apply_patch record holds.
type patchArgs struct {
	PatchSHA256 string `json:"patch_sha256"`
	NoMerge     bool   `json:"no_merge"`
}

// patchText returns the parsed text of rec's patch, which history keeps
// (rec.Text), or a skip. A text that does not parse is the refusal
// INVALID_ARGUMENT, as the engine's.
func (r *run) patchText(rec *ledger.Record) ([]patch.FileOp, string, *verdict) {
	var a patchArgs
	if v := decodeArgs(rec, &a); v != nil {
		return nil, "", v
	}
	if rec.Text.SHA256 != a.PatchSHA256 {
		v := accepted("the kept text " + short(rec.Text.SHA256) + " is not the patch " + short(a.PatchSHA256))
		return nil, "", &v
	}
	text, err := r.src.Content(rec.Text.Path, rec.Text.SHA256)
	if err != nil {
		v := skipped(SkippedRetired, "patch text "+rec.Text.Version)
		return nil, "", &v
	}
	ops, err := patch.Parse(string(text))
	if err != nil {
		v := refused(codeInvalid)
		return nil, "", &v
	}
	if a.NoMerge {
		return ops, "no_merge", nil
	}
	return ops, "", nil
}

// hunkCode returns the engine's error code for hunks that do not apply.
func hunkCode(err error) string {
	var (
		ne *patch.NoMatchError
		ae *patch.AmbiguousError
	)
	switch {
	case errors.As(err, &ne):
		return codeNoMatch
	case errors.As(err, &ae):
		return codeAmbiguous
	}
	return codeInvalid
}

// fileCheck is what replay knows of one file a patch names.
type fileCheck struct {
	path     string
	pre      json.RawMessage
	base     *ledger.FileState
	obs      *ledger.FileState
	resolved bool // the record holds the file's content before, by obs's hash
}

// checkFile is the engine's check of a patch's file against the caller's
// precondition or the session's read: the error code, or "" to go on.
func checkFile(f *fileCheck, wholeFile bool) (string, *verdict) {
	rec := &ledger.Record{Precondition: f.pre, Baseline: f.base, Observed: f.obs}
	if pre, err := precondition(rec); err != nil {
		v := skipped(SkippedUnknown, "precondition does not decode")
		return "", &v
	} else if pre != nil {
		return explicit(pre, f.obs), nil
	}
	switch b := f.base; {
	case b == nil:
		return codeNotRead, nil
	case f.obs.SHA256 != b.SHA256:
		return codeStale, nil
	case wholeFile && b.Read != nil && !b.Read.Full:
		return codeNotRead, nil
	}
	return "", nil
}

// patched computes the content op makes of f's file: its content before
// (from history, by the observed hash), decoded in the encoding it was
// read in, the hunks applied (merged over another writer's change when
// seen, the session's read, is given) and encoded again. It returns the
// new content, or the refusal's code, or a skip.
func (r *run) patched(f *fileCheck, op *patch.FileOp, seen []byte) ([]byte, string, *verdict) {
	data, err := r.src.Content(f.path, f.obs.SHA256)
	if err != nil {
		v := skipped(SkippedRetired, "content "+short(f.obs.SHA256))
		return nil, "", &v
	}
	doc, err := textcodec.Decode(data, readEncoding(f.base))
	if err != nil {
		return nil, code(err), nil
	}
	text := doc.Text
	switch {
	case seen != nil:
		edits := make([]textedit.Edit, 0, len(op.Hunks))
		for _, h := range op.Hunks {
			if h.EndOfFile || h.Old() == "" {
				return nil, codeStale, nil
			}
			edits = append(edits, textedit.Edit{Old: h.Old(), New: h.New()})
		}
		merged, _, _, err := merge.Edits(seen, readEncoding(f.base), text, edits)
		var nm *merge.Refusal
		if errors.As(err, &nm) {
			return nil, codeStale, nil
		}
		if err != nil {
			return nil, code(err), nil
		}
		text = merged
	case len(op.Hunks) > 0:
		res, err := patch.Apply(text, op.Hunks)
		if err != nil {
			return nil, hunkCode(err), nil
		}
		text = res.Text
	}
	out, err := doc.Encode(text, "")
	if err != nil {
		return nil, code(err), nil
	}
	if op.MoveTo == "" && string(out) == string(data) {
		return nil, codeNoChange, nil
	}
	return out, "", nil
}

// readEncoding returns the encoding the session read the file in, as its
// baseline records it ("" if none is recorded).
func readEncoding(b *ledger.FileState) string {
	if b == nil || b.Read == nil {
		return ""
	}
	return b.Read.Encoding
}

// seenFor returns the session's read a stale update of f may merge over,
// when the engine would try: an update in place, merging on, no
// precondition, and the read kept in history (its version in the
// baseline). ok is false when no merge would be tried, or when the read
// is not kept.
func (r *run) seenFor(f *fileCheck, op *patch.FileOp, noMerge bool) ([]byte, bool) {
	if noMerge || op.Kind != patch.Update || op.MoveTo != "" || len(f.pre) > 0 && string(f.pre) != "null" ||
		f.base == nil || f.base.Read == nil || f.base.Read.Version == "" || !f.obs.Exists {
		return nil, false
	}
	seen, err := r.src.Content(f.path, f.base.SHA256)
	return seen, err == nil
}

// patchRecord replays one file's record of a committed patch from the
// patch's text: the check of the file, and the content its hunks make.
func (r *run) patchRecord(rec *ledger.Record) verdict {
	ops, mode, v := r.patchText(rec)
	if v != nil {
		return *v
	}
	var res struct {
		Path string `json:"path"`
	}
	if err := decodeResult(rec, &res); err != nil {
		return skipped(SkippedUnknown, "result does not decode")
	}
	f := &fileCheck{path: rec.Path, pre: rec.Precondition, base: rec.Baseline, obs: rec.Observed}
	for i := range ops {
		op := &ops[i]
		switch res.Path {
		case op.MoveTo:
			if f.obs.Exists {
				return refused(codeStale)
			}
			after, ok := r.moved[strings.TrimPrefix(rec.Strategy, "transaction ")+"\x00"+op.MoveTo]
			if !ok {
				// The source's record was not replayed (--since):
				// the decision alone.
				return accept(rec, verdict{})
			}
			return accept(rec, accepted(after))
		case op.Path:
			return accept(rec, r.patchOne(rec, f, op, mode == "no_merge"))
		}
	}
	return skipped(SkippedUnknown, "the patch names no file "+res.Path)
}

// patchOne decides op's file f and computes what it leaves.
func (r *run) patchOne(rec *ledger.Record, f *fileCheck, op *patch.FileOp, noMerge bool) verdict {
	if op.Kind == patch.Add {
		if f.obs.Exists {
			return refused(addRefusal(f.obs))
		}
		return accepted(sum([]byte(op.Content)))
	}
	c, v := r.checkExisting(f, op, noMerge)
	if v != nil || c != "" {
		return orRefused(v, c)
	}
	if op.Kind == patch.Delete {
		return accepted("")
	}
	seen, _ := r.seenFor(f, op, noMerge)
	if f.base == nil || f.obs.SHA256 == f.base.SHA256 {
		seen = nil // not stale: the hunks apply as they match
	}
	out, c, v := r.patched(f, op, seen)
	if v != nil || c != "" {
		return orRefused(v, c)
	}
	if op.MoveTo != "" {
		r.moved[strings.TrimPrefix(rec.Strategy, "transaction ")+"\x00"+op.MoveTo] = sum(out)
		return accepted("")
	}
	return accepted(sum(out))
}

// addRefusal is the engine's refusal of a patch that adds a file that
// exists.
func addRefusal(obs *ledger.FileState) string {
	if obs.SHA256 == "" {
		return codeNotAFile
	}
	return codeStale
}

// checkExisting decides a patch's update, delete or move of f, which must
// exist and be what the caller read (a stale update may merge). It
// returns the refusal's code, or "" to go on.
func (r *run) checkExisting(f *fileCheck, op *patch.FileOp, noMerge bool) (string, *verdict) {
	switch {
	case !f.obs.Exists:
		return codeNotFound, nil
	case f.obs.SHA256 == "":
		return codeNotAFile, nil
	}
	c, v := checkFile(f, op.Kind == patch.Delete)
	if c == codeStale {
		if _, ok := r.seenFor(f, op, noMerge); ok {
			return "", nil
		}
	}
	return c, v
}

// patchRefused replays the record of a refused patch from its text and
// what it checked of each file (rec.Files), in the engine's order: each
// operation's file, and a move's destination after its source. The
// decision is the first refusal met; a patch that passes every file it
// checked was refused later, for what the ledger does not hold, or, if it
// did not check every file, before the rest were observed.
func (r *run) patchRefused(rec *ledger.Record) verdict {
	ops, mode, v := r.patchText(rec)
	if v != nil {
		return *v
	}
	files := rec.Files
	next := func() *fileCheck {
		if len(files) == 0 {
			return nil
		}
		c := files[0]
		files = files[1:]
		return &fileCheck{path: c.Path, pre: c.Precondition, base: c.Baseline, obs: c.Observed}
	}
	for i := range ops {
		op := &ops[i]
		f := next()
		if f == nil || f.obs == nil {
			return skipped(SkippedUnobserved, rec.ErrorCode)
		}
		if c, v := r.refusedFile(f, op, mode == "no_merge", len(files) == 0); v != nil || c != "" {
			return orRefused(v, c)
		}
		if op.MoveTo == "" {
			continue
		}
		dst := next()
		if dst == nil || dst.obs == nil {
			return skipped(SkippedUnobserved, rec.ErrorCode)
		}
		if dst.obs.Exists {
			return refused(codeStale)
		}
	}
	if len(files) > 0 {
		return skipped(SkippedUnknown, "the record checks more files than the patch names")
	}
	if rec.ErrorCode == codeInvalid && namePolicy(rec) {
		return skipped(SkippedLate, "the workspace's name policy")
	}
	return accept(rec, verdict{})
}

// refusedFile decides one file of a refused patch: its check, and for the
// file the refusal names (last) or any whose content history holds, what
// its hunks make of it.
func (r *run) refusedFile(f *fileCheck, op *patch.FileOp, noMerge, last bool) (string, *verdict) {
	if op.Kind == patch.Add {
		if f.obs.Exists {
			return addRefusal(f.obs), nil
		}
		return "", nil
	}
	if c, v := r.checkExisting(f, op, noMerge); v != nil || c != "" {
		return c, v
	}
	seen, _ := r.seenFor(f, op, noMerge)
	if f.base == nil || f.obs.SHA256 == f.base.SHA256 {
		seen = nil
	} else if seen == nil {
		// A merge over another writer's change, of which the record
		// keeps no read.
		v := skipped(SkippedMerged, "the content the session read is not recorded")
		return "", &v
	}
	if op.Kind == patch.Delete {
		if _, err := r.src.Content(f.path, f.obs.SHA256); err == nil || last {
			data, v := r.contentOf(f)
			if v != nil {
				return "", v
			}
			if _, err := textcodec.Decode(data, readEncoding(f.base)); err != nil {
				return code(err), nil
			}
		}
		return "", nil
	}
	if !last {
		if _, err := r.src.Content(f.path, f.obs.SHA256); err != nil {
			return "", nil // checked on its hash alone
		}
	}
	_, c, v := r.patched(f, op, seen)
	return c, v
}

// contentOf returns f's content before, from history, or a skip.
func (r *run) contentOf(f *fileCheck) ([]byte, *verdict) {
	data, err := r.src.Content(f.path, f.obs.SHA256)
	if err != nil {
		v := skipped(SkippedRetired, "content "+short(f.obs.SHA256))
		return nil, &v
	}
	return data, nil
}

// namePolicy reports whether rec's error is a refusal by the workspace's
// name policy (Options.Names), which names the name it refused.
func namePolicy(rec *ledger.Record) bool {
	var e struct {
		Details map[string]any `json:"details"`
	}
	json.Unmarshal(rec.Result, &e)
	_, ok := e.Details["name"]
	return ok
}
