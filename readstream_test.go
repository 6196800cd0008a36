package editguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/textcodec"
)

// chunky returns reads of random small sizes, to put rune, CRLF and
// buffer boundaries everywhere.
type chunky struct {
	r   io.Reader
	rng *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	n := 1 + c.rng.Intn(7)
	if c.rng.Intn(50) == 0 {
		n = 70000
	}
	return c.r.Read(p[:min(n, len(p))])
}

// TestStreamLinesMatchesDecode: a streamed read must equal decoding the
// whole file and selecting the same lines, or give way to the full decode.
func TestStreamLinesMatchesDecode(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	pieces := []string{"a", "é", "中文", "😀", "\n", "\r\n", "\r", " ", "x\ty", "\xff", "\x00"}
	for i := range 3000 {
		var b strings.Builder
		if rng.Intn(5) == 0 {
			b.WriteString("\xEF\xBB\xBF")
		}
		n := rng.Intn(60)
		for range n {
			p := pieces[rng.Intn(len(pieces)-2)]
			if rng.Intn(300) == 0 {
				p = pieces[len(pieces)-2+rng.Intn(2)] // rarely invalid or NUL
			}
			b.WriteString(p)
		}
		if rng.Intn(40) == 0 {
			b.WriteString(strings.Repeat("long", 20000) + "\r\n" + strings.Repeat("é", 40000))
		}
		raw := []byte(b.String())
		offset, limit := rng.Intn(8), rng.Intn(6)
		got, err := streamLines(&chunky{bytes.NewReader(raw), rng}, offset, limit, readCaps{}, 0)
		doc, derr := textcodec.Decode(raw, "")
		if err == errNotPlainText {
			if derr == nil && doc.Format.Encoding == "utf-8" && !bytes.Contains(raw, []byte{0}) {
				t.Fatalf("case %d: stream refused %q, which decodes as UTF-8", i, raw)
			}
			continue
		}
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if derr != nil {
			t.Fatalf("case %d: stream accepted %q, decode says %v", i, raw, derr)
		}
		text, total, full := selectLines(doc.Text, offset, limit)
		sum := sha256.Sum256(raw)
		if got.text != text || got.total != total || got.full != full || got.sum != hex.EncodeToString(sum[:]) ||
			got.lineEnding != doc.Format.LineEnding || got.bom != doc.Format.BOM {
			t.Fatalf("case %d (offset %d limit %d) of %q:\nstream %+v\nwant text %q total %d full %v ending %s bom %v",
				i, offset, limit, raw, got, text, total, full, doc.Format.LineEnding, doc.Format.BOM)
		}
	}
}

// selectLines, the reference the streamed read is checked against, returns lines [offset, offset+limit) of text (1-based), the
// total number of lines, and whether the whole text was returned.
func selectLines(text string, offset, limit int) (string, int, bool) {
	total := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		total++
	}
	if offset <= 1 && limit == 0 {
		return text, total, true
	}
	start := max(offset, 1) - 1
	i := 0
	for n := 0; n < start && i < len(text); n++ {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			i = len(text)
			break
		}
		i += j + 1
	}
	end := len(text)
	if limit > 0 {
		end = i
		for n := 0; n < limit && end < len(text); n++ {
			j := strings.IndexByte(text[end:], '\n')
			if j < 0 {
				end = len(text)
				break
			}
			end += j + 1
		}
	}
	return text[i:end], total, i == 0 && end == len(text)
}
