package ledger

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileNames are file names the file system allows and JSON cannot hold
// as they are, or that a terminal would act on.
var hostileNames = []string{
	"caf\xe9.txt",
	"\xff\xfe\xfd",
	"new\nline.txt",
	"tab\t\x01\x7f.txt",
	"\x1b]52;c;aGk=\x07osc.txt",
	"-leading-dash",
	"dir/\xe9/x\xc3",
	"literal\uFFFD.txt", // valid UTF-8 that merely holds U+FFFD
	strings.Repeat("\xe9", 255),
}

func TestRecordPathsRoundTripByteForByte(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	for _, p := range hostileNames {
		r := testRecord(0)
		r.Path = p
		r.ErrorReason = "reason naming " + p
		if err := l.Append(r); err != nil {
			t.Fatalf("Append(%q): %v", p, err)
		}
	}
	mustVerify(t, lg, len(hostileNames))
	recs := readAll(t, lg)
	for i, r := range recs {
		if r.Path != hostileNames[i] {
			t.Errorf("record %d: Path = %q, want %q", r.Seq, r.Path, hostileNames[i])
		}
		if r.PathHex != "" {
			t.Errorf("record %d: PathHex %q left in memory", r.Seq, r.PathHex)
		}
		if !utf8.ValidString(r.ErrorReason) {
			t.Errorf("record %d: ErrorReason %q is not UTF-8", r.Seq, r.ErrorReason)
		}
	}
	for _, p := range hostileNames {
		var got []string
		if err := Filter(lg.dir, testName, Match{Path: p}, func(r *Record) error {
			got = append(got, r.Path)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != p {
			t.Errorf("Filter(Path: %q) = %q, want exactly that path", p, got)
		}
	}
	// The stored lines are UTF-8 text without raw control bytes.
	data, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(data) {
		t.Error("the ledger holds bytes that are not UTF-8")
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		for _, c := range line {
			if c < 0x20 {
				t.Fatalf("a stored line holds the control byte %#x: %s", c, line)
			}
		}
	}
}

// A record whose hex form is changed to name another file no longer
// verifies: the hash covers both forms.
func TestRecordPathHexIsCovered(t *testing.T) {
	lg := newTestLedger(t)
	l := openTest(t, lg, nil)
	r := testRecord(0)
	r.Path = "caf\xe9.txt"
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	l.Close()
	data, err := os.ReadFile(lg.file)
	if err != nil {
		t.Fatal(err)
	}
	was := hex.EncodeToString([]byte("caf\xe9.txt"))
	now := hex.EncodeToString([]byte("caf\xea.txt"))
	if !bytes.Contains(data, []byte(was)) {
		t.Fatalf("the record does not hold the name's hex %s: %s", was, data)
	}
	if err := os.WriteFile(lg.file, bytes.Replace(data, []byte(was), []byte(now), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(lg.dir, testName); err == nil {
		t.Fatal("Verify passed a record whose path was changed")
	}
}
