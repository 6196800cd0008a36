package editguard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/textcodec"
)

// Reads that another program's tool made, from what it showed.
//
// A hook after a client's read tool runs some time after the tool read the
// file: a person's save in between is on disk when the hook looks. What
// the model read is what the tool showed it, so ReadShown compares that
// with the file and records the read as of the version the model saw.

// ShownRead is what another program's read tool showed a model of a file:
// some of its lines, as text (decoded, without line numbers).
type ShownRead struct {
	// Text is the lines shown, joined by "\n". A line may end in "\r"
	// (a tool that splits at "\n" only); that "\r" is not compared.
	Text string
	// Offset is the 1-based number of the first line shown (0 means 1).
	Offset int
	// TotalLines is how many lines the tool said the file had, counted
	// as Text's are (a final "\n" ends an empty last line); 0 if it did
	// not say.
	TotalLines int
	// MaxLineChars is the length, in characters, past which the tool
	// cuts a line (0 if it cuts none): a longer line of the file matches
	// a shown line that starts as it does, and makes the read partial.
	MaxLineChars int
	// Partial says the tool showed less than the lines it returned
	// (it cut its output): the read is partial whatever Text covers.
	Partial bool
	// Unchanged says the tool showed no text but told the model that the
	// file is unchanged since the model's earlier read of it: the
	// session's read of the file stands as it is. A session without one
	// gets a partial read of the file as it is (what the earlier read
	// covered is not known).
	Unchanged bool
}

// ShownResult says what ReadShown recorded.
type ShownResult struct {
	Path string `json:"path"`
	// Matches says the text shown is what the file holds (in the lines
	// shown): the read is of the file on disk, whose hash is SHA256.
	Matches bool `json:"matches"`
	// Full says the read covers the whole file.
	Full bool `json:"full"`
	// SHA256 is the hash of the version the read is of: the file's when
	// the text matches; when it does not and the tool showed the whole
	// file, the hash of that text in the file's format; else "" (a
	// version only partly seen).
	SHA256 string `json:"sha256,omitempty"`
}

// ReadShown records, as the session's read of p, the read another
// program's tool made of it, which showed the model shown. When the text
// shown is what the file holds (in the lines shown, compared as decoded
// text), the read is of the file as it is, as Read would record it: full
// if it covered every line and cut none, else partial. When it is not, the
// file changed between the tool's read and this call, and the read is of
// the version the model saw: its hash, when the tool showed the whole file
// (the text in the file's encoding and line endings, kept so that a later
// STALE_FILE shows the change), else one no file has; either way a later
// change of p is refused as STALE_FILE, whose details say that the read
// showed another version than the file held after it. A file gone since
// the tool read it is recorded the same way (a change is then told it was
// deleted).
func (s *Session) ReadShown(ctx context.Context, p string, shown *ShownRead) (*ShownResult, error) {
	if shown == nil || shown.Offset < 0 {
		return nil, newError(CodeInvalidArgument, p, "no text shown, or a negative offset", "", nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := s.w.openTarget(p)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	obs, err := s.w.observe(t)
	if err != nil {
		return nil, err
	}
	if obs.Stat.Exists && !obs.Stat.Regular() {
		return nil, notAFile(p, obs)
	}
	if shown.Unchanged && obs.Stat.Exists {
		if b, ok := s.baseline(t.Resolved); ok {
			return &ShownResult{Path: p, Matches: b.SHA256 == obs.Sum, Full: b.FullRead, SHA256: b.SHA256}, nil
		}
		err := s.setBaseline(t.Lexical, baseline{Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(), CapturedAt: time.Now()})
		if err != nil {
			return nil, err
		}
		s.rememberFrozen(obs.Sum, obs.Data, true)
		return &ShownResult{Path: p, Matches: true, SHA256: obs.Sum}, nil
	}
	shownLines := strings.Split(shown.Text, "\n")
	for i, l := range shownLines {
		shownLines[i] = strings.TrimSuffix(l, "\r")
	}
	start := max(shown.Offset, 1) - 1
	// The whole file as far as the tool says: from its first line, every
	// line it had, none cut.
	whole := start == 0 && !shown.Partial && (shown.TotalLines == 0 || shown.TotalLines == len(shownLines))

	var doc *textcodec.Doc
	enc := ""
	if obs.Stat.Exists {
		if b, ok := s.baseline(t.Resolved); ok && b.SHA256 == obs.Sum {
			enc = b.Encoding
		}
		// A file that does not decode (in the encoding a read found, or
		// at all) is compared only as a tool that decodes UTF-8 shows it.
		text := ""
		doc, err = decode(p, obs.Data, enc)
		switch {
		case err == nil:
			text = doc.Text
		case errors.Is(err, ErrBinaryFile):
			return nil, err // not text: no read to record
		}
		cut, lines, ok := matchShown(text, err == nil, obs.Data, shownLines, start, shown)
		if ok {
			full := whole && !cut && len(shownLines) == lines
			err := s.setBaseline(t.Lexical, baseline{
				Path: t.Resolved, SHA256: obs.Sum, Size: obs.Stat.Size, MtimeMS: obs.MtimeMS(),
				FullRead: full, CapturedAt: time.Now(), Encoding: enc,
			})
			if err != nil {
				return nil, err
			}
			s.rememberFrozen(obs.Sum, obs.Data, true) // an observation is never written to
			return &ShownResult{Path: p, Matches: true, Full: full, SHA256: obs.Sum}, nil
		}
	}
	// Another version than the file holds now.
	text := strings.Join(shownLines, "\n")
	res := &ShownResult{Path: p}
	b := baseline{Path: t.Resolved, CapturedAt: time.Now(), Encoding: enc, Shown: true}
	var data []byte
	if whole {
		data = []byte(text)
		if doc != nil {
			if enc, err := doc.Encode(text, ""); err == nil {
				data = enc
			}
		}
		b.SHA256, b.Size, b.FullRead = sha256Hex(data), int64(len(data)), true
		res.SHA256, res.Full = b.SHA256, true
	} else {
		// A version seen only in part: a hash no content has, which
		// only this read's baseline holds.
		b.SHA256 = sha256Hex([]byte(fmt.Sprintf("editguard: a version of %s seen in part, read %s", t.Resolved, b.CapturedAt.Format(time.RFC3339Nano))))
	}
	if err := s.setBaseline(t.Lexical, b); err != nil {
		return nil, err
	}
	if data != nil {
		s.remember(b.SHA256, data)
	}
	return res, nil
}

// matchShown reports whether shown, the lines a tool showed from line
// start (0-based), are those of the file: of text, its decoded text (if
// decoded), or, for a file that is not valid UTF-8, of data (its bytes)
// as a tool that decodes UTF-8 shows them, each byte that is not as
// U+FFFD. lines is how many lines the matching text has; cut reports a
// line of it longer than shown.MaxLineChars among those shown.
func matchShown(text string, decoded bool, data []byte, shown []string, start int, o *ShownRead) (cut bool, lines int, ok bool) {
	if decoded {
		fl := strings.Split(text, "\n")
		if cut, ok = matchLines(fl, shown, start, o); ok {
			return cut, len(fl), true
		}
	}
	if !utf8.Valid(data) {
		fl := strings.Split(lossyUTF8(data), "\n")
		if cut, ok = matchLines(fl, shown, start, o); ok {
			return cut, len(fl), true
		}
	}
	return false, 0, false
}

// matchLines is matchShown over the file's lines.
func matchLines(lines, shown []string, start int, o *ShownRead) (cut, ok bool) {
	if start+len(shown) > len(lines) || o.TotalLines > 0 && o.TotalLines != len(lines) {
		return false, false
	}
	for i, s := range shown {
		l := lines[start+i]
		if s == l {
			continue
		}
		if o.MaxLineChars <= 0 || utf8.RuneCountInString(l) <= o.MaxLineChars {
			return false, false
		}
		// A line the tool cut: what it showed starts as the line does,
		// perhaps with a mark of the cut after.
		if !strings.HasPrefix(l, s) && !strings.HasPrefix(s, prefixRunes(l, o.MaxLineChars)) {
			return false, false
		}
		cut = true
	}
	for _, l := range lines[start : start+len(shown)] {
		if o.MaxLineChars > 0 && utf8.RuneCountInString(l) > o.MaxLineChars {
			cut = true
		}
	}
	return cut, true
}

// lossyUTF8 is data as a tool that decodes it as UTF-8 shows it: a byte
// order mark dropped, each byte that is not UTF-8 a U+FFFD, CRLF as LF.
func lossyUTF8(data []byte) string {
	var b strings.Builder
	b.Grow(len(data))
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		data = data[3:]
	}
	for len(data) > 0 {
		r, n := utf8.DecodeRune(data)
		if r == '\r' && len(data) > 1 && data[1] == '\n' {
			data = data[1:]
			continue
		}
		b.WriteRune(r) // utf8.RuneError for a byte that is not UTF-8
		data = data[n:]
	}
	return b.String()
}

// prefixRunes returns s's first n characters.
func prefixRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
