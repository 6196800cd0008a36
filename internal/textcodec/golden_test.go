package textcodec

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/textedit"
	"github.com/rogpeppe/go-internal/txtar"
)

// TestGolden runs the cases in testdata/golden. Each archive holds:
//
//	in       the file's bytes (in.q: Go-quoted strings, one or more lines,
//	         concatenated; in.hex: hex digits, spaces ignored)
//	encoding optional encoding argument to Decode
//	edit     optional JSON edits applied with textedit.Apply, or
//	new      the new text (new.q quoted), or neither: an unchanged round trip
//	eol      optional lineEnding argument to Encode
//	format   optional "encoding bom line_ending" that Decode must report
//	want     the expected bytes (want.q, want.hex), or
//	error    the expected failure: "binary", "unknown-encoding",
//	         "encoding offset=N likely=a,b" (fields optional),
//	         "encode rune=X" for an Encode failure
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			runGolden(t, ar)
		})
	}
}

func runGolden(t *testing.T, ar *txtar.Archive) {
	in, ok := archiveBytes(t, ar, "in")
	if !ok {
		t.Fatal("no in file")
	}
	encoding, _ := archiveText(ar, "encoding")
	wantErr, hasErr := archiveText(ar, "error")
	d, err := Decode(in, encoding)
	if hasErr && !strings.HasPrefix(wantErr, "encode") {
		checkDecodeError(t, err, wantErr)
		return
	}
	if err != nil {
		t.Fatalf("Decode() error = %v", err)
	}
	if f, ok := archiveText(ar, "format"); ok {
		got := d.Format.Encoding + " " + strconv.FormatBool(d.Format.BOM) + " " + d.Format.LineEnding
		if got != f {
			t.Errorf("Decode() format = %q, want %q", got, f)
		}
	}
	text := d.Text
	if e, ok := archiveText(ar, "edit"); ok {
		var edits []struct {
			Old        string `json:"old_string"`
			New        string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if err := json.Unmarshal([]byte(e), &edits); err != nil {
			t.Fatalf("bad edit: %v", err)
		}
		var es []textedit.Edit
		for _, e := range edits {
			es = append(es, textedit.Edit{Old: e.Old, New: e.New, ReplaceAll: e.ReplaceAll})
		}
		res, err := textedit.Apply(text, es)
		if err != nil {
			t.Fatalf("Apply() error = %v", err)
		}
		text = res.Text
	} else if n, ok := archiveBytes(t, ar, "new"); ok {
		text = string(n)
	}
	eol, _ := archiveText(ar, "eol")
	got, err := d.Encode(text, eol)
	if hasErr {
		var ee *EncodingError
		if !errors.As(err, &ee) {
			t.Fatalf("Encode() error = %v, want *EncodingError", err)
		}
		if r, ok := strings.CutPrefix(wantErr, "encode rune="); ok && string(ee.Rune) != r {
			t.Errorf("EncodingError.Rune = %q, want %q", ee.Rune, r)
		}
		return
	}
	if err != nil {
		t.Fatalf("Encode() error = %v", err)
	}
	want, ok := archiveBytes(t, ar, "want")
	if !ok {
		want = in
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Encode() =\n%q\nwant\n%q", got, want)
	}
}

func checkDecodeError(t *testing.T, err error, want string) {
	t.Helper()
	fields := strings.Fields(want)
	switch fields[0] {
	case "binary":
		if !errors.Is(err, ErrBinary) {
			t.Fatalf("Decode() error = %v, want ErrBinary", err)
		}
	case "unknown-encoding":
		var ue *UnknownEncodingError
		if !errors.As(err, &ue) {
			t.Fatalf("Decode() error = %v, want *UnknownEncodingError", err)
		}
	case "encoding":
		var ee *EncodingError
		if !errors.As(err, &ee) {
			t.Fatalf("Decode() error = %v, want *EncodingError", err)
		}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "offset":
				if got := strconv.Itoa(ee.Offset); got != v {
					t.Errorf("EncodingError.Offset = %s, want %s", got, v)
				}
			case "likely":
				if got := strings.Join(ee.Likely, ","); got != v {
					t.Errorf("EncodingError.Likely = %s, want %s", got, v)
				}
			case "likely0":
				if len(ee.Likely) == 0 || ee.Likely[0] != v {
					t.Errorf("EncodingError.Likely = %v, want first %s", ee.Likely, v)
				}
			default:
				t.Fatalf("bad error field %q", f)
			}
		}
	default:
		t.Fatalf("bad error spec %q", want)
	}
}

// archiveText returns the trimmed content of the named file.
func archiveText(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return strings.TrimSpace(string(f.Data)), true
		}
	}
	return "", false
}

// archiveBytes returns the bytes of name, name.q or name.hex.
func archiveBytes(t *testing.T, ar *txtar.Archive, name string) ([]byte, bool) {
	t.Helper()
	for _, f := range ar.Files {
		switch f.Name {
		case name:
			return f.Data, true
		case name + ".q":
			var b []byte
			for _, line := range strings.Split(string(f.Data), "\n") {
				if line = strings.TrimSpace(line); line == "" {
					continue
				}
				s, err := strconv.Unquote(line)
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				b = append(b, s...)
			}
			return b, true
		case name + ".hex":
			b, err := hex.DecodeString(strings.Join(strings.Fields(string(f.Data)), ""))
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			return b, true
		}
	}
	return nil, false
}
