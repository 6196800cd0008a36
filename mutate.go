package editguard

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/textcodec"
	"github.com/editguard/editguard/internal/textedit"
	"github.com/editguard/editguard/internal/udiff"
)

// Result describes a change, committed or (with DryRun) previewed.
type Result struct {
	Path          string   `json:"path"`
	SHA256        string   `json:"sha256"`
	SizeBytes     int64    `json:"size_bytes"`
	BytesWritten  int64    `json:"bytes_written"`
	Created       bool     `json:"created"`
	Deleted       bool     `json:"deleted,omitempty"`
	Diff          string   `json:"diff"`
	BackupVersion string   `json:"backup_version,omitempty"`
	MtimeMS       int64    `json:"mtime_ms,omitempty"`
	DryRun        bool     `json:"dry_run,omitempty"`
	Replacements  int      `json:"replacements,omitempty"`
	MatchedWith   []string `json:"matched_with,omitempty"`
	Strategy      string   `json:"strategy,omitempty"`
}

// WriteOptions control Write.
type WriteOptions struct {
	Precondition *Precondition
	DryRun       bool
	// LineEnding "lf" or "crlf" converts the whole file; empty keeps the
	// file's own line endings (new files get LF).
	LineEnding string
	// Encoding names the encoding to write (default: the file's own, or
	// UTF-8 for new files).
	Encoding          string
	AllowPlaceholders bool
}

// Edit is one exact string replacement.
type Edit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all,omitempty"`
}

// EditOptions control Edit.
type EditOptions struct {
	Precondition      *Precondition
	DryRun            bool
	Encoding          string
	AllowPlaceholders bool
}

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
	args := writeArgs(p, content, &o)
	return s.mutate(ctx, &change{
		tool: "write_file", path: p, pre: o.Precondition, dryRun: o.DryRun, wholeFile: true,
		args: args,
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc))
			if err != nil {
				return nil, err
			}
			if err := checkWritePlaceholders(p, doc.Text, content, obs.stat.Exists, o.AllowPlaceholders); err != nil {
				return nil, err
			}
			data, err := doc.Encode(content, o.LineEnding)
			if err != nil {
				return nil, codecError(p, err)
			}
			pl := &plan{data: data, oldText: doc.Text, newText: content, encoding: doc.Format.Encoding}
			if string(data) == content {
				// Plain UTF-8 with LF: the bytes are the content, whose
				// hash the ledger's arguments already hold.
				pl.sum = args.ContentSHA256
			}
			return pl, nil
		},
	})
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
	return s.mutate(ctx, &change{
		tool: "edit_file", path: p, pre: o.Precondition, dryRun: o.DryRun,
		args: editArgs(p, edits, &o),
		build: func(t *target, obs *observation, enc string) (*plan, error) {
			if create {
				if obs.stat.Exists {
					e := newError(CodeInvalidArgument, p, "old_string is empty, which only creates a new file, and the file exists",
						fmt.Sprintf("read %s and pass the exact text to replace as old_string", p), nil)
					return nil, e
				}
				doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc))
				if err != nil {
					return nil, err
				}
				data, err := doc.Encode(edits[0].NewString, "")
				if err != nil {
					return nil, codecError(p, err)
				}
				return &plan{data: data, newText: edits[0].NewString, encoding: doc.Format.Encoding}, nil
			}
			if !obs.stat.Exists {
				return nil, newError(CodeNotFound, p, "file does not exist", "to create a file, use write_file or an empty old_string", nil)
			}
			doc, err := s.docFor(p, obs, firstNonEmpty(o.Encoding, enc))
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
			r, err := textedit.Apply(doc.Text, te)
			if err != nil {
				return nil, editError(p, err)
			}
			data, err := doc.Encode(r.Text, "")
			if err != nil {
				return nil, codecError(p, err)
			}
			return &plan{data: data, oldText: doc.Text, newText: r.Text, encoding: doc.Format.Encoding,
				replacements: r.Replacements, matchedWith: r.MatchedWith}, nil
		},
	})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// docFor decodes the observed file, or gives a new file's format.
func (s *Session) docFor(p string, obs *observation, enc string) (*textcodec.Doc, error) {
	if !obs.stat.Exists {
		if enc == "" {
			return textcodec.NewDoc(), nil
		}
		doc, err := textcodec.NewDocIn(enc)
		if err != nil {
			return nil, codecError(p, err)
		}
		return doc, nil
	}
	return decode(p, obs.data, enc)
}

func editError(p string, err error) *Error {
	var (
		nm *textedit.NoMatchError
		am *textedit.AmbiguousError
		nc *textedit.NoChangeError
		eo *textedit.EmptyOldError
	)
	switch {
	case errors.As(err, &nm):
		e := newError(CodeNoMatch, p, fmt.Sprintf("edit %d: old_string was not found in the file", nm.Index+1),
			"read the file again and copy old_string exactly, including whitespace", err)
		e.Details["edit_index"] = nm.Index
		if len(nm.Closest) > 0 {
			var lines []map[string]any
			for _, l := range nm.Closest {
				lines = append(lines, map[string]any{"line": l.Number, "text": l.Text})
			}
			e.Details["closest_lines"] = lines
		}
		return e
	case errors.As(err, &am):
		e := newError(CodeAmbiguousMatch, p, fmt.Sprintf("edit %d: old_string was found %d times", am.Index+1, am.Count),
			"include more surrounding lines in old_string to make it unique, or set replace_all", err)
		e.Details["edit_index"] = am.Index
		e.Details["count"] = am.Count
		e.Details["lines"] = am.Lines
		return e
	case errors.As(err, &nc):
		e := newError(CodeNoChange, p, "the edit leaves the file unchanged", "", err)
		e.Details["edit_index"] = nc.Index
		return e
	case errors.As(err, &eo):
		e := newError(CodeInvalidArgument, p, fmt.Sprintf("edit %d: old_string is empty", eo.Index+1),
			"an empty old_string only creates a new file, as the single edit", err)
		e.Details["edit_index"] = eo.Index
		return e
	}
	var pe *textedit.PlaceholderError
	if errors.As(err, &pe) {
		return placeholderError(p, pe.Index, pe.Placeholders)
	}
	return newError(CodeInvalidArgument, p, err.Error(), "", err)
}

// change is one guarded mutation.
type change struct {
	tool      string
	path      string
	pre       *Precondition
	dryRun    bool
	wholeFile bool
	// build computes the new content from what is on disk, given the
	// encoding remembered in the session's baseline.
	build func(t *target, obs *observation, enc string) (*plan, error)
	// args are the call's arguments as the ledger records them.
	args any
}

// plan is the outcome of build.
type plan struct {
	data             []byte
	sum              string // SHA-256 of data, if already known
	remove           bool
	oldText, newText string
	encoding         string
	replacements     int
	matchedWith      []string
}

// mutate runs the commit protocol (DESIGN §6) for c and records the attempt
// in the ledger, refused or not, before the lock is released.
func (s *Session) mutate(ctx context.Context, c *change) (res *Result, err error) {
	a := newAttempt(s, c.tool, c.path, c.args, c.pre)
	var lock *filelock.Lock
	defer func() {
		res, err = s.w.finish(a, res, err)
		if lock != nil {
			lock.Unlock()
		}
		if err == nil && !res.DryRun {
			s.w.afterCommit()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.w.openTarget(c.path)
	if err != nil {
		return nil, err
	}
	defer t.close()
	a.rec.Path = t.resolved
	if pat, ok := s.w.denied(t.resolved); ok {
		e := newError(CodeProtectedPath, c.path, "path is protected from changes by policy", "", nil)
		e.Details["pattern"] = pat
		return nil, e
	}
	if lock, err = s.w.lock(t.resolved); err != nil {
		return nil, err
	}
	obs, err := s.w.observe(t)
	if err != nil {
		return nil, err
	}
	a.rec.Observed = ledgerState(obs.state())
	a.rec.SHA256Before = obs.sum
	base, err := s.check(t, c.pre, obs, c.wholeFile)
	enc := ""
	if base != nil {
		enc = base.Encoding
		a.rec.Baseline = ledgerState(FileState{Exists: true, SHA256: base.SHA256, Size: base.Size, MtimeMS: base.MtimeMS})
	}
	if err != nil {
		return nil, err
	}
	pl, err := c.build(t, obs, enc)
	if err != nil {
		return nil, err
	}
	res = &Result{
		Path: c.path, Created: !obs.stat.Exists, Deleted: pl.remove,
		Diff:         unifiedDiff(c.path, pl.oldText, pl.newText, !obs.stat.Exists, pl.remove),
		Replacements: pl.replacements, MatchedWith: pl.matchedWith,
	}
	if !pl.remove {
		sum := pl.sum
		if sum == "" {
			sum = sha256Hex(pl.data)
		}
		res.SHA256, res.SizeBytes, res.BytesWritten = sum, int64(len(pl.data)), int64(len(pl.data))
	}
	if c.dryRun {
		res.DryRun, res.BytesWritten = true, 0
		return res, nil
	}
	if ap := s.getApprover(); ap != nil {
		// Ask without holding the lock, then check that the file is still
		// what the person approved a change to.
		lock.Unlock()
		lock = nil
		ok, err := ap.Approve(ctx, &Preview{Tool: c.tool, Path: c.path, Diff: res.Diff, Created: res.Created, Deleted: pl.remove})
		if err != nil {
			a.rec.Approval = "failed"
			return nil, newError(CodeRejected, c.path, "approval failed: "+err.Error(), "", err)
		}
		if !ok {
			a.rec.Approval = "declined"
			return nil, newError(CodeRejected, c.path, "the change was declined", "ask the user what to change instead", nil)
		}
		a.rec.Approval = "accepted"
		if lock, err = s.w.lock(t.resolved); err != nil {
			return nil, err
		}
		now, err := s.w.observe(t)
		if err != nil {
			return nil, err
		}
		if now.stat.Exists != obs.stat.Exists || now.sum != obs.sum || now.stat.Regular() != obs.stat.Regular() {
			reason := ReasonModified
			switch {
			case !now.stat.Exists:
				reason = ReasonDeleted
			case !obs.stat.Exists:
				reason = ReasonCreated
			}
			e := stale(c.path, reason, now)
			e.Message = "file changed while the change awaited approval; " + e.Message
			return nil, e
		}
	}
	// Guarantee 4: what is displaced goes to history, durably, first.
	if !s.w.unrecorded {
		v, err := s.w.hist.Save(t.resolved, obs.data, !obs.stat.Exists, obs.sum, history.Meta{Op: c.tool, Session: s.name})
		if err != nil {
			e := newError(CodeIO, c.path, "saving the current content to history failed; nothing was written: "+err.Error(), "", err)
			e.Details["step"] = "history"
			return nil, e
		}
		res.BackupVersion = v.ID
	}
	ar, err := s.w.commit(t, obs, pl)
	if err != nil {
		return nil, err
	}
	res.Strategy = ar.Strategy
	if pl.remove {
		err = s.dropBaseline(t.resolved)
	} else {
		res.MtimeMS = ar.Stat.MtimeNS / 1e6
		err = s.setBaseline(t.lexical, Baseline{
			Path: t.resolved, SHA256: res.SHA256, Size: res.SizeBytes, MtimeMS: res.MtimeMS,
			FullRead: true, CapturedAt: time.Now(), Encoding: encodingToRemember(enc, pl.encoding),
		})
	}
	return res, err
}

func encodingToRemember(remembered, used string) string {
	if remembered != "" || (used != "utf-8" && used != "") {
		return used
	}
	return ""
}

// commit replaces, creates or removes the target. The caller holds its lock
// and has verified obs.
func (w *Workspace) commit(t *target, obs *observation, pl *plan) (atomicfile.Result, error) {
	if !obs.stat.Exists {
		if t.dir == nil {
			if err := w.root.MkdirAll(path.Dir(t.resolved), 0o755); err != nil {
				if isNotDir(err) || errors.Is(err, fs.ErrExist) {
					return atomicfile.Result{}, newError(CodeNotAFile, t.path, "a parent of the path is a file, not a directory", "", err)
				}
				return atomicfile.Result{}, ioError(t.path, err)
			}
			if err := t.openDir(w); err != nil {
				return atomicfile.Result{}, err
			}
			if t.dir == nil {
				return atomicfile.Result{}, newError(CodeNotAFile, t.path, "parent is not a directory", "", nil)
			}
		}
		r, err := t.dir.Create(t.base, pl.data, atomicfile.Options{Mode: 0o644, UID: -1, GID: -1})
		if errors.Is(err, atomicfile.ErrExist) {
			now, _ := w.observe(t)
			if now == nil {
				now = &observation{}
			}
			return r, stale(t.path, ReasonCreated, now)
		}
		if err != nil {
			return r, ioError(t.path, err)
		}
		return r, nil
	}
	var (
		r   atomicfile.Result
		err error
	)
	if pl.remove {
		r, err = t.dir.Remove(t.base, obs.sum)
	} else {
		r, err = t.dir.Replace(t.base, pl.data, obs.sum, atomicfile.Options{Mode: obs.stat.Mode, UID: obs.stat.UID, GID: obs.stat.GID})
	}
	if errors.Is(err, atomicfile.ErrRaced) {
		now, _ := w.observe(t)
		if now == nil {
			now = &observation{}
		}
		reason := ReasonModified
		if !now.stat.Exists {
			reason = ReasonDeleted
		}
		e := stale(t.path, reason, now)
		e.Message = "file was changed by another program during the commit; nothing was written"
		return r, e
	}
	if err != nil {
		return r, ioError(t.path, err)
	}
	return r, nil
}

// lock takes the sidecar lock of a resolved path. Lock files live under
// .editguard/locks, named by a hash of the path, and are never deleted.
func (w *Workspace) lock(resolved string) (*filelock.Lock, error) {
	name := sha256Hex([]byte(resolved))[:32] + ".lock"
	l, err := filelock.Acquire(w.state + string(os.PathSeparator) + "locks" + string(os.PathSeparator) + name)
	if err != nil {
		return nil, newError(CodeIO, resolved, err.Error(), "", err)
	}
	return l, nil
}

// unifiedDiff returns a unified diff between two texts, labelled with p.
func unifiedDiff(p, oldText, newText string, created, deleted bool) string {
	oldName, newName := "a/"+p, "b/"+p
	if created {
		oldName = "/dev/null"
	}
	if deleted {
		newName = "/dev/null"
	}
	return udiff.Unified(oldName, oldText, newName, newText)
}
