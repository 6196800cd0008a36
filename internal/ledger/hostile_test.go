package ledger

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/editguard/editguard/internal/statedir"
)

// TestHostileStateEntries plants what a repository could ship in its
// .editguard/ and checks that no ledger operation follows it: each fails
// with a *statedir.UnsafeError and nothing outside changes or appears.
func TestHostileStateEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entry   string // the entry planted in the state directory
		outside []byte // the symlink's target's content; nil: the target does not exist
	}{
		{"ledger to a file without final newline", testName, []byte("precious\nno newline")},
		{"ledger to an empty file", testName, []byte{}},
		{"ledger dangling", testName, nil},
		{"lock dangling", testName + ".lock", nil},
		{"lock to a file", testName + ".lock", []byte("x")},
		{"anchor to a file", testName + headSuffix, []byte("precious")},
		{"anchor dangling", testName + headSuffix, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lg := newTestLedger(t)
			if tc.entry != testName {
				// A ledger that is there already, with records.
				writeLedger(t, lg, 2)
				os.Remove(lg.in(tc.entry))
			}
			target := filepath.Join(t.TempDir(), "outside")
			if tc.outside != nil {
				if err := os.WriteFile(target, tc.outside, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(target, lg.in(tc.entry)); err != nil {
				t.Fatal(err)
			}
			unsafe := func(op string, err error) {
				t.Helper()
				var ue *statedir.UnsafeError
				if !errors.Is(err, statedir.ErrUnsafe) || !errors.As(err, &ue) || ue.Kind != "symlink" {
					t.Errorf("%s error = %v, want a *statedir.UnsafeError for the symlink", op, err)
				}
			}
			l, err := Open(lg.dir, testName, nil)
			if tc.entry == testName+headSuffix {
				// Open does not touch the anchor; the first commit does.
				if err != nil {
					t.Fatalf("Open() error: %v", err)
				}
				unsafe("Append", l.Append(testRecord(1)))
				l.Close()
			} else {
				unsafe("Open", err)
				if err == nil {
					l.Close()
				}
			}
			_, err = Verify(lg.dir, testName)
			unsafe("Verify", err)
			got, err := os.ReadFile(target)
			switch {
			case tc.outside == nil && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("the symlink's target was created: %q, %v", got, err)
			case tc.outside != nil && !bytes.Equal(got, tc.outside):
				t.Errorf("the symlink's target is %q, %v; want it unchanged, %q", got, err, tc.outside)
			}
			if _, err := os.Lstat(lg.in("quarantine")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a quarantine was made for bytes outside: %v", err)
			}
		})
	}
}

// TestVerifyCreatesNothing checks that Verify on a state directory without
// a ledger, or with a ledger but no lock file, creates no file.
func TestVerifyCreatesNothing(t *testing.T) {
	lg := newTestLedger(t)
	if n, err := Verify(lg.dir, testName); err != nil || n != 0 {
		t.Errorf("Verify() without a ledger = %d, %v; want 0, nil", n, err)
	}
	lines := writeLedger(t, lg, 2)
	os.Remove(lg.in(testName + ".lock"))
	if err := os.WriteFile(lg.file, append(bytes.Join(lines, nil), "torn"...), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(filepath.Dir(lg.file))
	var ve *VerifyError
	if _, err := Verify(lg.dir, testName); !errors.As(err, &ve) || ve.Reason != ReasonTornTail {
		t.Errorf("Verify() = %v, want %q", err, ReasonTornTail)
	}
	after, _ := os.ReadDir(filepath.Dir(lg.file))
	if len(after) != len(before) {
		t.Errorf("Verify changed the state directory from %v to %v", before, after)
	}
}
