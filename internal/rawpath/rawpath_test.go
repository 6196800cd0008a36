package rawpath

import (
	"encoding/json"
	"testing"
)

func TestSplitJoinRoundTrip(t *testing.T) {
	names := []string{
		"a.txt", "café.txt", "caf\xe9.txt", "\xff\xfe", "new\nline", "tab\there",
		"\x1b]52;c;aGk=\x07", "-leading-dash", "\xe9\xe9\xe9", "ok\uFFFDliteral", "",
		"x\xc3", // a truncated sequence
	}
	for _, p := range names {
		d, h := Split(p)
		// The readable form survives JSON unchanged.
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Fatalf("%q: readable form %q does not survive JSON: %q, %v", p, d, back, err)
		}
		got, err := Join(back, h)
		if err != nil || got != p {
			t.Fatalf("Join(Split(%q)) = %q, %v", p, got, err)
		}
	}
}

func TestJoinRefusesDisagreement(t *testing.T) {
	for _, c := range []struct{ display, hex string }{
		{"caf\uFFFD.txt", "zz"},               // not hex
		{"a.txt", "612e747874"},               // valid UTF-8: Split never writes it
		{"caf\uFFFD.txt", "6361666a2e747874"}, // decodes to cafj.txt
		{"other\uFFFD", "636166e92e747874"},   // caf\xe9.txt under another display
	} {
		if p, err := Join(c.display, c.hex); err == nil {
			t.Errorf("Join(%q, %q) = %q, want an error", c.display, c.hex, p)
		}
	}
}
