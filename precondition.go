package editguard

import (
	"fmt"
	"os"
	"strings"
)

// Precondition states what the caller expects on disk before a change. An
// explicit precondition is never overridden or completed by the session's
// baseline.
//
// With RequireAll false every supplied field must match; with RequireAll true
// all three fields must be supplied and match. MustNotExist makes the change
// create-only.
type Precondition struct {
	ExpectedSHA256    string `json:"expected_sha256,omitempty"`
	ExpectedMtimeMS   *int64 `json:"expected_mtime_ms,omitempty"`
	ExpectedSizeBytes *int64 `json:"expected_size_bytes,omitempty"`
	RequireAll        bool   `json:"require_all,omitempty"`
	MustNotExist      bool   `json:"must_not_exist,omitempty"`
}

// empty reports whether p states nothing, in which case the baseline applies.
func (p *Precondition) empty() bool {
	return p == nil || (p.ExpectedSHA256 == "" && p.ExpectedMtimeMS == nil &&
		p.ExpectedSizeBytes == nil && !p.RequireAll && !p.MustNotExist)
}

// FileState is what was seen of a file at one moment.
type FileState struct {
	Exists  bool   `json:"exists"`
	SHA256  string `json:"sha256,omitempty"`
	Size    int64  `json:"size_bytes"`
	MtimeMS int64  `json:"mtime_ms,omitempty"`
}

// check decides whether a change may proceed over the observed file.
// wholeFile is true for write_file, which replaces content the caller must
// have seen in full.
func (s *Session) check(t *target, pre *Precondition, obs *observation, wholeFile bool) (*baseline, error) {
	path, resolved := t.Path, t.Resolved
	if !pre.empty() {
		return nil, checkExplicit(path, pre, obs)
	}
	// The name the caller used was read when it led to another file: it
	// has been replaced by (or re-pointed as) a symlink since.
	if t.Lexical != "" && t.Lexical != resolved {
		if b, ok := s.baseline(t.Lexical); ok && b.Path != resolved {
			e := stale(path, ReasonTypeChanged, obs)
			e.Message = "the path now leads to a different file than when it was read (a symlink was put in its place or re-pointed)"
			e.Details["baseline_path"] = b.Path
			e.Details["current_path"] = resolved
			return &b, e
		}
	}
	b, ok := s.baseline(resolved)
	if !ok {
		if !obs.Stat.Exists {
			return nil, nil
		}
		if !obs.Stat.Regular() {
			return nil, notAFile(path, obs)
		}
		e := newError(CodeNotRead, path, "file exists but has not been read in this session",
			fmt.Sprintf("call read_file on %s first, then redo the change", path), nil)
		e.Details["actual"] = stateOf(obs)
		return nil, e
	}
	if b.Unconfirmed != "" {
		// A page served before the file was hashed (readpending.go),
		// whose hash never confirmed it: the read does not count.
		e := newError(CodeNotRead, path, "the last read of this file was served before the file was hashed, and its hash could not confirm it: "+b.Unconfirmed,
			fmt.Sprintf("call read_file on %s again, then redo the change", path), nil)
		e.Details["reason"] = "read_unconfirmed"
		e.Details["actual"] = stateOf(obs)
		return nil, e
	}
	if b.WriterUnknown {
		// What a command's change left, whoever made it: not a read.
		e := newError(CodeNotRead, path, "the file was changed while a shell command ran, by the command or by someone else (editguard could not tell which), so it counts as not read",
			fmt.Sprintf("call read_file on %s again, then redo the change", path), nil)
		e.Details["reason"] = ReasonWriterUnknown
		e.Details["actual"] = stateOf(obs)
		return nil, e
	}
	if err := compareBaseline(path, &b, obs); err != nil {
		if err.Details["reason"] == ReasonModified {
			s.staleChanges(t, &b, obs, wholeFile, err)
		}
		return &b, err
	}
	if wholeFile && !b.FullRead {
		e := newError(CodeNotRead, path, "only part of the file was read; a whole-file write needs a full read",
			fmt.Sprintf("call read_file on %s without offset/limit, or use edit_file", path), nil)
		e.Details["reason"] = "partial_read"
		if b.FromLine > 0 {
			e.Details["read_lines"] = fmt.Sprintf("%d-%d of %d", b.FromLine, b.ToLine, b.TotalLines)
		}
		if b.Diffed {
			e.Message = "the file changed after your full read, and you saw that change only as a diff; a whole-file write needs a full read of the file as it is now"
			e.RecoveryHint = fmt.Sprintf("call read_file on %s, then write it again; or keep the other change by using edit_file", path)
			e.Details["reason"] = "seen_as_diff"
		}
		return &b, e
	}
	return &b, nil
}

func compareBaseline(path string, b *baseline, obs *observation) *Error {
	var reason string
	switch {
	case !obs.Stat.Exists:
		reason = ReasonDeleted
	case !obs.Stat.Regular():
		reason = ReasonTypeChanged
	case obs.Sum != b.SHA256:
		reason = ReasonModified
	default:
		return nil
	}
	e := stale(path, reason, obs)
	e.Details["baseline_sha256"] = b.SHA256
	e.Details["current_sha256"] = obs.Sum
	e.Details["expected"] = map[string]any{"sha256": b.SHA256}
	if b.Shown {
		// The ledger's record of the refusal says so too.
		e.Details["read_shown"] = "your last read showed a version the file no longer held when the read was recorded: it changed as it was read"
	}
	return e
}

func checkExplicit(path string, p *Precondition, obs *observation) error {
	if p.ExpectedSHA256 != "" && !isHexSHA256(p.ExpectedSHA256) {
		e := newError(CodeInvalidArgument, path, fmt.Sprintf("expected_sha256 %q is not a SHA-256: 64 hexadecimal digits", p.ExpectedSHA256),
			"pass the sha256 that read_file returned", nil)
		return e
	}
	if p.RequireAll && (p.ExpectedSHA256 == "" || p.ExpectedMtimeMS == nil || p.ExpectedSizeBytes == nil) {
		return newError(CodeInvalidArgument, path, "require_all needs expected_sha256, expected_mtime_ms and expected_size_bytes",
			"supply all three values from read_file, or drop require_all", nil)
	}
	if p.MustNotExist {
		if p.ExpectedSHA256 != "" || p.ExpectedMtimeMS != nil || p.ExpectedSizeBytes != nil {
			return newError(CodeInvalidArgument, path, "must_not_exist cannot be combined with expected values", "", nil)
		}
		if obs.Stat.Exists {
			return stale(path, ReasonCreated, obs)
		}
		return nil
	}
	expected := map[string]any{}
	mismatch := false
	if p.ExpectedSHA256 != "" {
		expected["sha256"] = p.ExpectedSHA256
		mismatch = mismatch || obs.Sum != strings.ToLower(p.ExpectedSHA256)
	}
	if p.ExpectedMtimeMS != nil {
		expected["mtime_ms"] = *p.ExpectedMtimeMS
		mismatch = mismatch || obs.MtimeMS() != *p.ExpectedMtimeMS
	}
	if p.ExpectedSizeBytes != nil {
		expected["size_bytes"] = *p.ExpectedSizeBytes
		mismatch = mismatch || obs.Stat.Size != *p.ExpectedSizeBytes
	}
	var reason string
	switch {
	case !obs.Stat.Exists:
		reason = ReasonDeleted
	case !obs.Stat.Regular():
		reason = ReasonTypeChanged
	case mismatch:
		reason = ReasonModified
	default:
		return nil
	}
	e := stale(path, reason, obs)
	e.Details["expected"] = expected
	if p.ExpectedSHA256 != "" {
		e.Details["current_sha256"] = obs.Sum
	}
	return e
}

func stale(path, reason string, obs *observation) *Error {
	msg := map[string]string{
		ReasonModified:      "file changed since it was read; read it again before writing",
		ReasonDeleted:       "file was deleted since it was read",
		ReasonTypeChanged:   "file was replaced by something that is not a regular file since it was read",
		ReasonCreated:       "file exists but the change requires that it does not",
		ReasonWriterUnknown: "the file was changed while a command ran, by the command or by someone else",
	}[reason]
	e := newError(CodeStaleFile, path, msg, fmt.Sprintf("call read_file on %s, then redo the change", path), nil)
	e.Details["reason"] = reason
	e.Details["actual"] = stateOf(obs)
	return e
}

func notAFile(path string, obs *observation) *Error {
	e := newError(CodeNotAFile, path, fmt.Sprintf("not a regular file (%s)", kind(obs)), "", nil)
	return e
}

func kind(obs *observation) string {
	m := obs.Stat.Mode
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeSymlink != 0:
		return "symlink"
	case m.IsRegular():
		return "file"
	}
	return "special file"
}

// isHexSHA256 reports whether s is 64 hexadecimal digits (either case).
func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
