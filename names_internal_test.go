package editguard

import (
	"strings"
	"testing"
)

// TestPortableNameRules checks the rules on single names, the length rule
// included (resolve refuses such names before any change reaches them).
func TestPortableNameRules(t *testing.T) {
	long := strings.Repeat("é", 128) + ".txt" // 260 bytes
	for _, tc := range []struct {
		name string
		bad  bool
	}{
		{"ok.txt", false}, {"CONSOLE", false}, {"COM10", false}, {"con", true}, {"Com3.c", true},
		{"con .txt", true}, {"x\x00y", true}, {long, true}, {strings.Repeat("a", 255), false},
	} {
		why := nameReasons(tc.name)
		if (len(why) > 0) != tc.bad {
			t.Errorf("nameReasons(%q) = %q, want bad %v", tc.name, why, tc.bad)
		}
		if p := portableName(tc.name); len(nameReasons(p)) != 0 || (!tc.bad && p != tc.name) {
			t.Errorf("portableName(%q) = %q, reasons %q", tc.name, p, nameReasons(p))
		}
	}
	if p := portableName(long); len(p) > maxNameBytes || !strings.HasPrefix(long, p) {
		t.Errorf("portableName of a long name = %q (%d bytes)", p, len(p))
	}
}
