package editguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/textcodec"
)

// ReadOptions select part of a file and its encoding.
type ReadOptions struct {
	// Offset is the 1-based number of the first line returned (0 means 1).
	Offset int
	// Limit is the most lines returned (0 means all).
	Limit int
	// Encoding names a legacy encoding (htmlindex names: gbk, shift_jis,
	// windows-1252, ...). Empty means UTF-8 or UTF-16 with a BOM.
	Encoding string
	// MaxBytes caps the text returned: no line starts once that much is
	// returned, and NextOffset says where to go on. MaxLineBytes caps one
	// line: a longer line is cut, with a marker that says how long it is.
	// Both default to the workspace's MaxFileSize. Whatever the other
	// arguments, a read holds no more than these and a buffer, for a file
	// of any size. Tools that answer a model pass far smaller caps.
	MaxBytes, MaxLineBytes int
	// LineCost is counted toward MaxBytes for every line returned, in
	// addition to its bytes: the width of what a tool adds to each line
	// (a line-number prefix), so that the rendered read keeps within
	// MaxBytes.
	LineCost int
}

// ReadResult is a file's text as the agent sees it: UTF-8, LF line endings.
// SHA256, SizeBytes and MtimeMS describe the whole file on disk, even when
// only some lines are returned.
type ReadResult struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	SHA256     string `json:"sha256"`
	SizeBytes  int64  `json:"size_bytes"`
	MtimeMS    int64  `json:"mtime_ms"`
	TotalLines int    `json:"total_lines"`
	Encoding   string `json:"encoding"`
	LineEnding string `json:"line_ending"`
	Truncated  bool   `json:"truncated"`
	Offset     int    `json:"offset,omitempty"` // first line returned, 1-based, when offset/limit were given
	// NextOffset is the line to read next (as offset) when MaxBytes ended
	// the read before the lines asked for did.
	NextOffset int `json:"next_offset,omitempty"`
	// LinesCut reports that a line longer than MaxLineBytes was cut.
	LinesCut bool `json:"lines_cut,omitempty"`
	BOM      bool `json:"bom"` // the file starts with a byte order mark
	// SHA256Pending says that the page was served before the file was
	// hashed (a cold read of a large file): SHA256 is empty, the hash is
	// being computed, and a change that relies on this read waits for it
	// (see readpending.go).
	SHA256Pending bool `json:"sha256_pending,omitempty"`
}

// Read is like os.ReadFile, but decodes the text and records what was read
// as the session's baseline for the path (the latest read wins). A read with
// offset/limit that does not cover the whole file records a partial
// baseline, which edits accept and whole-file writes do not.
func (s *Session) Read(ctx context.Context, p string, opts *ReadOptions) (*ReadResult, error) {
	var o ReadOptions
	if opts != nil {
		o = *opts
	}
	if o.Offset < 0 || o.Limit < 0 {
		return nil, newError(CodeInvalidArgument, p, "offset and limit must not be negative", "", nil)
	}
	t, err := s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	capRead(&o, s.w.opts.MaxFileSize)
	// Plain UTF-8 is streamed: any size, bounded memory. Anything else is
	// decoded whole, up to MaxFileSize.
	if isUTF8Name(o.Encoding) {
		if b, ok := s.baselineNow(t.Resolved); !ok || b.Encoding == "" {
			res, err := s.readPart(ctx, t, p, &o)
			if err != errNotPlainText {
				return res, err
			}
		}
	}
	return s.readDecoded(t, p, &o)
}

// capRead sets o's caps to what a read holds at most: MaxBytes no more
// than maxFileSize (the default), MaxLineBytes no more than MaxBytes.
func capRead(o *ReadOptions, maxFileSize int64) {
	if o.MaxBytes <= 0 || int64(o.MaxBytes) > maxFileSize {
		o.MaxBytes = int(maxFileSize)
	}
	if o.MaxLineBytes <= 0 || o.MaxLineBytes > o.MaxBytes {
		o.MaxLineBytes = o.MaxBytes
	}
}

// readDecoded serves a read that is not streamed (a legacy encoding named
// by o or by the path's baseline, or a file that is not plain UTF-8) by
// the full decode, up to MaxFileSize, which handles and reports every
// encoding. Unless o names one, the encoding is the baseline's if the file
// is unchanged since it. It records the read as the path's baseline.
func (s *Session) readDecoded(t *target, p string, o *ReadOptions) (*ReadResult, error) {
	obs, err := s.w.observe(t)
	if err != nil {
		return nil, err
	}
	if !obs.Stat.Exists {
		return nil, newError(CodeNotFound, p, "file does not exist", "check the path with list_directory", nil)
	}
	if !obs.Stat.Regular() {
		return nil, notAFile(p, obs)
	}
	enc := o.Encoding
	if enc == "" {
		if b, ok := s.baseline(t.Resolved); ok && b.SHA256 == obs.Sum {
			enc = b.Encoding
		}
	}
	doc, err := decode(p, obs.Data, enc)
	if err != nil {
		return nil, err
	}
	// The decoded text is UTF-8 with LF: the same selection and caps apply.
	sel, err := streamLines(strings.NewReader(doc.Text), o.Offset, o.Limit, readCaps{bytes: o.MaxBytes, line: o.MaxLineBytes, perLine: o.LineCost}, int64(len(doc.Text)))
	if err != nil {
		return nil, ioError(p, err)
	}
	if err := pastEnd(p, o.Offset, sel.total); err != nil {
		return nil, err
	}
	res := decodedResult(p, obs, doc, sel, o)
	from, to, total := sel.extent(o.Offset)
	err = s.setBaseline(t.Lexical, baseline{
		Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(),
		FullRead: sel.full, CapturedAt: time.Now(), Encoding: explicitEncoding(o.Encoding, doc),
		FromLine: from, ToLine: to, TotalLines: total,
	})
	if err == nil {
		s.rememberFrozen(obs.Sum, obs.Data, true) // an observation is never written to
	}
	return res, err
}

// decodedResult is the answer to a read of the file observed as obs and
// decoded as doc, of which sel are the lines o asked for: the text is
// sel's, the hash, size and mtime are the whole file's, and the encoding,
// line ending and BOM are those the decode found.
func decodedResult(p string, obs *observation, doc *textcodec.Doc, sel *streamed, o *ReadOptions) *ReadResult {
	res := &ReadResult{
		Path:       p,
		Content:    sel.text,
		SHA256:     obs.Sum,
		SizeBytes:  obs.Stat.Size,
		MtimeMS:    obs.MtimeMS(),
		TotalLines: sel.total,
		Encoding:   doc.Format.Encoding,
		LineEnding: doc.Format.LineEnding,
		Truncated:  !sel.full,
		NextOffset: sel.next,
		LinesCut:   sel.cut,
		BOM:        doc.Format.BOM,
	}
	if o.Offset > 0 || o.Limit > 0 {
		res.Offset = max(o.Offset, 1)
	}
	return res
}

// readPart serves a read of some lines by streaming the file (see
// streamLines): the whole file is hashed, only the lines asked for are
// kept, and files of any size can be read this way. A file unchanged
// since such a pass is read only from near its lines to their end (see
// readcache.go). It returns errNotPlainText when the file needs the full
// decode.
func (s *Session) readPart(ctx context.Context, t *target, p string, o *ReadOptions) (*ReadResult, error) {
	if t.Dir == nil {
		return nil, newError(CodeNotFound, p, "file does not exist", "check the path with list_directory", nil)
	}
	start := s.w.reads.clock()
	f, st, err := t.Dir.Open(t.Base)
	if err != nil {
		return nil, ioError(p, err)
	}
	if f == nil {
		obs := &observation{Stat: st}
		if !st.Exists {
			return nil, newError(CodeNotFound, p, "file does not exist", "check the path with list_directory", nil)
		}
		return nil, notAFile(p, obs)
	}
	defer f.Close()
	sr, mtimeNS, kept, err := s.streamFile(ctx, f, st, start, o)
	if kept != nil {
		defer keptBuffers.Put(kept)
	}
	if err == errNotPlainText {
		return nil, err
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // stopped by ctxReader
	}
	if err != nil {
		return nil, ioError(p, err)
	}
	if err := pastEnd(p, o.Offset, sr.total); err != nil {
		return nil, err
	}
	res := &ReadResult{
		Path: p, Content: sr.text, SHA256: sr.sum, SizeBytes: sr.size, MtimeMS: mtimeNS / 1e6,
		TotalLines: sr.total, Encoding: "utf-8", LineEnding: sr.lineEnding, Truncated: !sr.full,
		NextOffset: sr.next, LinesCut: sr.cut, BOM: sr.bom, SHA256Pending: sr.pending != nil,
	}
	if o.Offset > 0 || o.Limit > 0 {
		res.Offset = max(o.Offset, 1)
	}
	from, to, total := sr.extent(o.Offset)
	err = s.setBaseline(t.Lexical, baseline{
		Path: t.Resolved, SHA256: sr.sum, Size: sr.size, MtimeMS: res.MtimeMS,
		FullRead: sr.full, CapturedAt: time.Now(), FromLine: from, ToLine: to, TotalLines: total,
		pending: sr.pending,
	})
	if err == nil && kept != nil && !kept.over {
		s.remember(sr.sum, kept.buf.Bytes())
	}
	return res, err
}

// errNotCached stands for the stat streamFile does not take of a file the
// read cache does not keep.
var errNotCached = errors.New("not kept by the read cache")

// streamFile selects the lines o asks for from f, open for reading, whose
// stat at open was st: from what the read cache learned of the file if
// it can (readCached), else, for a large file, from a scan of its
// newlines with the hash left to a pass beside the reply (readPending),
// else by a full pass (streamIndexed), which the
// cache then learns from if the file's stat did not move during it and
// the pass started at start (ns) is not racy. It returns the file's mtime
// after the read and, for a file of at most seenFileMax bytes read in
// full, the bytes read, which the caller puts back in keptBuffers.
func (s *Session) streamFile(ctx context.Context, f *os.File, st atomicfile.Stat, start int64, o *ReadOptions) (sr *streamed, mtimeNS int64, kept *cappedBuffer, err error) {
	caps := readCaps{bytes: o.MaxBytes, line: o.MaxLineBytes, perLine: o.LineCost}
	// A file the cache does not keep (too small at open) costs no stat of
	// its own before the read.
	var (
		before  fileStat
		statErr = errNotCached
	)
	if s.w.reads.wants(fileStat{size: st.Size}) {
		before, statErr = statOf(f)
	}
	if statErr == nil {
		if sr, err := s.readCached(ctx, f, before, o, caps); sr != nil || err != nil {
			return sr, before.mtimeNS, nil, err // before is also the stat after the read
		}
		sr, p, err := s.readPending(ctx, f, before, start, o, caps)
		if sr != nil {
			sr.pending = p
			return sr, before.mtimeNS, nil, nil // before is also the stat after the read
		}
		if err != nil {
			return nil, 0, nil, err
		}
	}
	// A file small enough is kept whole as it streams by, for the session
	// to show what changed since this read (see remember). A read of a
	// file of many GiB takes seconds: it stops when ctx is done.
	var r io.Reader = ctxReader{ctx, f}
	if st.Size <= seenFileMax {
		kept = keptBuffers.Get().(*cappedBuffer)
		kept.reset(seenFileMax)
		kept.buf.Grow(int(st.Size))
		r = io.TeeReader(r, kept)
	}
	var ix *lineIndex
	if statErr == nil && s.w.reads.wants(before) {
		ix = &lineIndex{}
	}
	sr, err = streamIndexed(r, o.Offset, o.Limit, caps, st.Size, ix)
	if err != nil {
		return nil, 0, kept, err
	}
	// Size and hash describe the bytes read; the mtime is taken after
	// them, so a rewrite during the read shows as a newer mtime, never as
	// a size that disagrees with the content.
	mtimeNS = st.MtimeNS
	if after, err := statOf(f); err == nil {
		mtimeNS = after.mtimeNS
		if ix != nil && after == before && sr.size == before.size {
			s.w.reads.put(start, &readEntry{stat: before, sum: sr.sum, total: sr.total,
				lineEnding: sr.lineEnding, bom: sr.bom, points: ix.points})
		}
	}
	return sr, mtimeNS, kept, nil
}

// pastEnd refuses an offset after the last line (offset 1 of an empty file
// is the whole of it), so that a read past the end is never mistaken for
// an empty one. Nothing is recorded as read.
func pastEnd(p string, offset, total int) error {
	if offset <= 1 || offset <= total {
		return nil
	}
	e := newError(CodeInvalidArgument, p, fmt.Sprintf("offset %d is past the end of the file, which has %d lines", offset, total),
		fmt.Sprintf("read from an offset between 1 and %d", max(total, 1)), nil)
	e.Details["total_lines"] = total
	return e
}

func isUTF8Name(enc string) bool {
	return enc == "" || strings.EqualFold(enc, "utf-8") || strings.EqualFold(enc, "utf8")
}

// explicitEncoding is the encoding to remember for later edits: only one the
// caller had to name, since BOM-marked and UTF-8 files are detected anyway.
func explicitEncoding(asked string, doc *textcodec.Doc) string {
	if asked == "" {
		return ""
	}
	return doc.Format.Encoding
}

// decode turns file bytes into text, mapping codec failures to §5 errors.
//
// data is an observation's bytes, which nothing changes once read: the
// document's text may share them.
func decode(p string, data []byte, enc string) (*textcodec.Doc, error) {
	doc, err := textcodec.DecodeOwned(data, enc)
	if err == nil {
		return doc, nil
	}
	return nil, codecError(p, err)
}

// ctxReader reads from r until ctx is done, then fails with ctx's error.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
