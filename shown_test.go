package editguard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// TestReadShown: ReadShown compares what a tool showed with the file's
// decoded text. The same text is a read of the file (partial when lines
// were left out or cut); other text is a read of the version shown,
// whose hash, when the whole file was shown, is that of the text in the
// file's encoding and line endings: the bytes the file held when the tool
// read it.
func TestReadShown(t *testing.T) {
	ctx := context.Background()
	w, dir := newWorkspace(t)
	s := w.NewSession("agent")
	sum := func(b string) string { h := sha256.Sum256([]byte(b)); return hex.EncodeToString(h[:]) }
	read := func(p string, shown editguard.ShownRead) *editguard.ShownResult {
		t.Helper()
		res, err := s.ReadShown(ctx, p, &shown)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// A CRLF file a person changed after the tool read it: the version
	// shown is the one read, byte for byte.
	before := "one\r\ntwo\r\n"
	writeFile(t, dir, "crlf.txt", "one\r\ntwo by a person\r\n")
	if res := read("crlf.txt", editguard.ShownRead{Text: "one\ntwo\n", TotalLines: 3}); res.Matches || !res.Full || res.SHA256 != sum(before) {
		t.Errorf("shown another version: %+v, want the read of %s", res, sum(before))
	}
	_, err := s.Edit(ctx, "crlf.txt", []editguard.Edit{{OldString: "two by a person", NewString: "2"}}, nil)
	if e := staleErr(t, err); !strings.Contains(e.Details["changes"].(string), "+two by a person") || e.Details["read_shown"] == nil {
		t.Errorf("the edit after it: %v, want STALE_FILE with the change and read_shown", e.Details)
	}

	// The same text: a read of the file, full when every line was shown.
	if res := read("crlf.txt", editguard.ShownRead{Text: "one\ntwo by a person\n"}); !res.Matches || !res.Full {
		t.Errorf("shown the file: %+v, want a full read of it", res)
	}
	if res := read("crlf.txt", editguard.ShownRead{Text: "two by a person", Offset: 2, TotalLines: 3}); !res.Matches || res.Full {
		t.Errorf("shown line 2: %+v, want a partial read of the file", res)
	}
	// A tool that said the file had another number of lines read another
	// version, though the lines it showed are the same.
	if res := read("crlf.txt", editguard.ShownRead{Text: "one", TotalLines: 5}); res.Matches {
		t.Errorf("shown line 1 of 5 lines of a file of 3: %+v, want another version", res)
	}

	// A windows-1252 file, shown by a tool that decodes UTF-8: é is U+FFFD.
	writeFile(t, dir, "latin.txt", "caf\xe9\n")
	if res := read("latin.txt", editguard.ShownRead{Text: "caf\ufffd\n", TotalLines: 2}); !res.Matches || !res.Full {
		t.Errorf("a windows-1252 file shown as UTF-8: %+v, want a full read", res)
	}

	// A line longer than the tool shows, cut with a mark: the same file,
	// read in part.
	long := strings.Repeat("x", 2500)
	writeFile(t, dir, "long.txt", "a\n"+long+"\n")
	res := read("long.txt", editguard.ShownRead{Text: "a\n" + long[:2000] + "... [truncated]\n", MaxLineChars: 2000})
	if !res.Matches || res.Full {
		t.Errorf("a cut line: %+v, want a partial read of the file", res)
	}
	if _, err := s.Write(ctx, "long.txt", "b\n", nil); err == nil {
		t.Error("a whole-file write after a read with a cut line went through")
	}
	if res := read("long.txt", editguard.ShownRead{Text: "a\n" + "y" + long[:1999] + "\n", MaxLineChars: 2000}); res.Matches {
		t.Errorf("a cut line that differs: %+v, want another version", res)
	}
}
