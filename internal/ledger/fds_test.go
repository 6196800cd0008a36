//go:build linux

package ledger

import (
	"os"
	"testing"
)

// TestDescriptors checks that a Ledger keeps its file and its lock file
// open between appends, opens nothing else that outlives an append, and
// closes everything on Close.
func TestDescriptors(t *testing.T) {
	count := func() int {
		t.Helper()
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(ents)
	}
	lg := newTestLedger(t)
	before := count()
	l, err := Open(lg.dir, testName, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := l.Append(testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	// The ledger, its lock file, and the anchor while its fdatasync runs.
	if n := count(); n > before+3 {
		t.Errorf("%d descriptors open after the appends, %d before", n, before)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != before {
		t.Errorf("%d descriptors open after Close, want %d", n, before)
	}
	mustVerify(t, lg, 20)
}
